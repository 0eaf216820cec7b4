package ssh

import (
	"bytes"
	"context"
	"crypto/md5"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/pkg/sftp"

	"github.com/pi-remote/pi-remote/ops"
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
// owner and mode, filled, synced, checked against the guard digest on the
// host, and renamed over the target. A small content travels inside that
// one request; a larger one fills the temporary file over SFTP (or in
// chunks through the server) between a create and a commit request.
//
// A request that reached the host is waited for even when ctx ends: when
// WriteFile returns, the write has happened or never will.
func (h *Host) WriteFile(ctx context.Context, name string, r io.Reader, opts ops.WriteOptions) (err error) {
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
	octal := strconv.FormatUint(uint64(perm.Perm()), 8)
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
			_, expected, err := c.call(ctx, change, "write", name, "create_temp", name, "600", randomHex(8), parents)
			if err != nil {
				return err
			}
			defer func() {
				if err == nil {
					return // the commit removed it
				}
				cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
				defer cancel()
				h.call(cctx, change, "write", name, "remove_temp", string(expected))
			}()
			if err := h.upload(ctx, c, string(expected), bytes.NewReader(opts.Guard.Content)); err != nil {
				return err
			}
			digest = "bytes:" + string(expected)
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
			_, _, err := c.call(ctx, change, "write", name, "write_inline", name, octal, digest, randomHex(8), format, parents)
			return err
		}
	case err != nil:
		return fmt.Errorf("write %s: %w", name, err)
	}

	_, tmp, err := c.call(ctx, change, "write", name, "create_temp", name, octal, randomHex(8), parents)
	if err != nil {
		return err
	}
	err = h.upload(ctx, c, string(tmp), io.MultiReader(bytes.NewReader(head), r))
	if err == nil {
		err = ctx.Err()
	}
	if err != nil {
		// Leave no temporary file behind, even when ctx is what ended (on
		// a new connection if this one is gone).
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		h.call(cctx, change, "write", name, "remove_temp", string(tmp))
		return err
	}
	_, _, err = c.call(ctx, change, "write", name, "commit_temp", name, string(tmp), digest)
	return err
}

// upload fills the (existing, empty) temporary file tmp with r.
func (h *Host) upload(ctx context.Context, c *conn, tmp string, r io.Reader) error {
	src := &sourceReader{r: ops.CtxReader(ctx, r)}
	r = src
	sc, done, err := c.useSFTP(ctx)
	if err != nil {
		return err
	}
	if sc == nil {
		return h.uploadInChunks(ctx, c, tmp, r)
	}
	defer done()
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
		if src.err != nil {
			return src.err
		}
		var se *sftp.StatusError
		if errors.As(err, &se) && se.FxCode() == sftp.ErrSSHFxFailure && !c.isDead() {
			// SFTP says only "Failure" for a full disk, a quota, an I/O
			// error: the host's shell can tell which.
			if _, _, derr := c.call(ctx, change, "write", tmp, "diagnose_write", tmp); derr != nil {
				return derr
			}
		}
		return sftpError(c, "write", tmp, err)
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
// exactly (receive_temp). It needs no session of its own.
func (h *Host) uploadInChunks(ctx context.Context, c *conn, tmp string, r io.Reader) error {
	buf := make([]byte, uploadChunk)
	for {
		n, err := io.ReadFull(r, buf)
		if n > 0 {
			if _, _, werr := c.callData(ctx, change, "write", tmp, buf[:n], "receive_temp", tmp, strconv.Itoa(n)); werr != nil {
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

// digestMethods are the host tools a guarded write can check the file
// with, best first; "bytes" (cmp against an uploaded copy) is the last
// resort.
var digestMethods = []string{"sha256sum", "shasum", "openssl", "md5sum", "cksum"}

// contentDigest is what server.sh's file_digest prints for content with
// method (one of digestMethods).
func contentDigest(content []byte, method string) string {
	switch method {
	case "sha256sum", "shasum", "openssl":
		sum := sha256.Sum256(content)
		return method + ":" + hex.EncodeToString(sum[:])
	case "md5sum":
		sum := md5.Sum(content)
		return method + ":" + hex.EncodeToString(sum[:])
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
