package local

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"strconv"

	"golang.org/x/sys/unix"
)

// holdTarget opens target, the file a write will replace, without
// following a symlink and without reading it (O_PATH), so that the
// attributes the new file gets are that file's, whatever another user
// renames into its place meanwhile. The error wraps fs.ErrNotExist when
// there is no such file.
func holdTarget(target string) (*os.File, fs.FileInfo, error) {
	fd, err := unix.Open(target, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, nil, &fs.PathError{Op: "open", Path: target, Err: err}
	}
	held := os.NewFile(uintptr(fd), target)
	fi, err := held.Stat()
	if err != nil {
		held.Close()
		return nil, nil, err
	}
	return held, fi, nil
}

// copyXattrs gives f the extended attributes of held (see holdTarget),
// its POSIX ACL (system.posix_acl_access) among them; an ACL f inherited
// from its directory's default ACL goes when held has none. One that
// cannot be set is an error (the write is refused rather than drop it),
// except an SELinux label: the new file keeps the one the policy gave it.
// A file system without extended attributes has none to copy.
func copyXattrs(f, held *os.File) error {
	// An O_PATH descriptor has no xattr calls of its own; its /proc link
	// leads to the very file.
	source := "/proc/self/fd/" + strconv.Itoa(int(held.Fd()))
	if _, err := os.Lstat(source); err != nil {
		return fmt.Errorf("cannot read the extended attributes of %s without /proc: %w", held.Name(), err)
	}
	names, err := xattrNames(source)
	if errors.Is(err, unix.ENOTSUP) || errors.Is(err, unix.ENOSYS) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("cannot list the extended attributes of %s: %w", held.Name(), err)
	}
	if !slices.Contains(names, "system.posix_acl_access") {
		err := unix.Fremovexattr(int(f.Fd()), "system.posix_acl_access")
		if err != nil && !errors.Is(err, unix.ENODATA) && !errors.Is(err, unix.ENOTSUP) {
			return fmt.Errorf("cannot remove the ACL the new file inherited: %w", err)
		}
	}
	target := held.Name()
	for _, name := range names {
		value, err := xattr(source, name)
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

// xattrNames lists the extended attributes of name (following the /proc
// link, not a symlink at its end: see holdTarget).
func xattrNames(name string) ([]string, error) {
	for {
		size, err := unix.Listxattr(name, nil)
		if err != nil || size == 0 {
			return nil, err
		}
		buf := make([]byte, size)
		n, err := unix.Listxattr(name, buf)
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

// xattr reads one extended attribute of name (as xattrNames).
func xattr(name, attr string) ([]byte, error) {
	for {
		size, err := unix.Getxattr(name, attr, nil)
		if err != nil {
			return nil, err
		}
		buf := make([]byte, size)
		n, err := unix.Getxattr(name, attr, buf)
		if errors.Is(err, unix.ERANGE) {
			continue
		}
		if err != nil {
			return nil, err
		}
		return buf[:n], nil
	}
}
