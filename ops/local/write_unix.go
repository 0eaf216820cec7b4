//go:build unix

package local

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/pi-remote/pi-remote/internal/randhex"
)

// tempFile is a write's temporary file: f, named name, in a private
// directory of the same name next to the target, held open as dir. Every
// step acts on f or on names relative to dir, a directory of ours with
// mode 0700 in which nobody else may add, remove or rename entries: who
// may rename entries in the target's directory (a shared or another
// user's directory) cannot swap a symlink in for the temporary file and
// so turn the write onto another file. The commit renames it from dir
// into dir's parent.
type tempFile struct {
	f    *os.File
	dir  *os.File
	name string
}

// newTemp makes the private directory next to target and the temporary
// file in it, with mode perm less the umask (or what a default ACL of the
// directory gives it).
func newTemp(target string, perm fs.FileMode) (*tempFile, error) {
	parent, base := filepath.Split(target)
	var name string
	for attempt := 0; ; attempt++ {
		// A name of up to 255 bytes must leave room for the temporary one.
		name = "." + base[:min(len(base), 200)] + ".pi-remote-" + randhex.String(8)
		err := os.Mkdir(filepath.Join(parent, name), 0o700)
		if err == nil {
			break
		}
		if !errors.Is(err, fs.ErrExist) || attempt == 10 {
			return nil, err
		}
	}
	pdir := filepath.Join(parent, name)
	fd, err := unix.Open(pdir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: pdir, Err: err}
	}
	dir := os.NewFile(uintptr(fd), pdir)
	if err := checkPrivate(dir); err != nil {
		// Not ours, or not private: nothing in it is touched.
		dir.Close()
		return nil, err
	}
	t := &tempFile{dir: dir, name: name}
	ffd, err := unix.Openat(fd, name, unix.O_RDWR|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, uint32(perm.Perm()))
	if err != nil {
		t.remove()
		return nil, &fs.PathError{Op: "open", Path: filepath.Join(pdir, name), Err: err}
	}
	t.f = os.NewFile(uintptr(ffd), filepath.Join(pdir, name))
	return t, nil
}

// errNotPrivate: the directory a write made for itself is not what it
// made (another user put something else in its place).
var errNotPrivate = fmt.Errorf("%w: the private directory of the write was replaced", fs.ErrPermission)

// checkPrivate checks that dir is a directory of this user's with mode
// 0700 (an ACL may grant no more: the group bits show its mask).
func checkPrivate(dir *os.File) error {
	var st unix.Stat_t
	if err := unix.Fstat(int(dir.Fd()), &st); err != nil {
		return &fs.PathError{Op: "stat", Path: dir.Name(), Err: err}
	}
	// (A setgid parent passes its setgid bit on: that is no matter.)
	if st.Mode&unix.S_IFMT != unix.S_IFDIR || st.Mode&0o777 != 0o700 || int(st.Uid) != os.Geteuid() {
		return &fs.PathError{Op: "write", Path: dir.Name(), Err: errNotPrivate}
	}
	return nil
}

// commit renames the temporary file over base in the private directory's
// parent, and removes the private directory. After a failure, remove
// still has to.
func (t *tempFile) commit(base string) error {
	if err := t.f.Close(); err != nil {
		t.f = nil
		return err
	}
	t.f = nil
	parent, err := t.parent()
	if err != nil {
		return err
	}
	defer parent.Close()
	if err := unix.Renameat(int(t.dir.Fd()), t.name, int(parent.Fd()), base); err != nil {
		return &os.LinkError{Op: "rename", Old: filepath.Join(t.dir.Name(), t.name), New: filepath.Join(parent.Name(), base), Err: err}
	}
	t.removeDir(parent)
	t.dir.Close()
	return nil
}

// remove removes the temporary file and the private directory.
func (t *tempFile) remove() {
	if t.f != nil {
		t.f.Close()
		t.f = nil
	}
	unix.Unlinkat(int(t.dir.Fd()), t.name, 0)
	if parent, err := t.parent(); err == nil {
		t.removeDir(parent)
		parent.Close()
	}
	t.dir.Close()
}

// parent opens the private directory's parent: the target's directory.
func (t *tempFile) parent() (*os.File, error) {
	fd, err := unix.Openat(int(t.dir.Fd()), "..", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: filepath.Dir(t.dir.Name()), Err: err}
	}
	return os.NewFile(uintptr(fd), filepath.Dir(t.dir.Name())), nil
}

// removeDir removes the (empty) private directory from parent, when the
// entry of its name there is still that directory.
func (t *tempFile) removeDir(parent *os.File) {
	var ours, there unix.Stat_t
	if unix.Fstat(int(t.dir.Fd()), &ours) != nil ||
		unix.Fstatat(int(parent.Fd()), t.name, &there, unix.AT_SYMLINK_NOFOLLOW) != nil ||
		ours.Dev != there.Dev || ours.Ino != there.Ino {
		return
	}
	unix.Unlinkat(int(parent.Fd()), t.name, unix.AT_REMOVEDIR)
}

// followable says whether a write may follow the symlink link: not when
// it sits in a sticky world-writable directory (/tmp) and belongs to
// neither this user nor the directory's owner, which is what the kernel's
// fs.protected_symlinks refuses to follow. There, another user's link
// could aim a write at any file of this user's.
func followable(link string) bool {
	var dir, l unix.Stat_t
	if unix.Stat(filepath.Dir(link), &dir) != nil || unix.Lstat(link, &l) != nil {
		return true // gone meanwhile: the write will tell
	}
	if dir.Mode&unix.S_ISVTX == 0 || dir.Mode&0o002 == 0 {
		return true
	}
	return int(l.Uid) == os.Geteuid() || l.Uid == dir.Uid
}

// keepOwner gives f the owner and group of old where we may.
func keepOwner(f *os.File, old fs.FileInfo) error {
	st, ok := old.Sys().(*syscall.Stat_t)
	if !ok {
		return nil
	}
	if err := f.Chown(int(st.Uid), int(st.Gid)); err != nil && !errors.Is(err, fs.ErrPermission) {
		return err
	}
	return nil
}
