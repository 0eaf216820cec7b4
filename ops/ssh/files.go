package ssh

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/pi-remote/pi-remote/ops"
)

// call runs one of server.sh's file functions on a server of the live
// connection (see conn.call).
func (h *Host) call(ctx context.Context, kind requestKind, op, name, fn string, args ...string) (string, []byte, error) {
	c, err := h.conn(ctx)
	if err != nil {
		return "", nil, err
	}
	return c.call(ctx, kind, op, name, fn, args...)
}

func checkStatus(op, name, status string, payload []byte) (string, []byte, error) {
	if rest, ok := strings.CutPrefix(status, "E "); ok {
		code, msg, _ := strings.Cut(rest, " ")
		return "", nil, &fs.PathError{Op: op, Path: name, Err: errnoError(code, msg)}
	}
	if status == "OK" || strings.HasPrefix(status, "OK ") {
		return strings.TrimPrefix(strings.TrimPrefix(status, "OK"), " "), payload, nil
	}
	return "", nil, fmt.Errorf("%s %s: unexpected answer from host: %q", op, name, status)
}

// errnoError maps the errno names of server.sh's "E CODE message" lines to
// the errors the local backend returns for them.
func errnoError(code, msg string) error {
	switch code {
	case "ENOENT":
		return fs.ErrNotExist
	case "ENOTDIR":
		return ops.ErrNotDir
	case "EISDIR":
		return ops.ErrIsDir
	case "EACCES":
		return fs.ErrPermission
	case "EEXIST":
		return fs.ErrExist
	case "EMODIFIED":
		return ops.ErrModified
	case "ENOSPC":
		return syscall.ENOSPC
	case "ENAMETOOLONG":
		return syscall.ENAMETOOLONG
	case "EROFS":
		return syscall.EROFS
	case "EDQUOT":
		return syscall.EDQUOT
	case "ELOOP":
		return syscall.ELOOP
	}
	return errors.New(msg)
}

// Stat implements ops.ReadOperations with ls on the command server.
func (h *Host) Stat(ctx context.Context, name string) (fs.FileInfo, error) {
	_, payload, err := h.call(ctx, query, "stat", name, "stat_path", name)
	if err != nil {
		return nil, err
	}
	mode, size, err := parseLs(string(payload))
	if err != nil {
		return nil, fmt.Errorf("stat %s: %w", name, err)
	}
	return fileInfo{name: path.Base(name), size: size, mode: mode}, nil
}

type fileInfo struct {
	name string
	size int64
	mode fs.FileMode
	mod  time.Time
}

func (f fileInfo) Name() string       { return f.name }
func (f fileInfo) Size() int64        { return f.size }
func (f fileInfo) Mode() fs.FileMode  { return f.mode }
func (f fileInfo) ModTime() time.Time { return f.mod }
func (f fileInfo) IsDir() bool        { return f.mode.IsDir() }
func (f fileInfo) Sys() any           { return nil }

// parseLs reads the mode and size from an `ls -ldn` line.
func parseLs(line string) (fs.FileMode, int64, error) {
	f := strings.Fields(line)
	if len(f) < 5 || len(f[0]) < 10 {
		return 0, 0, fmt.Errorf("cannot parse ls output %q", line)
	}
	size, _ := strconv.ParseInt(f[4], 10, 64) // devices print "major," here
	return parseLsMode(f[0]), size, nil
}

// parseLsMode turns "drwxr-sr-x" into an fs.FileMode.
func parseLsMode(s string) fs.FileMode {
	var m fs.FileMode
	switch s[0] {
	case 'd':
		m = fs.ModeDir
	case 'l':
		m = fs.ModeSymlink
	case 'p':
		m = fs.ModeNamedPipe
	case 's':
		m = fs.ModeSocket
	case 'c':
		m = fs.ModeDevice | fs.ModeCharDevice
	case 'b':
		m = fs.ModeDevice
	}
	for i, c := range s[1:10] {
		bit := fs.FileMode(1) << (8 - i)
		switch c {
		case 'r', 'w', 'x':
			m |= bit
		case 's', 't':
			m |= bit
			fallthrough
		case 'S', 'T':
			m |= [...]fs.FileMode{fs.ModeSetuid, fs.ModeSetgid, fs.ModeSticky}[i/3]
		}
	}
	return m
}

// ReadDir implements ops.ReadOperations with one request: GNU find's
// -printf when the host has it, else a shell loop.
func (h *Host) ReadDir(ctx context.Context, name string) ([]ops.DirEntry, error) {
	c, err := h.conn(ctx)
	if err != nil {
		return nil, err
	}
	p, err := c.probed(ctx)
	if err != nil {
		return nil, err
	}
	flavour := "posix"
	if p.gnuFind {
		flavour = "gnu"
	}
	_, payload, err := c.call(ctx, query, "readdir", name, "list_dir", name, flavour)
	if err != nil {
		return nil, err
	}
	fields := strings.Split(string(payload), "\x00")
	var out []ops.DirEntry
	if p.gnuFind {
		for _, rec := range fields {
			if rec == "" {
				continue
			}
			parts := strings.SplitN(rec, " ", 4)
			if len(parts) != 4 || len(parts[0]) != 2 {
				return nil, fmt.Errorf("readdir %s: cannot parse %q", name, rec)
			}
			perm, _ := strconv.ParseUint(parts[1], 8, 32)
			size, _ := strconv.ParseInt(parts[2], 10, 64)
			mode := fs.FileMode(perm) & fs.ModePerm
			if perm&0o4000 != 0 {
				mode |= fs.ModeSetuid
			}
			if perm&0o2000 != 0 {
				mode |= fs.ModeSetgid
			}
			if perm&0o1000 != 0 {
				mode |= fs.ModeSticky
			}
			mode |= parseLsMode(string(parts[0][0])+"---------") &^ fs.ModePerm
			if parts[0][0] == 'f' {
				mode &^= fs.ModeType
			}
			out = append(out, ops.DirEntry{Name: parts[3], IsDir: parts[0][1] == 'd', IsSymlink: parts[0][0] == 'l', Size: size, Mode: mode})
		}
		return out, nil
	}
	for i := 0; i+2 < len(fields); i += 3 {
		mode, size, err := parseLs(fields[i+2])
		if err != nil {
			return nil, fmt.Errorf("readdir %s: %w", name, err)
		}
		out = append(out, ops.DirEntry{Name: fields[i], IsDir: fields[i+1] == "d", IsSymlink: mode&fs.ModeSymlink != 0, Size: size, Mode: mode})
	}
	return out, nil
}

// RealPath implements ops.Resolver on the host: symlinks and ".."
// resolved like the kernel does (symlinks first).
func (h *Host) RealPath(ctx context.Context, name string) (string, error) {
	_, p, err := h.call(ctx, query, "realpath", name, "resolve_path", name)
	return string(p), err
}

// MkdirAll implements ops.WriteOperations.
func (h *Host) MkdirAll(ctx context.Context, name string) error {
	_, _, err := h.call(ctx, change, "mkdir", name, "make_dirs", name)
	return err
}
