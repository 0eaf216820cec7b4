// Package local implements the ops contract on this machine with package os
// and os/exec. It is what pi-remote uses when no --host is given, and the
// reference backend for the ops/opstest conformance suite.
//
// FS is safe for concurrent use.
package local

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	"github.com/pi-remote/pi-remote/ops"
)

// FS is the local backend. The zero value is ready to use.
type FS struct {
	// Shell is the shell that runs commands; default "/bin/sh".
	Shell string
}

// New returns a local backend.
func New() *FS { return &FS{} }

var (
	_ ops.Operations = (*FS)(nil)
	_ ops.Resolver   = (*FS)(nil)
)

// Stat implements ops.ReadOperations.
func (*FS) Stat(ctx context.Context, name string) (fs.FileInfo, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return os.Stat(name)
}

// Open implements ops.ReadOperations.
func (*FS) Open(ctx context.Context, name string) (io.ReadCloser, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	f, err := openForRead(name)
	if err != nil {
		return nil, err
	}
	// What was opened is checked, not the name: it may have changed.
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	switch {
	case fi.IsDir():
		f.Close()
		return nil, &fs.PathError{Op: "open", Path: name, Err: ops.ErrIsDir}
	case !fi.Mode().IsRegular():
		f.Close()
		return nil, &fs.PathError{Op: "open", Path: name, Err: ops.ErrNotRegular}
	}
	return ctxFile{Reader: ops.CtxReader(ctx, f), f: f}, nil
}

type ctxFile struct {
	io.Reader
	f *os.File
}

func (c ctxFile) Close() error { return c.f.Close() }

// ReadDir implements ops.ReadOperations.
func (*FS) ReadDir(ctx context.Context, name string) ([]ops.DirEntry, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	fi, err := os.Stat(name)
	if err != nil {
		return nil, err
	}
	if !fi.IsDir() {
		return nil, &fs.PathError{Op: "readdir", Path: name, Err: ops.ErrNotDir}
	}
	des, err := os.ReadDir(name)
	if err != nil {
		return nil, err
	}
	out := make([]ops.DirEntry, 0, len(des))
	for _, de := range des {
		info, err := de.Info()
		if errors.Is(err, fs.ErrNotExist) {
			continue // removed while listing
		}
		if err != nil {
			// A directory that may be read but not searched: names
			// without details would be a listing of unknown files.
			return nil, &fs.PathError{Op: "readdir", Path: name, Err: err}
		}
		e := ops.DirEntry{Name: de.Name(), IsDir: de.IsDir(), Size: info.Size(), Mode: info.Mode()}
		if info.Mode()&fs.ModeSymlink != 0 {
			e.IsSymlink = true
			if target, err := os.Stat(filepath.Join(name, de.Name())); err == nil {
				e.IsDir = target.IsDir()
			}
		}
		out = append(out, e)
	}
	return out, nil
}

// RealPath implements ops.Resolver.
func (*FS) RealPath(ctx context.Context, name string) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", err
	}
	p, err := filepath.EvalSymlinks(name)
	if err != nil {
		return "", err
	}
	return filepath.Abs(p)
}

// MkdirAll implements ops.WriteOperations.
func (*FS) MkdirAll(ctx context.Context, name string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	err := os.MkdirAll(name, 0o755)
	if errors.Is(err, syscall.ENOTDIR) {
		return &fs.PathError{Op: "mkdir", Path: name, Err: ops.ErrNotDir}
	}
	return err
}

// testHookResolved and testHookHeld let a test act as another user
// between a write's steps: once the target's symlinks are followed, and
// once it is held.
var testHookResolved, testHookHeld = func(string) {}, func(string) {}

// WriteFile implements ops.WriteOperations: a temporary file in a private
// directory of its own next to the target (see newTemp), filled, given
// the old file's owner, mode, ACL and extended attributes, synced,
// checked (Canonical, Guard) and renamed over the target.
func (*FS) WriteFile(ctx context.Context, name string, r io.Reader, opts ops.WriteOptions) (err error) {
	if err := ctx.Err(); err != nil {
		return err
	}
	if opts.CreateParents {
		if err := (&FS{}).MkdirAll(ctx, filepath.Dir(name)); err != nil {
			return err
		}
	}
	// Write through a symlink so the link survives, also when its target
	// does not exist yet (the write creates it).
	target, err := followLinks(name)
	if err != nil {
		return err
	}
	perm := opts.Perm
	if perm == 0 {
		perm = ops.DefaultPerm
	}
	testHookResolved(target)
	held, old, statErr := holdTarget(target)
	if held != nil {
		defer held.Close()
	}
	switch {
	case statErr == nil && old.IsDir():
		return &fs.PathError{Op: "write", Path: name, Err: ops.ErrIsDir}
	case statErr == nil && old.Mode()&fs.ModeSymlink != 0:
		// followLinks found a file here: someone put a link in its place.
		return &fs.PathError{Op: "write", Path: name, Err: fmt.Errorf("%w: %s became a symbolic link", ops.ErrMoved, target)}
	case statErr == nil && !old.Mode().IsRegular():
		return &fs.PathError{Op: "write", Path: name, Err: ops.ErrNotRegular}
	case statErr != nil && !errors.Is(statErr, fs.ErrNotExist):
		return statErr
	}

	// A new file asks for perm and gets it less the umask, as any file
	// this process creates; an existing one's mode is set below.
	tmp, err := newTemp(target, perm)
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			pe.Path = name
		}
		return err
	}
	defer func() {
		if err != nil {
			tmp.remove()
		}
	}()
	if _, err = io.Copy(tmp.f, ops.CtxReader(ctx, r)); err != nil {
		return fmt.Errorf("write %s: %w", name, err)
	}
	if statErr == nil {
		testHookHeld(target)
		if err = keepAttributes(tmp.f, held, old); err != nil {
			return &fs.PathError{Op: "write", Path: name, Err: err}
		}
	}
	if err = tmp.f.Sync(); err != nil {
		return err
	}
	if err = ctx.Err(); err != nil {
		return err
	}
	if opts.Canonical != "" {
		if err = checkCanonical(name, target, opts.Canonical); err != nil {
			return err
		}
	}
	if opts.Guard != nil {
		current, rerr := os.ReadFile(target)
		if rerr != nil && !errors.Is(rerr, fs.ErrNotExist) {
			return rerr
		}
		if rerr != nil || !bytes.Equal(current, opts.Guard.Content) {
			return &fs.PathError{Op: "write", Path: name, Err: ops.ErrModified}
		}
	}
	if err = tmp.commit(filepath.Base(target)); err != nil {
		if fi, serr := os.Stat(target); serr == nil && fi.IsDir() {
			// A directory took the file's place since the check above.
			return &fs.PathError{Op: "write", Path: name, Err: ops.ErrIsDir}
		}
		return err
	}
	return nil
}

// keepAttributes gives f, the new content of the file held (see
// holdTarget), what that file has besides its content (old, its file
// info): its owner where we may set it (first: chown clears the setuid
// and setgid bits), its mode, and its ACL and extended attributes
// (copyXattrs).
func keepAttributes(f, held *os.File, old fs.FileInfo) error {
	if err := keepOwner(f, old); err != nil {
		return err
	}
	if err := f.Chmod(old.Mode().Perm() | old.Mode()&(fs.ModeSetuid|fs.ModeSetgid|fs.ModeSticky)); err != nil {
		return err
	}
	return copyXattrs(f, held)
}

// checkCanonical fails with ops.ErrMoved unless target, the file a write to
// name replaces (its symlinks followed), has the canonical path want.
func checkCanonical(name, target, want string) error {
	dir, err := filepath.EvalSymlinks(filepath.Dir(target))
	if err != nil {
		return err
	}
	if got := filepath.Join(dir, filepath.Base(target)); got != want {
		return &fs.PathError{Op: "write", Path: name, Err: fmt.Errorf("%w: %s, not %s", ops.ErrMoved, got, want)}
	}
	return nil
}

// followLinks follows the symlinks at the end of name, to a target that
// may not exist. A link that followable refuses, at the end or on the way
// there (see refusedLinkOnTheWay), is a permission error.
func followLinks(name string) (string, error) {
	for range 40 {
		if at := refusedLinkOnTheWay(name); at != "" {
			return "", &fs.PathError{Op: "write", Path: name, Err: fmt.Errorf("%w: not following %s, a symbolic link of another user in a shared sticky directory", fs.ErrPermission, at)}
		}
		link, err := os.Readlink(name)
		if err != nil {
			return name, nil // not a link, or nothing there yet: the write will tell
		}
		if !followable(name) {
			return "", &fs.PathError{Op: "write", Path: name, Err: fmt.Errorf("%w: not following a symbolic link of another user in a shared sticky directory", fs.ErrPermission)}
		}
		if !filepath.IsAbs(link) {
			link = filepath.Join(filepath.Dir(name), link)
		}
		name = link
	}
	return "", &fs.PathError{Op: "write", Path: name, Err: syscall.ELOOP}
}

// refusedLinkOnTheWay returns the first directory on the way to name's
// last element that is a symlink followable refuses, on name itself or on
// the way through the target of a link on it, as the kernel's
// fs.protected_symlinks judges every link it follows; "" when there is
// none.
func refusedLinkOnTheWay(name string) string {
	for hops := 0; hops <= 40; hops++ {
		dir := linkOnTheWay(name)
		if dir == "" {
			return ""
		}
		if !followable(dir) {
			return dir
		}
		target, err := os.Readlink(dir)
		if err != nil {
			return "" // gone meanwhile: the write will tell
		}
		if !filepath.IsAbs(target) {
			// Not cleaned: ".." in target is the kernel's to resolve.
			target = filepath.Dir(dir) + string(filepath.Separator) + target
		}
		name = target + name[len(dir):]
	}
	return "" // too many links: the write's ELOOP will tell
}

// linkOnTheWay returns the first directory on the way to name's last
// element that is a symlink, or "".
func linkOnTheWay(name string) string {
	for i := len(filepath.VolumeName(name)) + 1; i < len(name); i++ {
		if !os.IsPathSeparator(name[i]) || os.IsPathSeparator(name[i-1]) {
			continue
		}
		if fi, err := os.Lstat(name[:i]); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
			return name[:i]
		}
	}
	return ""
}
