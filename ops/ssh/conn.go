package ssh

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/pkg/sftp"
	"golang.org/x/crypto/ssh"

	"github.com/pi-remote/pi-remote/ops"
)

// conn is one live SSH connection and everything multiplexed on it: the
// SFTP client and the pool of command servers. It dies once (keepalives
// unanswered, transport closed, Close) and is never revived; Host dials a
// new one.
type conn struct {
	host *Host
	d    *dialed

	dead     chan struct{}
	deadOnce sync.Once
	deadErr  error

	// Channel slots: servers + SFTP stay under the server's MaxSessions.
	mu    sync.Mutex
	limit int
	used  int
	idle  []*server
	freed chan struct{} // closed and replaced when a slot or server frees

	sftpOnce sync.Once
	sftp     *sftp.Client
	sftpErr  error

	probeOnce sync.Once
	probe     probe
}

func newConn(h *Host, d *dialed) *conn {
	c := &conn{host: h, d: d, dead: make(chan struct{}), limit: h.maxSessions(), freed: make(chan struct{})}
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

// keepalive sends keepalive@openssh.com every interval and kills the
// connection after count unanswered ones in a row. Any reply proves the
// server alive (OpenSSH answers with a failure).
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
		_, err := c.ping(context.Background(), interval)
		switch {
		case errors.Is(err, errNoAnswer):
			misses++
			if misses >= count {
				c.kill(fmt.Errorf("no answer to %d keepalives sent %s apart", count, interval))
				return
			}
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
			c.mu.Unlock()
			return s, nil
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
	if s != nil && !s.broken.Load() && !c.isDead() {
		c.idle = append(c.idle, s)
	} else {
		if s != nil {
			s.close()
		}
		c.used--
	}
	close(c.freed)
	c.freed = make(chan struct{})
	c.mu.Unlock()
}

// refused handles a channel the server would not open: the host allows
// fewer sessions than we assumed, so lower the limit to what is open now
// (at least one) and let the caller wait for a slot.
func (c *conn) refused() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.used--
	if c.used == 0 {
		return false // nothing of ours is open: a real refusal
	}
	c.limit = c.used
	return true
}

func isOpenRefused(err error) bool {
	var oce *ssh.OpenChannelError
	return errors.As(err, &oce)
}

// newSession opens a session channel within the slot limit. The caller
// calls release(nil) when done with it.
func (c *conn) newSession(ctx context.Context) (*ssh.Session, error) {
	if _, err := c.acquire(ctx, false); err != nil {
		return nil, err
	}
	return openChannel(ctx, c, c.d.client.NewSession)
}

// server returns a command server for one request: idle, or newly started.
// Give it back with release.
func (c *conn) server(ctx context.Context) (*server, error) {
	s, err := c.acquire(ctx, true)
	if err != nil || s != nil {
		return s, err
	}
	return openChannel(ctx, c, func() (*server, error) { return startServer(ctx, c.d.client, !c.host.opts.NoSetsid) })
}

// openChannel opens a channel with start in the slot the caller holds.
// When the server refuses it (it allows fewer sessions than we assumed),
// the limit drops to what is open and the call waits for a slot.
func openChannel[T any](ctx context.Context, c *conn, start func() (T, error)) (T, error) {
	var zero T
	for {
		v, err := start()
		switch {
		case err == nil:
			return v, nil
		case !isOpenRefused(err):
			c.release(nil)
			if ctx.Err() != nil {
				return zero, ctx.Err()
			}
			return zero, c.lost(err)
		case !c.refused():
			return zero, c.lost(err)
		}
		if _, err := c.acquire(ctx, false); err != nil {
			return zero, err
		}
	}
}

// sftpClient starts the SFTP client once per connection. A host without
// the subsystem gets (nil, nil): callers fall back to commands.
func (c *conn) sftpClient(ctx context.Context) (*sftp.Client, error) {
	if c.host.opts.NoSFTP {
		return nil, nil
	}
	c.sftpOnce.Do(func() {
		sess, err := c.newSession(ctx)
		if err != nil {
			c.sftpErr = err
			return
		}
		fail := func(err error) {
			sess.Close()
			c.release(nil)
			c.sftpErr = err
		}
		w, err := sess.StdinPipe()
		if err != nil {
			fail(err)
			return
		}
		r, err := sess.StdoutPipe()
		if err != nil {
			fail(err)
			return
		}
		if err := sess.RequestSubsystem("sftp"); err != nil {
			// No SFTP on this host: everything goes over commands.
			fail(nil)
			return
		}
		done := make(chan struct{})
		stop := context.AfterFunc(ctx, func() { sess.Close() })
		client, err := sftp.NewClientPipe(r, w, sftp.UseConcurrentWrites(true), sftp.UseConcurrentReads(true))
		stop()
		close(done)
		if err != nil {
			fail(nil)
			return
		}
		c.sftp = client
	})
	if c.sftpErr != nil {
		return nil, c.lost(c.sftpErr)
	}
	return c.sftp, nil
}
