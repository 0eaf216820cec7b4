package ssh

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pkg/sftp"
	gossh "golang.org/x/crypto/ssh"

	"github.com/pi-remote/pi-remote/ops"
	"github.com/pi-remote/pi-remote/ops/ssh/reach"
)

// conn is one live SSH connection and everything multiplexed on it: the
// pool of command servers and, for bulk uploads, an SFTP client. It dies
// once (the link went silent, the transport closed, Close) and is never
// revived; Host dials a new one.
type conn struct {
	host  *Host
	link  *reach.Link
	epoch uint64 // the how-manieth connection of host this is (Host.epochs)

	dead     chan struct{}
	deadOnce sync.Once
	deadErr  error
	silent   atomic.Bool // declared dead for want of an answer (keepalive)

	// Session channels: servers + SFTP stay under limit, which drops to
	// what the server accepted when it refuses a channel and climbs back
	// towards max after sessionRetry.
	mu        sync.Mutex
	limit     int
	max       int
	loweredAt time.Time
	closedAt  time.Time // when we last closed a channel
	used      int
	idle      []*server     // nothing in flight
	busy      []*server     // requests in flight (poolEntry.inFlight)
	freed     chan struct{} // closed and replaced when a slot or server frees
	lettingGo int           // servers asked to let go of their command
	group     *group        // the batch request commands join, if one runs (group.go)
	ending    int           // requests whose answer ends: their servers are back within a round trip (markEnding)
	starting  int           // servers warm-up is starting for the pool (grow)
	spawned   int           // slots held by spawned processes (spawn.go)

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

func newConn(h *Host, link *reach.Link) *conn {
	c := &conn{host: h, link: link, epoch: h.epochs.Add(1), dead: make(chan struct{}), limit: h.maxSessions(), max: h.maxSessions(), freed: make(chan struct{})}
	go func() {
		err := link.Client().Wait()
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
		c.link.Close()
	})
}

// abort kills a connection declared dead. Its socket is reset rather than
// closed: what the kernel still holds for the host is dropped, where a
// close would have it delivered once a partition heals, to servers that
// sshd still thinks connected (serve.sh's fence_start stops those too).
func (c *conn) abort(err error) {
	c.link.Reset()
	c.kill(err)
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
// alive waits briefly for that verdict. A protocol error (errProtocol)
// closes the connection, and is returned as it is: the requests in flight
// on it see a lost connection and go on over a new one, the one that got
// the answer it could not match fails.
func (c *conn) lost(err error) error {
	if errors.Is(err, errProtocol) {
		c.kill(fmt.Errorf("closed after an answer that matched no request: %w", err))
		return err
	}
	if err == nil || errors.Is(err, ops.ErrConnectionLost) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	select {
	case <-c.dead:
	case <-time.After(500 * time.Millisecond):
		if err == io.EOF {
			// Never a bare "EOF" for the user.
			return fmt.Errorf("%s closed a channel unexpectedly: %w", c.host.cfg.String(), err)
		}
		return err
	}
	return fmt.Errorf("%w: %s: %v", ops.ErrConnectionLost, c.host.cfg.String(), c.deadErr)
}

// keepalive watches the link: once no byte has come from the host for
// interval it sends keepalive@openssh.com (one at a time; any answer, even
// OpenSSH's failure reply, is bytes that prove the link alive), and once
// nothing has come for count intervals it kills the connection. It looks
// every second (or interval/5 when shorter), so a black-holed link is
// declared dead at most that long after count*interval of silence. Bytes
// received prove the link alive even when a keepalive waits behind a long
// upload on a slow uplink.
func (c *conn) keepalive(interval time.Duration, count int) {
	if interval <= 0 {
		return
	}
	limit := time.Duration(count) * interval
	t := time.NewTicker(min(time.Second, interval/5))
	defer t.Stop()
	var inFlight atomic.Bool
	for {
		select {
		case <-c.dead:
			return
		case <-t.C:
		}
		idle := c.link.Idle()
		if idle >= limit {
			c.silent.Store(true)
			c.abort(fmt.Errorf("no answer from the host for %s (%d keepalives)", idle.Round(time.Second), count))
			return
		}
		if idle >= interval && inFlight.CompareAndSwap(false, true) {
			go func() {
				defer inFlight.Store(false)
				if _, _, err := c.link.Client().SendRequest("keepalive@openssh.com", true, nil); err != nil {
					c.abort(fmt.Errorf("keepalive failed: %v", err))
				}
			}()
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
		_, _, err := c.link.Client().SendRequest("keepalive@openssh.com", true, nil)
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
