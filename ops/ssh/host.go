// Package ssh implements the ops contract on a remote host over one
// persistent SSH connection (golang.org/x/crypto/ssh), with nothing on the
// host but sshd and a POSIX shell.
//
// One Host owns at most one live connection at a time. On it run a pool of
// long-lived sh command servers (see server: a command or a small file
// operation costs one round trip, not a new session) and, for bulk
// transfers, one SFTP client. Keepalives notice a dead connection; the next
// operation dials a new one, with backoff after failures. Concurrent
// callers share one dial.
package ssh

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
	"sync"
	"time"

	"github.com/pi-remote/pi-remote/ops"
)

// HostOptions tune a Host beyond what Config says about reaching it.
type HostOptions struct {
	// NoSFTP makes every file operation go over commands, as on a host
	// without the SFTP subsystem.
	NoSFTP bool
	// MaxSessions caps the session channels open at once (command servers
	// plus SFTP). Default 8, under OpenSSH's MaxSessions of 10 with room for
	// a kill. Lowered automatically when the server refuses a channel.
	MaxSessions int
	// NoGNUFind pretends the host lacks GNU find, to exercise the POSIX
	// directory listing.
	NoGNUFind bool
	// NoSetsid pretends the host lacks setsid (macOS, for one): commands
	// then share their server's process group, and cancelling one kills
	// that server with it.
	NoSetsid bool
}

// Host is the ops backend for one remote host. It is safe for concurrent
// use and connects lazily.
type Host struct {
	cfg  Config
	opts HostOptions

	mu       sync.Mutex
	cur      *conn
	dialing  chan struct{} // non-nil while a dial runs; closed when it ends
	lastErr  error
	failures int
	retryAt  time.Time
	closed   bool
}

var (
	_ ops.Operations = (*Host)(nil)
	_ ops.Resolver   = (*Host)(nil)
)

// New returns a Host for cfg. Nothing is dialled until the first operation
// (or Connect).
func New(cfg Config, opts HostOptions) *Host {
	if cfg.KeepaliveCount <= 0 {
		cfg.KeepaliveCount = defaultKeepaliveCount
	}
	if cfg.ConnectTimeout <= 0 {
		cfg.ConnectTimeout = defaultConnectTimeout
	}
	return &Host{cfg: cfg, opts: opts}
}

// Config is the resolved configuration of the host.
func (h *Host) Config() Config { return h.cfg }

func (h *Host) maxSessions() int {
	if h.opts.MaxSessions > 0 {
		return h.opts.MaxSessions
	}
	return 8
}

var errClosed = errors.New("host closed")

// Close closes the connection. Operations after Close fail.
func (h *Host) Close() error {
	h.mu.Lock()
	h.closed = true
	c := h.cur
	h.mu.Unlock()
	if c != nil {
		c.kill(errClosed)
	}
	return nil
}

// conn returns the live connection, dialing one when there is none.
func (h *Host) conn(ctx context.Context) (*conn, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return nil, errClosed
	}
	if h.cur != nil && !h.cur.isDead() {
		c := h.cur
		h.mu.Unlock()
		return c, nil
	}
	if h.dialing == nil {
		if h.lastErr != nil && time.Now().Before(h.retryAt) {
			err := h.lastErr
			h.mu.Unlock()
			return nil, err
		}
		h.dialing = make(chan struct{})
		go h.dial(h.dialing)
	}
	ch := h.dialing
	h.mu.Unlock()

	select {
	case <-ch:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.cur != nil && !h.cur.isDead() {
		return h.cur, nil
	}
	if h.lastErr != nil {
		return nil, h.lastErr
	}
	return nil, &ConnectError{Host: h.cfg.String(), Err: errors.New("connection closed right after it was made")}
}

// dial runs without the caller's context: callers may give up waiting,
// but the connection they asked for is still worth having.
func (h *Host) dial(done chan struct{}) {
	d, err := dial(context.Background(), &h.cfg)
	h.mu.Lock()
	defer h.mu.Unlock()
	defer close(done)
	h.dialing = nil
	if err != nil {
		h.failures++
		h.lastErr = err
		h.retryAt = time.Now().Add(backoff(h.failures))
		return
	}
	if h.closed {
		d.close()
		return
	}
	h.failures, h.lastErr = 0, nil
	h.cur = newConn(h, d)
	go h.cur.sftpClient(context.Background()) // warm up; errors surface on use
}

// backoff is the pause before redialing after n failures in a row:
// 250 ms doubling up to 5 s, with ±20% jitter.
func backoff(n int) time.Duration {
	d := 250 * time.Millisecond << min(n-1, 5)
	d = min(d, 5*time.Second)
	return time.Duration(float64(d) * (0.8 + 0.4*rand.Float64()))
}

// Info describes an established connection, for `pi-remote check`.
type Info struct {
	Config  Config
	Auth    string
	HostKey string
	SFTP    bool
	Setsid  bool
	Tools   []string // helpers found on the host (sha256sum, readlink, gnufind)
	RTT     time.Duration
}

// Connect dials (or reuses) the connection and reports on it.
func (h *Host) Connect(ctx context.Context) (Info, error) {
	c, err := h.conn(ctx)
	if err != nil {
		return Info{}, err
	}
	info := Info{Config: h.cfg, Auth: c.d.auth, HostKey: c.d.hostKey}
	sc, err := c.sftpClient(ctx)
	if err != nil {
		return info, err
	}
	info.SFTP = sc != nil
	s, err := c.server(ctx)
	if err != nil {
		return info, err
	}
	info.Setsid = s.setsid
	c.release(s)
	p, err := c.probed(ctx)
	if err != nil {
		return info, err
	}
	info.Tools = p.names
	if info.RTT, err = c.ping(ctx, c.host.cfg.ConnectTimeout); err != nil {
		return info, c.lost(err)
	}
	return info, nil
}

// Ping costs one round trip; it fails when the connection is gone.
func (h *Host) Ping(ctx context.Context) (time.Duration, error) {
	c, err := h.conn(ctx)
	if err != nil {
		return 0, err
	}
	d, err := c.ping(ctx, h.cfg.ConnectTimeout)
	if err != nil {
		return 0, c.lost(err)
	}
	return d, nil
}

// probe is what the host offers beyond POSIX, found once per connection.
type probe struct {
	names   []string
	sha256  bool
	gnuFind bool
}

func (c *conn) probed(ctx context.Context) (probe, error) {
	var err error
	c.probeOnce.Do(func() {
		var out []byte
		out, err = c.internal(ctx, "pp")
		if err != nil {
			return
		}
		for _, n := range strings.Fields(string(out)) {
			switch n {
			case "sha256sum":
				c.probe.sha256 = true
			case "gnufind":
				c.probe.gnuFind = !c.host.opts.NoGNUFind
			}
			c.probe.names = append(c.probe.names, n)
		}
	})
	if err != nil {
		c.probeOnce = sync.Once{}
		return probe{}, err
	}
	return c.probe, nil
}

// internal runs one of the server's own functions (q request) and returns
// its output. On cancellation the server is discarded.
func (c *conn) internal(ctx context.Context, call string) ([]byte, error) {
	s, err := c.server(ctx)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	status, err := c.serve(ctx, s, "q "+quote(call), &buf, nil)
	if err != nil {
		return nil, err
	}
	if status != "0" {
		return nil, fmt.Errorf("host script %q failed with status %s: %s", call, status, buf.String())
	}
	return buf.Bytes(), nil
}

// serve sends one request on s and waits for its status, handling
// cancellation with onCancel (nil: discard the server). s is released.
// w is never written to after serve returns.
func (c *conn) serve(ctx context.Context, s *server, line string, w io.Writer, onCancel func(*server)) (string, error) {
	type result struct {
		status string
		err    error
	}
	gate := &gatedWriter{w: w}
	done := make(chan result, 1)
	go func() {
		st, err := s.request(line, gate)
		done <- result{st, err}
	}()
	select {
	case r := <-done:
		c.release(s)
		if r.err != nil {
			return "", c.lost(fmt.Errorf("command server: %w%s", r.err, s.stderr.suffix()))
		}
		return r.status, nil
	case <-ctx.Done():
	case <-c.dead:
	}
	if onCancel != nil && ctx.Err() != nil && !c.isDead() {
		onCancel(s)
		select {
		case <-done:
			gate.shut()
			c.release(s)
			return "", ctx.Err()
		case <-time.After(ops.GraceAfterExit + 2*time.Second):
		}
	}
	// Give up on this server. Its reader stops when the channel closes,
	// which sshd may delay while processes of the session live on; the
	// gate keeps it from writing after we return either way.
	gate.shut()
	s.close()
	var r result
	select {
	case r = <-done:
		c.release(s)
	case <-time.After(2 * time.Second):
		go func() { <-done; c.release(s) }()
		r.err = errServerExited
	}
	if err := ctx.Err(); err != nil {
		return "", err
	}
	if r.err == nil {
		return r.status, nil
	}
	return "", c.lost(r.err)
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
