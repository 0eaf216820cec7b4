package local

import (
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// copyXattrs gives f the extended attributes of target, its POSIX ACL
// (system.posix_acl_access) among them. One that cannot be set is an
// error (the write is refused rather than drop it), except an SELinux
// label: the new file keeps the one the policy gave it. A file system
// without extended attributes has none to copy.
func copyXattrs(f *os.File, target string) error {
	names, err := xattrNames(target)
	if errors.Is(err, unix.ENOTSUP) || errors.Is(err, unix.ENOSYS) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("cannot list the extended attributes of %s: %w", target, err)
	}
	for _, name := range names {
		value, err := xattr(target, name)
		if errors.Is(err, unix.ENODATA) {
			continue // removed meanwhile
		}
		if err != nil {
			return fmt.Errorf("cannot read the extended attribute %s of %s: %w", name, target, err)
		}
		if err := unix.Fsetxattr(int(f.Fd()), name, value, 0); err != nil && name != "security.selinux" {
			return fmt.Errorf("cannot keep the extended attribute %s of %s: %w", name, target, err)
		}
	}
	return nil
}

// xattrNames lists the extended attributes of name (not following a
// symlink).
func xattrNames(name string) ([]string, error) {
	for {
		size, err := unix.Llistxattr(name, nil)
		if err != nil || size == 0 {
			return nil, err
		}
		buf := make([]byte, size)
		n, err := unix.Llistxattr(name, buf)
		if errors.Is(err, unix.ERANGE) {
			continue // grew meanwhile
		}
		if err != nil {
			return nil, err
		}
		var names []string
		for start, i := 0, 0; i < n; i++ {
			if buf[i] == 0 {
				if i > start {
					names = append(names, string(buf[start:i]))
				}
				start = i + 1
			}
		}
		return names, nil
	}
}

// xattr reads one extended attribute of name (not following a symlink).
func xattr(name, attr string) ([]byte, error) {
	for {
		size, err := unix.Lgetxattr(name, attr, nil)
		if err != nil {
			return nil, err
		}
		buf := make([]byte, size)
		n, err := unix.Lgetxattr(name, attr, buf)
		if errors.Is(err, unix.ERANGE) {
			continue
		}
		if err != nil {
			return nil, err
		}
		return buf[:n], nil
	}
}
