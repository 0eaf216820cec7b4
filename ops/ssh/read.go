package ssh

import (
	"bufio"
	"context"
	"errors"
	"io"
	"io/fs"
	"strings"
	"sync"
)

// Open implements ops.ReadOperations with server.sh's open_file: one
// request checks the file and streams it from a single open, so a file
// replaced meanwhile is never mixed with its new version and pseudo files
// that read in short chunks come whole. The stream is flow-controlled by
// the SSH channel: only what the caller reads (plus spoolSize and the
// channel's window) crosses the network, and Close stops the read on the
// host. An open whose connection drops before the host answered is tried
// again once the host is back (see again); a read that loses it later
// fails.
func (h *Host) Open(ctx context.Context, name string) (rc io.ReadCloser, err error) {
	err = h.again(ctx, func() error {
		rc, err = h.open(ctx, name)
		return err
	})
	return rc, err
}

func (h *Host) open(ctx context.Context, name string) (io.ReadCloser, error) {
	c, err := h.conn(ctx)
	if err != nil {
		return nil, err
	}
	s, err := c.server(ctx)
	if err != nil {
		return nil, err
	}
	rctx, cancel := context.WithCancel(ctx)
	sp := newSpool(spoolSize)
	r := &reader{ctx: ctx, cancel: cancel, name: name, spool: sp, br: bufio.NewReaderSize(sp, 32<<10)}
	// Ends with the request: at the end of the file, or soon after Close.
	go func() {
		status, err := c.serve(rctx, s, job, sp, call("open_file", name))
		if err == nil && status != "0" {
			_, _, err = checkStatus("read", name, status, nil)
		}
		sp.end(err)
	}()
	line, err := r.br.ReadString('\n')
	if err != nil {
		r.Close()
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, err
	}
	if _, _, err := checkStatus("open", name, strings.TrimSuffix(line, "\n"), nil); err != nil {
		r.Close()
		return nil, err
	}
	return r, nil
}

type reader struct {
	ctx    context.Context
	cancel context.CancelFunc
	name   string
	spool  *spool
	br     *bufio.Reader
}

func (r *reader) Read(p []byte) (int, error) {
	if err := r.ctx.Err(); err != nil {
		return 0, err
	}
	n, err := r.br.Read(p)
	if err != nil && !errors.Is(err, io.EOF) {
		if cerr := r.ctx.Err(); cerr != nil {
			return n, cerr
		}
		var pe *fs.PathError
		if !errors.As(err, &pe) {
			err = &fs.PathError{Op: "read", Path: r.name, Err: err}
		}
	}
	return n, err
}

// Close stops the stream: a read still running on the host is killed and
// the rest of its output drained in the background, after which the server
// serves others.
func (r *reader) Close() error {
	r.cancel()
	r.spool.Close()
	return nil
}

// spoolSize is how much of a file is read ahead of its reader: a file up to
// this size frees its server as soon as it has arrived, whatever the
// caller does with it (on a host that allows one session, the caller may
// need that server next).
const spoolSize = 1 << 20

// spool is a pipe with a buffer: Write blocks only while size bytes wait
// unread, and fails once the reader has closed.
type spool struct {
	mu     sync.Mutex
	cond   *sync.Cond
	buf    []byte
	size   int
	done   bool  // the writer has ended
	err    error // and why (nil: end of file)
	closed bool  // the reader has gone
}

func newSpool(size int) *spool {
	s := &spool{size: size}
	s.cond = sync.NewCond(&s.mu)
	return s
}

func (s *spool) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for len(s.buf) >= s.size && !s.closed {
		s.cond.Wait()
	}
	if s.closed {
		return 0, io.ErrClosedPipe
	}
	s.buf = append(s.buf, p...)
	s.cond.Broadcast()
	return len(p), nil
}

func (s *spool) Read(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for len(s.buf) == 0 && !s.done && !s.closed {
		s.cond.Wait()
	}
	switch {
	case len(s.buf) > 0:
		n := copy(p, s.buf)
		s.buf = s.buf[n:]
		if len(s.buf) == 0 {
			s.buf = nil
		}
		s.cond.Broadcast()
		return n, nil
	case s.closed:
		return 0, io.ErrClosedPipe
	case s.err != nil:
		return 0, s.err
	}
	return 0, io.EOF
}

// end is the writer's close: reads return err (nil: io.EOF) once the
// buffer is empty.
func (s *spool) end(err error) {
	s.mu.Lock()
	s.done, s.err = true, err
	s.cond.Broadcast()
	s.mu.Unlock()
}

// Close is the reader's: writes fail from now on.
func (s *spool) Close() error {
	s.mu.Lock()
	s.closed = true
	s.cond.Broadcast()
	s.mu.Unlock()
	return nil
}
