package ssh

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pkg/sftp"
	gossh "golang.org/x/crypto/ssh"

	"github.com/pi-remote/pi-remote/ops"
)

// conn is one live SSH connection and everything multiplexed on it: the
// pool of command servers and, for bulk uploads, an SFTP client. It dies
// once (the link went silent, the transport closed, Close) and is never
// revived; Host dials a new one.
type conn struct {
	host *Host
	d    *dialed

	dead     chan struct{}
	deadOnce sync.Once
	deadErr  error

	// Session channels: servers + SFTP stay under limit, which drops to
	// what the server accepted when it refuses a channel and climbs back
	// towards max after sessionRetry.
	mu        sync.Mutex
	limit     int
	max       int
	loweredAt time.Time
	closedAt  time.Time // when we last closed a channel
	used      int
	idle      []*server
	freed     chan struct{} // closed and replaced when a slot or server frees

	// SFTP is opened on first need, and only while at least two servers
	// fit beside it; once the server refuses a channel it is closed (as
	// soon as no upload uses it) and not opened again on this connection.
	sftp        *sftp.Client
	sftpSess    *gossh.Session
	sftpUsers   int
	sftpOff     bool
	sftpOpening chan struct{}

	probeMu sync.Mutex
	probe   *probe
}

func newConn(h *Host, d *dialed) *conn {
	c := &conn{host: h, d: d, dead: make(chan struct{}), limit: h.maxSessions(), max: h.maxSessions(), freed: make(chan struct{})}
	go func() {
		err := d.client.Wait()
		if err == nil {
			err = io.EOF
		}
		c.kill(fmt.Errorf("connection closed: %v", err))
	}()
	go c.keepalive(h.cfg.KeepaliveInterval, h.cfg.KeepaliveCount)
	return c
}

// kill marks the connection dead and closes it, which unblocks every
// operation waiting on it.
func (c *conn) kill(err error) {
	c.deadOnce.Do(func() {
		c.deadErr = err
		close(c.dead)
		c.d.close()
	})
}

func (c *conn) isDead() bool {
	select {
	case <-c.dead:
		return true
	default:
		return false
	}
}

// lost turns an error seen on a dead connection into ErrConnectionLost.
// A channel often breaks a moment before the connection's reader notices
// that the transport is gone, so an error on a connection that still looks
// alive waits briefly for that verdict.
func (c *conn) lost(err error) error {
	if err == nil || errors.Is(err, ops.ErrConnectionLost) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	select {
	case <-c.dead:
	case <-time.After(500 * time.Millisecond):
		return err
	}
	return fmt.Errorf("%w: %s: %v", ops.ErrConnectionLost, c.host.cfg.String(), c.deadErr)
}

// keepalive watches the link: every interval without a byte from the host
// it sends keepalive@openssh.com, and after count such intervals in a row
// with neither an answer nor any other byte it kills the connection. Bytes
// received prove the link alive even when a keepalive waits behind a long
// upload on a slow uplink.
func (c *conn) keepalive(interval time.Duration, count int) {
	if interval <= 0 {
		return
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	misses := 0
	for {
		select {
		case <-c.dead:
			return
		case <-t.C:
		}
		if c.d.idle() < interval {
			misses = 0
			continue
		}
		_, err := c.ping(context.Background(), interval)
		switch {
		case errors.Is(err, errNoAnswer) && c.d.idle() >= interval:
			misses++
			if misses >= count {
				c.kill(fmt.Errorf("no answer from the host for %s (%d keepalives)", time.Duration(count)*interval, count))
				return
			}
		case errors.Is(err, errNoAnswer):
			misses = 0
		case err != nil:
			c.kill(fmt.Errorf("keepalive failed: %v", err))
			return
		default:
			misses = 0
		}
	}
}

var errNoAnswer = errors.New("no answer")

// ping sends one keepalive and waits, at most timeout, for any answer
// (OpenSSH answers with a failure, which proves it alive as well).
func (c *conn) ping(ctx context.Context, timeout time.Duration) (time.Duration, error) {
	start := time.Now()
	reply := make(chan error, 1)
	go func() {
		_, _, err := c.d.client.SendRequest("keepalive@openssh.com", true, nil)
		reply <- err
	}()
	select {
	case err := <-reply:
		return time.Since(start), err
	case <-time.After(timeout):
		return 0, errNoAnswer
	case <-ctx.Done():
		return 0, ctx.Err()
	case <-c.dead:
		return 0, c.lost(io.EOF)
	}
}

// acquire takes a channel slot, waiting while all are in use. It returns
// an idle server instead when one is available (and wantServer is set).
func (c *conn) acquire(ctx context.Context, wantServer bool) (*server, error) {
	for {
		c.mu.Lock()
		if wantServer && len(c.idle) > 0 {
			s := c.idle[len(c.idle)-1]
			c.idle = c.idle[:len(c.idle)-1]
			if s.broken.Load() {
				// Its shell ended while it was idle.
				c.used--
				c.closedAt = time.Now()
				c.mu.Unlock()
				s.close()
				continue
			}
			c.mu.Unlock()
			return s, nil
		}
		if c.used >= c.limit && c.limit < c.max && time.Since(c.loweredAt) >= c.host.sessionRetry() {
			// The refusal that lowered the limit may have been passing:
			// try one more channel (refused again, it waits as long).
			c.limit++
			c.loweredAt = time.Now()
		}
		if c.used < c.limit {
			c.used++
			c.mu.Unlock()
			return nil, nil
		}
		// With every slot held by an idle server, close one for a new
		// session of another kind.
		if !wantServer && len(c.idle) > 0 {
			s := c.idle[0]
			c.idle = c.idle[1:]
			c.closedAt = time.Now()
			c.mu.Unlock()
			s.close()
			return nil, nil
		}
		freed := c.freed
		c.mu.Unlock()
		select {
		case <-freed:
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-c.dead:
			return nil, c.lost(io.EOF)
		}
	}
}

// release gives back a slot (s == nil) or returns a server to the pool.
func (c *conn) release(s *server) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if s != nil && !s.broken.Load() && !c.isDead() {
		c.idle = append(c.idle, s)
	} else {
		if s != nil {
			s.close()
		}
		c.used--
		c.closedAt = time.Now()
	}
	c.notifyLocked()
}

func (c *conn) notifyLocked() {
	close(c.freed)
	c.freed = make(chan struct{})
}

// refused handles a channel the server would not open: it allows fewer
// sessions than we assumed, so the limit drops to what is open now and SFTP
// makes room for servers. It reports whether the caller may try again, and
// after how long: with nothing of ours open, a refusal is real unless a
// channel closed a moment ago (the host may not have let go of it yet).
func (c *conn) refused() (time.Duration, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.used--
	open := c.used
	c.sftpOff = true
	if c.sftp != nil && c.sftpUsers == 0 {
		c.closeSFTPLocked()
	}
	if open == 0 {
		if time.Since(c.closedAt) < 2*time.Second {
			return 100 * time.Millisecond, true
		}
		return 0, false
	}
	c.limit = open
	c.loweredAt = time.Now()
	return 0, true
}

func isOpenRefused(err error) bool {
	var oce *gossh.OpenChannelError
	return errors.As(err, &oce)
}

// server returns a command server for one request: idle, or newly started.
// Give it back with release.
func (c *conn) server(ctx context.Context) (*server, error) {
	for {
		s, err := c.acquire(ctx, true)
		if err != nil || s != nil {
			return s, err
		}
		s, err = startServer(ctx, c.d.client, !c.host.opts.NoSetsid)
		switch {
		case err == nil:
			return s, nil
		case !isOpenRefused(err):
			c.release(nil)
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			return nil, c.lost(err)
		}
		if wait, ok := c.refused(); !ok {
			return nil, c.lost(err)
		} else if wait > 0 {
			select {
			case <-time.After(wait):
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		// Wait for a slot, or take the server that frees first.
	}
}

// useSFTP returns the SFTP client for an upload, opening it on first use,
// and a function to call when the upload is done. It returns a nil client
// when SFTP is not to be used: the host has none, or too few sessions to
// spare one.
func (c *conn) useSFTP(ctx context.Context) (*sftp.Client, func(), error) {
	if c.host.opts.NoSFTP {
		return nil, nil, nil
	}
	for {
		c.mu.Lock()
		switch {
		case c.sftp != nil && !c.sftpOff:
			c.sftpUsers++
			sc := c.sftp
			c.mu.Unlock()
			return sc, c.doneSFTP, nil
		case c.sftpOff || c.limit < 3:
			c.mu.Unlock()
			return nil, nil, nil
		case c.sftpOpening != nil:
			opening := c.sftpOpening
			c.mu.Unlock()
			select {
			case <-opening:
				continue
			case <-ctx.Done():
				return nil, nil, ctx.Err()
			}
		}
		opening := make(chan struct{})
		c.sftpOpening = opening
		c.mu.Unlock()
		err := c.openSFTP(ctx)
		c.mu.Lock()
		c.sftpOpening = nil
		close(opening)
		c.mu.Unlock()
		if err != nil {
			return nil, nil, err
		}
	}
}

func (c *conn) doneSFTP() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.sftpUsers--
	if c.sftpOff && c.sftpUsers == 0 && c.sftp != nil {
		c.closeSFTPLocked()
		c.notifyLocked()
	}
}

func (c *conn) closeSFTPLocked() {
	c.sftp.Close()
	c.sftpSess.Close()
	c.sftp, c.sftpSess = nil, nil
	c.used--
	c.closedAt = time.Now()
}

// openSFTP starts the subsystem in a slot of its own. A host without it,
// or one that refuses the channel, turns SFTP off for the connection.
func (c *conn) openSFTP(ctx context.Context) error {
	if _, err := c.acquire(ctx, false); err != nil {
		return err
	}
	sess, err := c.d.client.NewSession()
	if err != nil {
		if isOpenRefused(err) {
			c.refused() // turns SFTP off
			return nil
		}
		c.release(nil)
		return c.lost(err)
	}
	off := func() error {
		sess.Close()
		c.mu.Lock()
		c.sftpOff = true
		c.mu.Unlock()
		c.release(nil)
		return nil
	}
	w, err := sess.StdinPipe()
	if err != nil {
		return off()
	}
	r, err := sess.StdoutPipe()
	if err != nil {
		return off()
	}
	if err := sess.RequestSubsystem("sftp"); err != nil {
		return off()
	}
	stop := context.AfterFunc(ctx, func() { sess.Close() })
	client, err := sftp.NewClientPipe(r, w, sftp.UseConcurrentWrites(true), sftp.UseConcurrentReads(true))
	if !stop() {
		if client != nil {
			client.Close()
		}
		off()
		return ctx.Err()
	}
	if err != nil {
		return off()
	}
	c.mu.Lock()
	c.sftp, c.sftpSess = client, sess
	c.mu.Unlock()
	return nil
}

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
	status string
	err    error
}

// serve sends r to s and copies the answer's output to w
// (never after serve returns) until the marker; it returns the status. s
// goes back to the pool, or is closed when its state is unknown. See
// requestKind for what cancellation does.
func (c *conn) serve(ctx context.Context, s *server, kind requestKind, w io.Writer, r request) (string, error) {
	if err := ctx.Err(); err != nil {
		c.release(s)
		return "", err
	}
	gate := &gatedWriter{w: w}
	sent := make(chan error, 1)
	done := make(chan answer, 1)
	go func() {
		err := s.send(r)
		sent <- err
		if err != nil {
			done <- answer{err: err}
			return
		}
		st, err := s.readUntilMarker(gate)
		done <- answer{st, err}
	}()
	select {
	case a := <-done:
		return c.finish(s, gate, a)
	case <-c.dead:
		return "", c.abandon(s, gate, done)
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
		return "", ctx.Err()
	case change:
		select {
		case a := <-done:
			return c.finish(s, gate, a)
		case <-c.dead:
			return "", c.abandon(s, gate, done)
		}
	}
	// A job: kill it once the request is out, and wait for the end.
	select {
	case err := <-sent:
		if err == nil {
			err = s.cancel()
		}
		if err != nil {
			return "", c.abandon(s, gate, done)
		}
	case <-c.dead:
		return "", c.abandon(s, gate, done)
	}
	select {
	case a := <-done:
		if _, err := c.finish(s, gate, a); err != nil {
			return "", err
		}
		return "", ctx.Err()
	case <-c.dead:
		return "", c.abandon(s, gate, done)
	case <-time.After(killWait):
		c.abandon(s, gate, done)
		return "", ctx.Err()
	}
}

// finish ends a request that got its answer.
func (c *conn) finish(s *server, gate *gatedWriter, a answer) (string, error) {
	gate.shut()
	c.release(s)
	if a.err != nil {
		return "", c.lost(fmt.Errorf("command server: %w%s", a.err, s.stderr.suffix()))
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

// lastRead records when bytes last arrived from the host.
type lastRead struct {
	net.Conn
	at atomic.Int64 // unix nanoseconds
}

func (l *lastRead) Read(p []byte) (int, error) {
	n, err := l.Conn.Read(p)
	if n > 0 {
		l.at.Store(time.Now().UnixNano())
	}
	return n, err
}
