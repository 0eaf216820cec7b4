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
	"os/exec"
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
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if fi.IsDir() {
		f.Close()
		return nil, &fs.PathError{Op: "open", Path: name, Err: ops.ErrIsDir}
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
		if err != nil {
			continue // removed while listing
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

// WriteFile implements ops.WriteOperations: temp file in the target's
// directory, copy, chmod to the old mode, fsync, optional Guard check,
// rename.
func (*FS) WriteFile(ctx context.Context, name string, r io.Reader, opts ops.WriteOptions) (err error) {
	if err := ctx.Err(); err != nil {
		return err
	}
	if opts.CreateParents {
		if err := (&FS{}).MkdirAll(ctx, filepath.Dir(name)); err != nil {
			return err
		}
	}
	target := name
	// Write through a symlink so the link survives.
	if resolved, rerr := filepath.EvalSymlinks(name); rerr == nil {
		target = resolved
	}
	perm := opts.Perm
	if perm == 0 {
		perm = ops.DefaultPerm
	}
	old, statErr := os.Stat(target)
	switch {
	case statErr == nil && old.IsDir():
		return &fs.PathError{Op: "write", Path: name, Err: ops.ErrIsDir}
	case statErr == nil:
		perm = old.Mode().Perm() | old.Mode()&(fs.ModeSetuid|fs.ModeSetgid|fs.ModeSticky)
	case !errors.Is(statErr, fs.ErrNotExist):
		return statErr
	}

	dir, base := filepath.Split(target)
	tmp, err := os.CreateTemp(dir, "."+base+".pi-remote-*")
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			pe.Path = name
		}
		return err
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	if _, err = io.Copy(tmp, ops.CtxReader(ctx, r)); err != nil {
		return fmt.Errorf("write %s: %w", name, err)
	}
	if err = tmp.Chmod(perm); err != nil {
		return err
	}
	if statErr == nil {
		if st, ok := old.Sys().(*syscall.Stat_t); ok {
			// Keep ownership when we are allowed to (root); otherwise the
			// file becomes ours, as with any editor's atomic save.
			if err = tmp.Chown(int(st.Uid), int(st.Gid)); err != nil && !errors.Is(err, fs.ErrPermission) {
				return err
			}
			err = nil
		}
	}
	if err = tmp.Sync(); err != nil {
		return err
	}
	if err = tmp.Close(); err != nil {
		return err
	}
	if err = ctx.Err(); err != nil {
		return err
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
	if err = os.Rename(tmp.Name(), target); err != nil {
		return err
	}
	return nil
}

// Exec implements ops.ExecOperations.
func (l *FS) Exec(ctx context.Context, c ops.Command) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	shell := l.Shell
	if shell == "" {
		shell = "/bin/sh"
	}
	cmd := exec.Command(shell, "-c", c.Script)
	cmd.Dir = c.Dir
	cmd.Env = append(os.Environ(), c.Env...)
	out := c.Output
	if out == nil {
		out = io.Discard
	}
	// One writer value for both streams: os/exec then gives the child a
	// single pipe for fd 1 and 2, which keeps their relative order.
	w := &mergedWriter{w: out}
	cmd.Stdout, cmd.Stderr = w, w
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.WaitDelay = ops.GraceAfterExit
	if c.Dir != "" {
		if fi, err := os.Stat(c.Dir); err != nil {
			return err
		} else if !fi.IsDir() {
			return &fs.PathError{Op: "chdir", Path: c.Dir, Err: ops.ErrNotDir}
		}
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	pgid := cmd.Process.Pid
	done := make(chan struct{})
	stop := context.AfterFunc(ctx, func() {
		killGroup(pgid)
		close(done)
	})
	err := cmd.Wait()
	if !stop() {
		<-done
		return ctx.Err()
	}
	var ee *exec.ExitError
	switch {
	case err == nil, errors.Is(err, exec.ErrWaitDelay):
		return nil
	case errors.As(err, &ee):
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return &ops.ExitError{Code: 128 + int(ws.Signal()), Signal: signalName(ws.Signal())}
		}
		return &ops.ExitError{Code: ee.ExitCode()}
	default:
		return err
	}
}

func killGroup(pgid int) {
	// The group may already be gone; ESRCH is the expected answer then and
	// there is nothing else to do on failure.
	syscall.Kill(-pgid, syscall.SIGKILL)
}

// mergedWriter is set as both Stdout and Stderr. os/exec sees the same
// comparable value twice and gives the child one pipe for fd 1 and 2, so
// Write is only called from one copying goroutine and needs no lock.
type mergedWriter struct{ w io.Writer }

func (l *mergedWriter) Write(p []byte) (int, error) { return l.w.Write(p) }

func signalName(s syscall.Signal) string {
	names := map[syscall.Signal]string{
		syscall.SIGKILL: "KILL", syscall.SIGTERM: "TERM", syscall.SIGINT: "INT",
		syscall.SIGHUP: "HUP", syscall.SIGQUIT: "QUIT", syscall.SIGSEGV: "SEGV",
		syscall.SIGABRT: "ABRT", syscall.SIGPIPE: "PIPE", syscall.SIGUSR1: "USR1",
		syscall.SIGUSR2: "USR2", syscall.SIGALRM: "ALRM", syscall.SIGBUS: "BUS",
		syscall.SIGFPE: "FPE", syscall.SIGILL: "ILL",
	}
	if n, ok := names[s]; ok {
		return n
	}
	return s.String()
}
