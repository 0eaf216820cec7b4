package ssh

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/pi-remote/pi-remote/ops/ssh/internal/hostproto"
)

// requestKind says what a caller that gives up (ctx done) may do about a
// request already sent.
type requestKind int

const (
	// query only reads: the caller gets ctx's error at once; the answer is
	// drained in the background and the server goes back to the pool.
	query requestKind = iota
	// change alters the host. A request that reached the host runs, so
	// the caller waits for its answer (or for the connection to die):
	// nothing it asked for can happen after it returned.
	change
	// job runs until it ends or is killed: the caller has it killed on
	// the host and waits for that.
	job
)

// drainLimit bounds how long a server may take to answer a request its
// caller gave up on before it is closed; killWait, how long a job takes to
// die.
const (
	drainLimit = 30 * time.Second
	killWait   = 10 * time.Second
)

type answer struct {
	status hostproto.Status
	err    error
}

// serve sends r to s and copies the answer's output to w
// (never after serve returns) until the marker; it returns the status: of
// the one job r is about, for a request answered in frames (readJob). s
// goes back to the pool, or is closed when its state is unknown. See
// requestKind for what cancellation does.
func (c *conn) serve(ctx context.Context, s *server, kind requestKind, w io.Writer, r hostproto.Request) (hostproto.Status, error) {
	var none hostproto.Status
	if err := ctx.Err(); err != nil {
		c.release(s)
		return none, err
	}
	gate := &gatedWriter{w: w}
	sent := make(chan error, 1)
	done := make(chan answer, 1)
	go func() {
		prev, mine, err := s.post(r)
		defer close(mine)
		sent <- err
		if err != nil {
			done <- answer{err: err}
			return
		}
		if prev != nil {
			<-prev
		}
		var st hostproto.Status
		if r.Framed() {
			st, err = readJob(s, r, gate)
		} else {
			var line string
			line, err = s.readUntilMarker(gate)
			if err == nil {
				if st, err = r.Answer(line); err != nil {
					s.broken.Store(true)
				}
			}
		}
		done <- answer{st, err}
	}()
	select {
	case a := <-done:
		return c.finish(s, gate, a)
	case <-c.dead:
		return none, c.abandon(s, gate, done)
	case <-ctx.Done():
	}
	switch kind {
	case query:
		gate.shut()
		// Finishes within drainLimit, or when the connection dies.
		go func() {
			select {
			case a := <-done:
				c.finish(s, gate, a)
				return
			case <-c.dead:
			case <-time.After(drainLimit):
			}
			c.abandon(s, gate, done)
		}()
		return none, ctx.Err()
	case change:
		select {
		case a := <-done:
			return c.finish(s, gate, a)
		case <-c.dead:
			return none, c.abandon(s, gate, done)
		}
	}
	// A job: kill it once the request is out, and wait for the end.
	select {
	case err := <-sent:
		if err == nil {
			err = s.control(hostproto.Kill)
		}
		if err != nil {
			return none, c.abandon(s, gate, done)
		}
	case <-c.dead:
		return none, c.abandon(s, gate, done)
	}
	select {
	case a := <-done:
		status, err := c.finish(s, gate, a)
		if err != nil {
			return none, err
		}
		if status.Kind == hostproto.Detached {
			// Let go of as the kill came: it may run on.
			return none, fmt.Errorf("%w (%w)", ctx.Err(), errKillUnconfirmed)
		}
		return none, ctx.Err()
	case <-c.dead:
		return none, c.abandon(s, gate, done)
	case <-time.After(killWait):
		c.abandon(s, gate, done)
		return none, fmt.Errorf("%w (%w)", ctx.Err(), errKillUnconfirmed)
	}
}

// errKillUnconfirmed: a job's server did not answer the kill in time and
// was given up on; the job may still run.
var errKillUnconfirmed = errors.New("the host did not confirm the kill")

// finish ends a request that got its answer.
func (c *conn) finish(s *server, gate *gatedWriter, a answer) (hostproto.Status, error) {
	gate.shut()
	c.release(s)
	if a.err != nil {
		return hostproto.Status{}, c.lost(fmt.Errorf("command server: %w%s", a.err, s.stderr.suffix()))
	}
	return a.status, nil
}

// abandon closes a server whose request will not be answered (the
// connection died, or the server stopped responding) and frees its slot
// once its reader has stopped.
func (c *conn) abandon(s *server, gate *gatedWriter, done <-chan answer) error {
	gate.shut()
	s.close()
	var a answer
	select {
	case a = <-done:
		c.release(s)
	case <-time.After(2 * time.Second):
		// The reader stops once the closed channel drains.
		go func() { <-done; c.release(s) }()
		a.err = errServerExited
	}
	if a.err == nil {
		a.err = errServerExited
	}
	return c.lost(a.err)
}

// gatedWriter passes writes through until shut, then drops them.
type gatedWriter struct {
	mu     sync.Mutex
	w      io.Writer
	closed bool
}

func (g *gatedWriter) Write(p []byte) (int, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return len(p), nil
	}
	return g.w.Write(p)
}

func (g *gatedWriter) shut() {
	g.mu.Lock()
	g.closed = true
	g.mu.Unlock()
}

// call runs one of the server's file functions (r: a request of
// hostproto's file function builders) through its call wrapper and splits
// the status line ("OK ..." or "E CODE message") from the payload; an
// error status becomes a *fs.PathError for op and name.
func (c *conn) call(ctx context.Context, kind requestKind, op, name string, r hostproto.Request) (string, []byte, error) {
	// With data, a server of its own, as for a request that reads the
	// request stream: the host reads the data with head -c, and BusyBox's
	// head reads on past its count, taking any request sent behind the
	// data with it.
	s, err := c.server(ctx, r.Data != nil)
	if err != nil {
		return "", nil, err
	}
	var buf bytes.Buffer
	if _, err := c.serve(ctx, s, kind, &buf, r); err != nil {
		return "", nil, err
	}
	status, payload, _ := bytes.Cut(buf.Bytes(), []byte("\n"))
	st, p, err := checkStatus(op, name, string(status), payload)
	return st, p, c.mismatch(err)
}

// mismatch closes the connection when err is a protocol error (see lost),
// and returns err.
func (c *conn) mismatch(err error) error {
	if errors.Is(err, errProtocol) {
		return c.lost(err)
	}
	return err
}

// errProtocol is wrapped by the error of an answer that matches no answer
// its request may have (see hostproto.ErrProtocol): conn.lost closes the
// connection.
var errProtocol = hostproto.ErrProtocol
