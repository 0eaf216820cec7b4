package ssh

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"io/fs"
	"strings"
	"sync"

	"github.com/pi-remote/pi-remote/ops"
	"github.com/pi-remote/pi-remote/ops/ssh/internal/hostproto"
)

// Open implements ops.ReadOperations with the server's read_head for a
// regular file up to readHeadSize bytes, open_file for anything else.
// read_head is a short request that may go behind others on a busy
// server: the files tools read and edit are most often that small, and
// come whole in one round trip. open_file checks the file and streams it
// from a single open, so a file replaced meanwhile is never mixed with its
// new version and pseudo files that read in short chunks come whole. The
// stream is flow-controlled by the SSH channel: only what the caller reads
// (plus spoolSize and the channel's window) crosses the network, and Close
// stops the read on the host.
//
// When the connection drops, a stream waits for the host (as commands do,
// up to HostOptions.ReattachTimeout) and goes on from the byte it had
// reached, in a new open of the file: a file rewritten in place during
// the outage may then be read partly old, partly new (an edit's guarded
// write notices that).
func (h *Host) Open(ctx context.Context, name string) (io.ReadCloser, error) {
	head, whole, err := h.readHead(ctx, name)
	if err == nil && whole {
		return &reader{h: h, ctx: ctx, name: name, head: head}, nil
	}
	// A longer file is read from a single open, from its start.
	if err != nil && !errors.Is(err, errStreamOnly) {
		return nil, err
	}
	var s *stream
	err = h.again(ctx, func() (err error) {
		s, err = h.openAt(ctx, name, 0)
		return err
	})
	if err != nil {
		return nil, err
	}
	return &reader{h: h, ctx: ctx, name: name, s: s}, nil
}

// readHeadSize is how much of a file Open asks for with read_head.
const readHeadSize = 256 << 10

// errStreamOnly: read_head did not read the file (the host's head
// failed); open_file will, or says why not.
var errStreamOnly = errors.New("read with open_file")

// readHead reads the first readHeadSize bytes of name with read_head;
// whole says that is all of it.
func (h *Host) readHead(ctx context.Context, name string) (head []byte, whole bool, err error) {
	var buf bytes.Buffer
	err = h.again(ctx, func() error {
		buf.Reset()
		c, err := h.ready(ctx)
		if err != nil {
			return err
		}
		s, err := c.server(ctx, false)
		if err != nil {
			return err
		}
		final, err := c.serve(ctx, s, query, &buf, hostproto.ReadHead(name, readHeadSize))
		if err != nil {
			return err
		}
		status, payload, _ := bytes.Cut(buf.Bytes(), []byte("\n"))
		if final.Kind != hostproto.Exited {
			return errStreamOnly
		}
		if _, _, err := checkStatus("open", name, string(status), nil); err != nil {
			return c.mismatch(err)
		}
		head = payload
		return nil
	})
	return head, err == nil && len(head) < readHeadSize, err
}

// stream is one open_file request.
type stream struct {
	cancel context.CancelFunc
	spool  *spool
	br     *bufio.Reader
}

// close stops the stream: a read still running on the host is killed and
// the rest of its output drained in the background, after which the server
// serves others.
func (s *stream) close() {
	s.cancel()
	s.spool.Close()
}

// openAt sends open_file for name from byte off and waits for its status.
func (h *Host) openAt(ctx context.Context, name string, off int64) (*stream, error) {
	c, err := h.ready(ctx)
	if err != nil {
		return nil, err
	}
	srv, err := c.server(ctx, true)
	if err != nil {
		return nil, err
	}
	rctx, cancel := context.WithCancel(ctx)
	sp := newSpool(spoolSize)
	s := &stream{cancel: cancel, spool: sp, br: bufio.NewReaderSize(sp, 32<<10)}
	r := hostproto.OpenFile(name, off)
	// Ends with the request: at the end of the file, or soon after close.
	go func() {
		status, err := c.serve(rctx, srv, job, sp, r)
		if err == nil && status.Kind == hostproto.Failed {
			_, _, err = checkStatus("read", name, status.Arg, nil)
		}
		sp.end(err)
	}()
	line, err := s.br.ReadString('\n')
	if err != nil {
		s.close()
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, err
	}
	if _, _, err := checkStatus("open", name, strings.TrimSuffix(line, "\n"), nil); err != nil {
		err = c.mismatch(err)
		s.close()
		return nil, err
	}
	return s, nil
}

type reader struct {
	h    *Host
	ctx  context.Context
	name string
	head []byte  // a whole file read by read_head, what Read has not returned yet
	s    *stream // open_file (nil: read_head read it all)
	read int64   // bytes returned so far
}

func (r *reader) Read(p []byte) (int, error) {
	for {
		if err := r.ctx.Err(); err != nil {
			return 0, err
		}
		if len(r.head) > 0 {
			n := copy(p, r.head)
			r.head = r.head[n:]
			r.read += int64(n)
			return n, nil
		}
		if r.s == nil {
			return 0, io.EOF
		}
		n, err := r.s.br.Read(p)
		r.read += int64(n)
		if n > 0 || err == nil || errors.Is(err, io.EOF) {
			return n, err
		}
		if errors.Is(err, ops.ErrConnectionLost) && r.resume() {
			continue
		}
		if cerr := r.ctx.Err(); cerr != nil {
			return 0, cerr
		}
		var pe *fs.PathError
		if !errors.As(err, &pe) {
			err = &fs.PathError{Op: "read", Path: r.name, Err: err}
		}
		return 0, err
	}
}

// resume opens the file again from where the reader is, once the host
// answers again.
func (r *reader) resume() bool {
	h := r.h
	if h.opts.ReattachTimeout < 0 || h.awaitHost(r.ctx, h.reattachTimeout()) != nil {
		return false
	}
	var s *stream
	err := h.again(r.ctx, func() (err error) {
		s, err = h.openAt(r.ctx, r.name, r.read)
		return err
	})
	if err != nil {
		return false
	}
	r.s.close()
	r.s = s
	return true
}

// Close stops the stream, if any.
func (r *reader) Close() error {
	r.head = nil
	if r.s != nil {
		r.s.close()
	}
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
