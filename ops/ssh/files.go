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
	"github.com/pi-remote/pi-remote/ops/ssh/internal/hostproto"
)

// call runs one of the server's file functions on a server of the live
// connection (see conn.call). A query whose connection was lost is asked
// again once the host is back (see again).
func (h *Host) call(ctx context.Context, kind requestKind, op, name string, r hostproto.Request) (status string, payload []byte, err error) {
	do := func() error {
		c, err := h.ready(ctx)
		if err != nil {
			return err
		}
		status, payload, err = c.call(ctx, kind, op, name, r)
		return err
	}
	if kind == query {
		err = h.again(ctx, do)
	} else {
		err = do()
	}
	return status, payload, err
}

// again runs op, and again on a new connection when the connection was
// lost, for as long as a command waits for its host to come back
// (HostOptions.ReattachTimeout). op must be safe to repeat.
func (h *Host) again(ctx context.Context, op func() error) error {
	var lostAt time.Time
	for {
		err := op()
		if err == nil || !errors.Is(err, ops.ErrConnectionLost) || ctx.Err() != nil || h.opts.ReattachTimeout < 0 {
			return err
		}
		if lostAt.IsZero() {
			lostAt = time.Now()
		}
		if wait := h.reattachTimeout() - time.Since(lostAt); wait <= 0 || h.awaitHost(ctx, wait) != nil {
			return err
		}
	}
}

func checkStatus(op, name, status string, payload []byte) (string, []byte, error) {
	if rest, ok := strings.CutPrefix(status, "E "); ok {
		code, msg, _ := strings.Cut(rest, " ")
		return "", nil, &fs.PathError{Op: op, Path: name, Err: errnoError(code, msg)}
	}
	if status == "OK" || strings.HasPrefix(status, "OK ") {
		return strings.TrimPrefix(strings.TrimPrefix(status, "OK"), " "), payload, nil
	}
	return "", nil, fmt.Errorf("%s %s: %w: unexpected answer from host: %q", op, name, errProtocol, status)
}

// errnoError maps the errno names of the server's "E CODE message" lines to
// the errors the local backend returns for them.
func errnoError(code, msg string) error {
	switch code {
	case "ENOENT":
		return fs.ErrNotExist
	case "ENOTDIR":
		return ops.ErrNotDir
	case "EISDIR":
		return ops.ErrIsDir
	case "ENOTREG":
		return ops.ErrNotRegular
	case "EACCES":
		return fs.ErrPermission
	case "EEXIST":
		return fs.ErrExist
	case "EMODIFIED":
		return ops.ErrModified
	case "EMOVED":
		return ops.ErrMoved
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
	_, payload, err := h.call(ctx, query, "stat", name, hostproto.StatPath(name))
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
	var flavour string
	var payload []byte
	err := h.again(ctx, func() error {
		c, err := h.ready(ctx)
		if err != nil {
			return err
		}
		p, err := c.probed(ctx)
		if err != nil {
			return err
		}
		flavour = "posix"
		switch {
		case p.gnuFind:
			flavour = "gnu"
		case p.statC:
			flavour = "stat"
		}
		_, payload, err = c.call(ctx, query, "readdir", name, hostproto.ListDir(name, flavour))
		return err
	})
	if err != nil {
		return nil, err
	}
	var out []ops.DirEntry
	if flavour == "gnu" {
		for rec := range strings.SplitSeq(string(payload), "\x00") {
			if rec == "" {
				continue
			}
			parts := strings.SplitN(rec, " ", 4)
			if len(parts) != 4 || len(parts[0]) != 2 {
				return nil, fmt.Errorf("readdir %s: cannot parse %q", name, rec)
			}
			perm, _ := strconv.ParseUint(parts[1], 8, 32)
			size, _ := strconv.ParseInt(parts[2], 10, 64)
			mode := unixMode(uint32(perm)) &^ fs.ModeType
			mode |= parseLsMode(string(parts[0][0])+"---------") &^ fs.ModePerm
			if parts[0][0] == 'f' {
				mode &^= fs.ModeType
			}
			out = append(out, ops.DirEntry{Name: parts[3], IsDir: parts[0][1] == 'd', IsSymlink: parts[0][0] == 'l', Size: size, Mode: mode})
		}
		return out, nil
	}
	if flavour == "posix" {
		fields := strings.Split(string(payload), "\x00")
		for i := 0; i+2 < len(fields); i += 3 {
			mode, size, err := parseLs(fields[i+2])
			if err != nil {
				return nil, fmt.Errorf("readdir %s: %w", name, err)
			}
			out = append(out, ops.DirEntry{Name: fields[i], IsDir: fields[i+1] == "d", IsSymlink: mode&fs.ModeSymlink != 0, Size: size, Mode: mode})
		}
		return out, nil
	}
	// The names, an empty record, the stat lines for them in the same
	// order (each found by its name, so any byte in a name is safe), an
	// empty record, and the targets' modes of the symbolic links.
	names, data, ok := strings.Cut(string(payload), "\x00\x00")
	if !ok {
		return nil, fmt.Errorf("readdir %s: the listing was cut short", name)
	}
	details, targets, _ := strings.Cut(data, "\x00")
	links := map[string]int{}
	for n := range strings.SplitSeq(names, "\x00") {
		mode, size, rest, ok := statLine(details, n)
		if !ok {
			// Created between the two globs: a line for a name not listed.
			_, next, _ := strings.Cut(details, "\n")
			mode, size, rest, ok = statLine(next, n)
		}
		if !ok {
			continue // an unmatched glob, or gone meanwhile
		}
		details = rest
		if n == "." || n == ".." {
			continue
		}
		if mode&fs.ModeSymlink != 0 {
			links[n] = len(out)
		}
		out = append(out, ops.DirEntry{Name: n, IsDir: mode.IsDir(), IsSymlink: mode&fs.ModeSymlink != 0, Size: size, Mode: mode})
	}
	// "RAWMODE ./NAME" in readdir order: the name is the link name that
	// the rest of the line starts with.
	for targets != "" {
		hex, rest, _ := strings.Cut(targets, " ./")
		matched := false
		for n, i := range links {
			if after, ok := strings.CutPrefix(rest, n+"\n"); ok {
				raw, _ := strconv.ParseUint(hex, 16, 32)
				out[i].IsDir = unixMode(uint32(raw)).IsDir()
				delete(links, n)
				targets, matched = after, true
				break
			}
		}
		if !matched {
			_, targets, _ = strings.Cut(rest, "\n")
		}
	}
	return out, nil
}

// statLine reads "RAWMODE SIZE ./NAME\n" (stat -c '%f %s %n') for name at
// the start of data, returning the rest; ok is false, and data is
// unchanged, when the line there is not name's.
func statLine(data, name string) (fs.FileMode, int64, string, bool) {
	hex, rest, ok := strings.Cut(data, " ")
	if !ok {
		return 0, 0, data, false
	}
	num, rest, ok := strings.Cut(rest, " ")
	if !ok {
		return 0, 0, data, false
	}
	rest, ok = strings.CutPrefix(rest, "./"+name+"\n")
	raw, err1 := strconv.ParseUint(hex, 16, 32)
	size, err2 := strconv.ParseInt(num, 10, 64)
	if !ok || err1 != nil || err2 != nil {
		return 0, 0, data, false
	}
	return unixMode(uint32(raw)), size, rest, true
}

// lsLine reads an `ls -ldn ./NAME` line for name at the start of data.
func lsLine(data, name string) (fs.FileMode, int64, string, bool) {
	k := strings.Index(data, " ./"+name)
	if k < 0 || strings.Contains(data[:k], "\n") {
		return 0, 0, data, false
	}
	mode, size, err := parseLs(data[:k])
	if err != nil {
		return 0, 0, data, false
	}
	rest := data[k+3+len(name):]
	// A symlink's line goes on with " -> TARGET".
	if nl := strings.IndexByte(rest, '\n'); nl >= 0 {
		rest = rest[nl+1:]
	} else {
		rest = ""
	}
	return mode, size, rest, true
}

// unixMode converts a st_mode value.
func unixMode(m uint32) fs.FileMode {
	mode := fs.FileMode(m) & fs.ModePerm
	switch m & 0o170000 {
	case 0o040000:
		mode |= fs.ModeDir
	case 0o120000:
		mode |= fs.ModeSymlink
	case 0o010000:
		mode |= fs.ModeNamedPipe
	case 0o140000:
		mode |= fs.ModeSocket
	case 0o020000:
		mode |= fs.ModeDevice | fs.ModeCharDevice
	case 0o060000:
		mode |= fs.ModeDevice
	}
	if m&0o4000 != 0 {
		mode |= fs.ModeSetuid
	}
	if m&0o2000 != 0 {
		mode |= fs.ModeSetgid
	}
	if m&0o1000 != 0 {
		mode |= fs.ModeSticky
	}
	return mode
}

// RealPath implements ops.Resolver on the host: symlinks and ".."
// resolved like the kernel does (symlinks first).
func (h *Host) RealPath(ctx context.Context, name string) (string, error) {
	_, p, err := h.call(ctx, query, "realpath", name, hostproto.ResolvePath(name))
	return string(p), err
}

// MkdirAll implements ops.WriteOperations.
func (h *Host) MkdirAll(ctx context.Context, name string) error {
	// (Safe to repeat after a lost connection.)
	return h.again(ctx, func() error {
		_, _, err := h.call(ctx, change, "mkdir", name, hostproto.MakeDirs(name))
		return err
	})
}
