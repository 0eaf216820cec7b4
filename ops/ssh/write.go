package ssh

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/pkg/sftp"

	"github.com/pi-remote/pi-remote/internal/randhex"
	"github.com/pi-remote/pi-remote/ops"
	"github.com/pi-remote/pi-remote/ops/ssh/internal/hostproto"
)

const (
	// inlineMax is the largest content WriteFile sends inside one request
	// (one round trip), as long as its printf encoding stays under
	// encodedMax; larger contents go over SFTP, or in chunks of about
	// encodedMax.
	inlineMax  = 64 << 10
	encodedMax = 96 << 10
)

// WriteFile implements ops.WriteOperations: a temporary file next to the
// target (the symlink's target when name is a link), given the old file's
// owner, mode, ACL and extended attributes, filled, synced, checked
// against the guard digest on the host, and renamed over the target. A
// small content travels inside that one request; a larger one fills the
// temporary file over SFTP (or in chunks through the server) between a
// create and a commit request. The host acts on the temporary file only
// by its name inside a directory nobody else may change (the target's own
// when only root and the user may rename entries there, else a private
// one: see write.sh), so whoever may rename entries in the target's
// directory cannot turn the write onto another file; SFTP, which goes by
// path, is used only when nobody but root and this user may rename
// anything on that path.
//
// A request that reached the host is waited for even when ctx ends: when
// WriteFile returns, the write has happened or never will.
//
// When the connection drops mid-way, WriteFile waits for the host (as
// Exec does, up to HostOptions.ReattachTimeout) and settles the attempt:
// its temporary files are removed, so that a commit still on its way
// cannot happen, and the target's digest says whether the commit did. An
// applied write is done; one that was not is sent again when r can seek
// back (an io.Seeker), and otherwise reported as not applied. The result
// is "unknown" only when the host never came back, or has no digest tool.
func (h *Host) WriteFile(ctx context.Context, name string, r io.Reader, opts ops.WriteOptions) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	seeker, _ := r.(io.Seeker)
	var start int64
	if seeker != nil {
		var err error
		if start, err = seeker.Seek(0, io.SeekCurrent); err != nil {
			seeker = nil
		}
	}
	var lostAt time.Time
	for {
		a := &writeAttempt{}
		err := h.writeOnce(ctx, name, r, opts, a)
		if err == nil {
			return nil
		}
		lost := errors.Is(err, ops.ErrConnectionLost)
		// A guarded write sent again may find the file changed by its
		// own first attempt, committed late.
		late := !lostAt.IsZero() && errors.Is(err, ops.ErrModified)
		if !lost && !late {
			return err
		}
		if lostAt.IsZero() {
			lostAt = time.Now()
		}
		deadline := lostAt.Add(h.reattachTimeout())
		if h.opts.ReattachTimeout < 0 {
			// No waiting for the host, but a connection that comes back
			// at once still gets the temporary files removed.
			deadline = lostAt.Add(10 * time.Second)
		}
		applied, serr := h.settleWrite(ctx, name, a, deadline)
		switch {
		case serr != nil:
			return fmt.Errorf("%w; %w", err, serr)
		case applied:
			return nil
		case !lost:
			return err
		case seeker == nil || ctx.Err() != nil || h.opts.ReattachTimeout < 0:
			return fmt.Errorf("%w; the write of %s was not applied", err, name)
		}
		if _, err := seeker.Seek(start, io.SeekStart); err != nil {
			return fmt.Errorf("write %s: not applied, and its content cannot be read again: %w", name, err)
		}
	}
}

// writeAttempt is what one attempt of a write left on the host, for
// settleWrite.
type writeAttempt struct {
	suffixes   []string // of the temporary files it may have created
	committing bool     // the request that renames the file was sent
	content    []byte   // the whole content, when it went inline
	digest     string   // the digest of a streamed content, when known
}

// suffix returns a new temporary file suffix, remembered.
func (a *writeAttempt) suffix() string {
	s := randhex.String(8)
	a.suffixes = append(a.suffixes, s)
	return s
}

// writeOnce is one attempt of WriteFile on the live connection.
func (h *Host) writeOnce(ctx context.Context, name string, r io.Reader, opts ops.WriteOptions, a *writeAttempt) (err error) {
	c, err := h.ready(ctx)
	if err != nil {
		return err
	}
	perm := opts.Perm
	if perm == 0 {
		perm = ops.DefaultPerm
	}
	octal := fmt.Sprintf("%03o", perm.Perm())
	parents := "-"
	if opts.CreateParents {
		parents = "p"
	}
	digest := ""
	if opts.Guard != nil {
		p, err := c.probed(ctx)
		if err != nil {
			return err
		}
		switch p.digest {
		case "bytes":
			// No digest tool: the expected content goes to the host, and
			// the commit compares the file with it (and removes it).
			expected, err := h.createTemp(ctx, c, name, "600", a.suffix(), parents)
			if err != nil {
				return err
			}
			defer func() {
				if err == nil || errors.Is(err, ops.ErrConnectionLost) {
					return // the commit removed it, or settleWrite will
				}
				h.removeTemp(ctx, name, expected)
			}()
			if err := h.upload(ctx, c, expected, bytes.NewReader(opts.Guard.Content)); err != nil {
				return err
			}
			digest = "bytes:" + expected.inode + ":" + expected.path
		case "":
			return fmt.Errorf("write %s: cannot check that the file did not change: the host has none of sha256sum, shasum, openssl, md5sum, cksum and cmp", name)
		default:
			digest = contentDigest(opts.Guard.Content, p.digest)
		}
	}
	head := make([]byte, inlineMax+1)
	n, err := io.ReadFull(ops.CtxReader(ctx, r), head)
	head = head[:n]
	switch {
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		if format := printfFormat(head); len(format) <= encodedMax {
			a.content, a.committing = head, true
			_, _, err := c.call(ctx, change, "write", name, hostproto.WriteInline(name, octal, digest, a.suffix(), format, parents, opts.Canonical))
			return err
		}
	case err != nil:
		return fmt.Errorf("write %s: %w", name, err)
	}

	// The digest of what is sent tells, after a lost connection, whether
	// the commit happened.
	p, err := c.probed(ctx)
	if err != nil {
		return err
	}
	content := io.MultiReader(bytes.NewReader(head), r)
	sum := newDigester(p.digest)
	if sum != nil {
		content = io.TeeReader(content, sum)
	}
	tmp, err := h.createTemp(ctx, c, name, octal, a.suffix(), parents)
	if err != nil {
		return err
	}
	err = h.upload(ctx, c, tmp, content)
	if err == nil {
		err = ctx.Err()
	}
	if err != nil {
		if !errors.Is(err, ops.ErrConnectionLost) {
			// Leave no temporary file behind, even when ctx is what ended.
			h.removeTemp(ctx, name, tmp)
		}
		return err
	}
	if sum != nil {
		a.digest = sum.sum()
	}
	a.committing = true
	_, _, err = c.call(ctx, change, "write", name, hostproto.CommitTemp(name, tmp.path, tmp.inode, digest, opts.Canonical))
	return err
}

// tempFile is a write's temporary file on the host, as create_temp made
// it: its path, and the inode number of its directory, which the requests
// after create_temp check.
type tempFile struct {
	path, inode string
	// sftp: the file may be filled over SFTP (nobody else may rename
	// anything on its path); otherwise only through the command server.
	sftp bool
}

// createTemp asks for a new temporary file for name (see create_temp).
func (h *Host) createTemp(ctx context.Context, c *conn, name, perm, suffix, parents string) (tempFile, error) {
	_, payload, err := c.call(ctx, change, "write", name, hostproto.CreateTemp(name, perm, suffix, parents))
	if err != nil {
		return tempFile{}, err
	}
	f := strings.SplitN(string(payload), " ", 3)
	if len(f) != 3 || !strings.HasPrefix(f[2], "/") {
		return tempFile{}, c.mismatch(fmt.Errorf("%w: write %s: create_temp answered %q", errProtocol, name, payload))
	}
	return tempFile{path: f[2], inode: f[0], sftp: f[1] == "sftp"}, nil
}

// removeTemp removes a write's temporary file, within a few seconds (on a
// new connection if this one is gone) and even when ctx has ended.
func (h *Host) removeTemp(ctx context.Context, name string, tmp tempFile) {
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	h.call(cctx, change, "write", name, hostproto.RemoveTemp(tmp.path, tmp.inode))
}

// settleWrite waits for the host to answer again (until deadline) and
// settles attempt a of writing name: its temporary files go, and the
// target's digest says whether it was applied.
func (h *Host) settleWrite(ctx context.Context, name string, a *writeAttempt, deadline time.Time) (bool, error) {
	for {
		wait := time.Until(deadline)
		if wait <= 0 || h.awaitHost(ctx, wait) != nil {
			if !a.committing {
				return false, nil
			}
			return false, fmt.Errorf("whether the write of %s was applied is unknown: the host did not answer again", name)
		}
		c, err := h.conn(ctx)
		if err != nil {
			continue
		}
		digest := a.digest
		if a.committing && a.content != nil {
			p, err := c.probed(ctx)
			if errors.Is(err, ops.ErrConnectionLost) {
				continue
			} else if err != nil {
				return false, err
			}
			if newDigester(p.digest) != nil {
				digest = contentDigest(a.content, p.digest)
			}
		}
		if !a.committing {
			digest = "-"
		}
		status, _, err := c.call(ctx, change, "write", name, hostproto.SettleWrite(name, digest, a.suffixes...))
		switch {
		case errors.Is(err, ops.ErrConnectionLost):
			continue
		case err != nil:
			return false, err
		case status == "applied":
			return true, nil
		case status == "absent" || !a.committing:
			return false, nil
		}
		return false, fmt.Errorf("whether the write of %s was applied is unknown: the host has no digest tool to tell", name)
	}
}

// upload fills the (existing, empty) temporary file tmp with r: over SFTP
// when the host has it and create_temp found it safe, otherwise through
// the command servers.
func (h *Host) upload(ctx context.Context, c *conn, tmp tempFile, r io.Reader) error {
	src := &sourceReader{r: ops.CtxReader(ctx, r)}
	r = src
	if !tmp.sftp {
		return h.uploadInChunks(ctx, c, tmp, r)
	}
	sc, done, err := c.useSFTP(ctx)
	if err != nil {
		return err
	}
	if sc == nil {
		return h.uploadInChunks(ctx, c, tmp, r)
	}
	defer done()
	f, err := withCtx(ctx, c, func() (*sftp.File, error) { return sc.OpenFile(tmp.path, os.O_WRONLY|os.O_TRUNC) })
	if err != nil {
		return sftpError(c, "write", tmp.path, err)
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
		if src.err != nil {
			return src.err
		}
		var se *sftp.StatusError
		if errors.As(err, &se) && se.FxCode() == sftp.ErrSSHFxFailure && !c.isDead() {
			// SFTP says only "Failure" for a full disk, a quota, an I/O
			// error: the host's shell can tell which.
			if _, _, derr := c.call(ctx, change, "write", tmp.path, hostproto.DiagnoseWrite(tmp.path, tmp.inode)); derr != nil {
				return derr
			}
		}
		return sftpError(c, "write", tmp.path, err)
	}
	return nil
}

// sourceReader remembers the error of the content's reader, to tell it
// from a failure of the transport.
type sourceReader struct {
	r   io.Reader
	err error
}

func (s *sourceReader) Read(p []byte) (int, error) {
	n, err := s.r.Read(p)
	if err != nil && !errors.Is(err, io.EOF) {
		s.err = err
	}
	return n, err
}

// uploadChunk is how much of a content one request carries when it goes
// through the command servers.
const uploadChunk = 4 << 20

// uploadInChunks appends r to tmp through the command servers: each
// request is followed by up to uploadChunk raw bytes that the host reads
// exactly (receive_temp), on a server of its own while it does (see
// callData).
func (h *Host) uploadInChunks(ctx context.Context, c *conn, tmp tempFile, r io.Reader) error {
	buf := make([]byte, uploadChunk)
	for {
		n, err := io.ReadFull(r, buf)
		if n > 0 {
			if _, _, werr := c.call(ctx, change, "write", tmp.path, hostproto.ReceiveTemp(tmp.path, tmp.inode, buf[:n])); werr != nil {
				return werr
			}
		}
		switch {
		case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
			return nil
		case err != nil:
			return err
		}
	}
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

// printfFormat encodes b as a printf format that prints exactly b on one
// line: "%" and "\" escaped, newlines as \n, other control bytes and
// invalid UTF-8 as octal escapes.
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
		case c == '\n':
			s.WriteString(`\n`)
		case c == '\t' || (c >= 0x20 && c < 0x7f):
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
