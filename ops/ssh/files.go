package ssh

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/pkg/sftp"

	"github.com/pi-remote/pi-remote/ops"
)

const (
	// readChunk is what Open fetches with its first request (and, on hosts
	// without SFTP, with each later one).
	readChunk = 1 << 20
	// inlineMax is the largest content WriteFile sends inside the request
	// itself (one round trip); larger files go over SFTP.
	inlineMax = 64 << 10
)

// call runs one of the server's file functions and splits its status line
// from its payload. An "E CODE message" status becomes a *fs.PathError.
func (h *Host) call(ctx context.Context, op, name, call string) (string, []byte, error) {
	c, err := h.conn(ctx)
	if err != nil {
		return "", nil, err
	}
	out, err := c.internal(ctx, call)
	if err != nil {
		return "", nil, err
	}
	status, payload, _ := bytes.Cut(out, []byte("\n"))
	return checkStatus(op, name, string(status), payload)
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
	}
	return errors.New(msg)
}

// Stat implements ops.ReadOperations: SFTP when the host has it (exact
// times), else ls over the command server.
func (h *Host) Stat(ctx context.Context, name string) (fs.FileInfo, error) {
	c, err := h.conn(ctx)
	if err != nil {
		return nil, err
	}
	sc, err := c.sftpClient(ctx)
	if err != nil {
		return nil, err
	}
	if sc != nil {
		fi, err := withCtx(ctx, c, func() (fs.FileInfo, error) { return sc.Stat(name) })
		if err != nil {
			return nil, sftpError(c, "stat", name, err)
		}
		return fi, nil
	}
	_, payload, err := h.call(ctx, "stat", name, "pst "+quote(name))
	if err != nil {
		return nil, err
	}
	mode, size, err := parseLs(string(payload))
	if err != nil {
		return nil, fmt.Errorf("stat %s: %w", name, err)
	}
	return fileInfo{name: path.Base(name), size: size, mode: mode}, nil
}

// withCtx runs a blocking SFTP call, giving up when ctx ends (pkg/sftp has
// no per-call context; the call itself finishes in the background).
func withCtx[T any](ctx context.Context, c *conn, f func() (T, error)) (T, error) {
	type res struct {
		v   T
		err error
	}
	ch := make(chan res, 1)
	go func() {
		v, err := f()
		ch <- res{v, err}
	}()
	select {
	case r := <-ch:
		return r.v, r.err
	case <-ctx.Done():
		var zero T
		return zero, ctx.Err()
	case <-c.dead:
		var zero T
		return zero, c.lost(io.EOF)
	}
}

func sftpError(c *conn, op, name string, err error) error {
	if c.isDead() {
		return c.lost(err)
	}
	var se *sftp.StatusError
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return &fs.PathError{Op: op, Path: name, Err: fs.ErrNotExist}
	case errors.Is(err, fs.ErrPermission):
		return &fs.PathError{Op: op, Path: name, Err: fs.ErrPermission}
	case errors.As(err, &se):
		return &fs.PathError{Op: op, Path: name, Err: err}
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return err
	}
	return c.lost(err)
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

// Open implements ops.ReadOperations. The first request checks the file
// and brings its first MiB in one round trip; larger files continue over
// SFTP (pipelined reads) or, without it, chunk by chunk.
func (h *Host) Open(ctx context.Context, name string) (io.ReadCloser, error) {
	c, err := h.conn(ctx)
	if err != nil {
		return nil, err
	}
	_, first, err := h.call(ctx, "open", name, fmt.Sprintf("po %s %d 0", quote(name), readChunk))
	if err != nil {
		return nil, err
	}
	return &reader{ctx: ctx, h: h, c: c, name: name, buf: first, next: 1, eof: len(first) < readChunk}, nil
}

type reader struct {
	ctx  context.Context
	h    *Host
	c    *conn
	name string
	buf  []byte
	next int64 // next chunk index
	eof  bool

	file *sftp.File
	pipe *io.PipeReader
}

func (r *reader) Read(p []byte) (int, error) {
	if err := r.ctx.Err(); err != nil {
		return 0, err
	}
	if len(r.buf) > 0 {
		n := copy(p, r.buf)
		r.buf = r.buf[n:]
		return n, nil
	}
	if r.pipe != nil {
		n, err := r.pipe.Read(p)
		if err != nil && !errors.Is(err, io.EOF) {
			err = sftpError(r.c, "read", r.name, err)
		}
		return n, err
	}
	if r.eof {
		return 0, io.EOF
	}
	sc, err := r.c.sftpClient(r.ctx)
	if err != nil {
		return 0, err
	}
	if sc != nil {
		f, err := withCtx(r.ctx, r.c, func() (*sftp.File, error) { return sc.Open(r.name) })
		if err != nil {
			return 0, sftpError(r.c, "open", r.name, err)
		}
		if _, err := f.Seek(r.next*readChunk, io.SeekStart); err != nil {
			f.Close()
			return 0, sftpError(r.c, "read", r.name, err)
		}
		pr, pw := io.Pipe()
		r.file, r.pipe = f, pr
		go func() {
			_, err := f.WriteTo(pw)
			pw.CloseWithError(err)
		}()
		return r.Read(p)
	}
	_, chunk, err := r.h.call(r.ctx, "read", r.name, fmt.Sprintf("po %s %d %d", quote(r.name), readChunk, r.next))
	if err != nil {
		return 0, err
	}
	r.next++
	r.buf, r.eof = chunk, len(chunk) < readChunk
	if len(chunk) == 0 {
		return 0, io.EOF
	}
	return r.Read(p)
}

func (r *reader) Close() error {
	if r.pipe != nil {
		r.pipe.Close()
		// Closing the handle while WriteTo runs can deadlock pkg/sftp v1
		// (pkg/sftp#604); the pipe's error stops WriteTo, which lets go.
		f := r.file
		go func() { f.Close() }()
	}
	r.buf = nil
	return nil
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
	_, payload, err := h.call(ctx, "readdir", name, "pl "+quote(name)+" "+flavour)
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
	p, _, err := h.call(ctx, "realpath", name, "pr "+quote(name))
	return p, err
}

// MkdirAll implements ops.WriteOperations.
func (h *Host) MkdirAll(ctx context.Context, name string) error {
	_, _, err := h.call(ctx, "mkdir", name, "pm "+quote(name))
	return err
}

// WriteFile implements ops.WriteOperations: a temporary file next to the
// target (the symlink's target when name is a link), given the old file's
// mode and owner, filled, checked against the guard digest on the host,
// and renamed over the target. Small contents travel inside the one
// request; larger ones over SFTP (or a cat on a session's stdin).
func (h *Host) WriteFile(ctx context.Context, name string, r io.Reader, opts ops.WriteOptions) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	c, err := h.conn(ctx)
	if err != nil {
		return err
	}
	perm := opts.Perm
	if perm == 0 {
		perm = ops.DefaultPerm
	}
	digest := ""
	if opts.Guard != nil {
		p, err := c.probed(ctx)
		if err != nil {
			return err
		}
		digest = contentDigest(opts.Guard.Content, p.sha256)
	}
	parents := "-"
	if opts.CreateParents {
		parents = "p"
	}
	head := make([]byte, inlineMax+1)
	n, err := io.ReadFull(ops.CtxReader(ctx, r), head)
	head = head[:n]
	switch {
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		_, _, err := h.call(ctx, "write", name, fmt.Sprintf("pw %s %o %s %s %s %s",
			quote(name), perm.Perm(), quote(digest), randomSuffix(), quote(printfFormat(head)), parents))
		return err
	case err != nil:
		return fmt.Errorf("write %s: %w", name, err)
	}

	tmp, _, err := h.call(ctx, "write", name, fmt.Sprintf("ptt %s %o %s %s", quote(name), perm.Perm(), randomSuffix(), parents))
	if err != nil {
		return err
	}
	if err := h.upload(ctx, c, tmp, io.MultiReader(bytes.NewReader(head), r)); err != nil {
		// Leave no temporary file behind, even when ctx is what ended.
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		h.call(cctx, "write", name, "rm -f "+quote(tmp)+"; echo OK")
		return err
	}
	_, _, err = h.call(ctx, "write", name, fmt.Sprintf("pf %s %s %s", quote(name), quote(tmp), quote(digest)))
	return err
}

// upload fills the (existing, empty) temporary file tmp with r.
func (h *Host) upload(ctx context.Context, c *conn, tmp string, r io.Reader) error {
	r = ops.CtxReader(ctx, r)
	sc, err := c.sftpClient(ctx)
	if err != nil {
		return err
	}
	if sc != nil {
		f, err := withCtx(ctx, c, func() (*sftp.File, error) { return sc.OpenFile(tmp, os.O_WRONLY|os.O_TRUNC) })
		if err != nil {
			return sftpError(c, "write", tmp, err)
		}
		_, err = withCtx(ctx, c, func() (int64, error) { return f.ReadFromWithConcurrency(r, 0) })
		cerr := f.Close()
		if err == nil {
			err = cerr
		}
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return sftpError(c, "write", tmp, err)
		}
		return nil
	}
	// No SFTP: cat on a session's stdin. The path goes first, on stdin too,
	// so that no login shell ever parses it.
	sess, err := c.newSession(ctx)
	if err != nil {
		return err
	}
	defer c.release(nil)
	defer sess.Close()
	// On a read error or cancellation stdin just ends: the host's cat
	// finishes and exits, and only then may the caller remove the file
	// (closing the channel instead would race the cat that creates it).
	var readErr error
	sess.Stdin = io.MultiReader(strings.NewReader(tmp+"\n"+programEnd+"\n"), readerFunc(func(p []byte) (int, error) {
		n, err := r.Read(p)
		if err != nil && !errors.Is(err, io.EOF) {
			readErr = err
			return n, io.EOF
		}
		return n, err
	}))
	err = sess.Run(uploadCommand)
	switch {
	case readErr != nil:
		return readErr
	case ctx.Err() != nil:
		return ctx.Err()
	case err != nil:
		return c.lost(fmt.Errorf("write %s: %w", tmp, err))
	}
	return nil
}

// uploadCommand reads a path (lines up to programEnd, like bootstrap) and
// then copies the rest of stdin into it.
const uploadCommand = `exec /bin/sh -c 'n=$(printf "\nx"); n=${n%x}; p=; while IFS= read -r l; do [ "$l" = "` + programEnd + `" ] && break; p=$p$l$n; done; p=${p%?}; exec cat >"$p"'`

type readerFunc func([]byte) (int, error)

func (f readerFunc) Read(p []byte) (int, error) { return f(p) }

func randomSuffix() string {
	var b [8]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// printfFormat encodes b as a printf format that prints exactly b: "%" and
// "\" escaped, control bytes and invalid UTF-8 as octal escapes.
func printfFormat(b []byte) string {
	var s strings.Builder
	s.Grow(len(b) + len(b)/8)
	if len(b) > 0 && b[0] == '-' {
		// A leading dash could be taken for an option by some printfs.
		s.WriteString(`\055`)
		b = b[1:]
	}
	for len(b) > 0 {
		c := b[0]
		switch {
		case c == '%':
			s.WriteString("%%")
		case c == '\\':
			s.WriteString(`\\`)
		case c == '\n' || c == '\t' || (c >= 0x20 && c < 0x7f):
			s.WriteByte(c)
		case c >= 0x80:
			if r, size := utf8.DecodeRune(b); r != utf8.RuneError {
				s.Write(b[:size])
				b = b[size:]
				continue
			}
			fmt.Fprintf(&s, `\%03o`, c)
		default:
			fmt.Fprintf(&s, `\%03o`, c)
		}
		b = b[1:]
	}
	return s.String()
}

// contentDigest is what the host's dg function prints for content.
func contentDigest(content []byte, sha bool) string {
	if sha {
		sum := sha256.Sum256(content)
		return "sha256:" + hex.EncodeToString(sum[:])
	}
	return fmt.Sprintf("cksum:%d:%d", posixCksum(content), len(content))
}

var cksumTable = func() (t [256]uint32) {
	for i := range t {
		c := uint32(i) << 24
		for range 8 {
			if c&0x80000000 != 0 {
				c = c<<1 ^ 0x04c11db7
			} else {
				c <<= 1
			}
		}
		t[i] = c
	}
	return t
}()

// posixCksum is the CRC of POSIX cksum(1): CRC-32 (not reflected) over
// the data and then its length.
func posixCksum(b []byte) uint32 {
	var crc uint32
	for _, c := range b {
		crc = crc<<8 ^ cksumTable[byte(crc>>24)^c]
	}
	for n := len(b); n > 0; n >>= 8 {
		crc = crc<<8 ^ cksumTable[byte(crc>>24)^byte(n)]
	}
	return ^crc
}
