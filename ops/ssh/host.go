// Package ssh implements the ops contract on a remote host over one
// persistent SSH connection (golang.org/x/crypto/ssh), with nothing on the
// host but sshd and a POSIX shell.
//
// One Host owns at most one live connection at a time. On it run a pool of
// long-lived sh command servers (hostproto.Program; a command or a file
// operation costs one round trip, not a new session) and, for bulk uploads when the
// host can spare the session, one SFTP client. Keepalives notice a dead
// connection; the next operation dials a new one, with backoff after
// failures. Concurrent callers share one dial.
//
// This package owns Host, its connection and the pool of command servers
// on it (conn.go, pool.go), the commands run as jobs on the host, and the
// file operations. Reaching the host — ssh_config, authentication, host
// keys, the dial through jump hosts — is package reach's (ops/ssh/reach):
// a caller resolves a reach.Config there, hands it to New, and tells the
// connection errors (reach.ConnectError, HostKeyError, AuthError) apart
// with reach's types.
package ssh

import (
	"context"
	"errors"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pi-remote/pi-remote/internal/randhex"
	"github.com/pi-remote/pi-remote/ops"
	"github.com/pi-remote/pi-remote/ops/ssh/internal/hostproto"
	"github.com/pi-remote/pi-remote/ops/ssh/reach"
)

// HostOptions tune a Host beyond what its reach.Config says about reaching
// it.
type HostOptions struct {
	// NoSFTP makes every file operation go over commands, as on a host
	// without the SFTP subsystem.
	NoSFTP bool
	// MaxSessions caps the session channels open at once (command servers
	// plus SFTP). Default 8, under OpenSSH's MaxSessions of 10. Lowered
	// automatically when the server refuses a channel, and raised again
	// one at a time after SessionRetry.
	MaxSessions int
	// SessionRetry is how long after a refused channel the pool tries one
	// more (default 30s).
	SessionRetry time.Duration
	// ReattachTimeout is how long a command whose connection dropped waits
	// for the host to come back (default DefaultReattachTimeout; negative:
	// it fails at once, the command left to its lease).
	ReattachTimeout time.Duration
	// LeaseTTL is how long a command runs on after its client stopped
	// renewing its lease (default DefaultLeaseTTL).
	LeaseTTL time.Duration
	// OutputCap is how many bytes of output a command may write on the
	// host before it is stopped (default DefaultOutputCap; negative: no
	// cap).
	OutputCap int64
	// OnLinkState, when set, hears when calls start waiting for the host
	// after a lost connection, and when it answers again (or they gave up
	// on it): for a terminal to say "reconnecting…". It must not block.
	OnLinkState func(state LinkState, down time.Duration, err error)
	// WarmServers is how many command servers connecting starts (each
	// runs the user's login shell on the host): the first before the
	// connection is handed out, the others in the background. 0: as many
	// as fit beside SFTP, for a Host that serves batches of calls. A Host
	// that serves one call or a few (the CLI's tool, check and jobs
	// commands), or one of many hosts, wants fewer; the pool grows on
	// demand all the same.
	WarmServers int
	// Testing, for tests only, makes the host look poorer than it is.
	Testing *TestSwitches
}

// TestSwitches are for tests only: each pretends the host lacks
// something it has, so that one test host exercises the ways the backend
// copes with hosts that do lack it. Nothing outside tests sets them.
type TestSwitches struct {
	// NoGNUFind pretends the host lacks GNU find, to exercise the POSIX
	// directory listing.
	NoGNUFind bool
	// NoStatC pretends the host lacks stat -c, to exercise ls -ldn.
	NoStatC bool
	// NoTools pretends the host lacks these commands (among the digest
	// tools and cmp), to exercise the guarded write's other methods.
	NoTools []string
	// NoSetsid pretends the host lacks setsid (macOS, for one): commands
	// then share their server's process group, and cancelling one kills
	// that server with it.
	NoSetsid bool
}

// testing is HostOptions.Testing, the zero TestSwitches when unset.
func (h *Host) testing() TestSwitches {
	if h.opts.Testing == nil {
		return TestSwitches{}
	}
	return *h.opts.Testing
}

// Host is the ops backend for one remote host. It is safe for concurrent
// use and connects lazily.
type Host struct {
	cfg  reach.Config
	opts HostOptions

	// fenceID names this client to the host's servers, and epochs counts
	// its connections: a server of a connection given up on acts on
	// nothing once a newer one started a server (serve.sh's fence_start).
	fenceID string
	epochs  atomic.Uint64

	// privateJobs: a server said the host keeps its jobs in the servers'
	// private directories (its jobs directory is not the user's alone):
	// a command ends with its connection, and is never re-attached to or
	// started again.
	privateJobs atomic.Bool

	mu       sync.Mutex
	cur      *conn
	dialing  chan struct{} // non-nil while a dial runs; closed when it ends
	lastErr  error
	failures int
	retryAt  time.Time
	closed   bool
	wasUp    bool // a connection was made once

	// link tracks the calls waiting for the host (awaitHost).
	linkMu       sync.Mutex
	linkWaiters  int
	reconnecting bool
	lostSince    time.Time

	// attachQueue are the Exec calls waiting to re-attach to their jobs
	// (attach.go); gathering, whether a gatherer waits for the host;
	// attaching, the attach request that calls join, if one runs.
	attachMu    sync.Mutex
	attachQueue []*reattach
	gathering   bool
	attaching   *batchState

	sessions atomic.Int64 // session channels asked for, on every connection
	running  atomic.Int64 // commands in flight (streamDelay)

	// collected are the jobs whose results Exec has: their files on the
	// host go with the next command, or at Close (toForget).
	collectedMu sync.Mutex
	collected   []string
}

var (
	_ ops.Operations = (*Host)(nil)
	_ ops.Resolver   = (*Host)(nil)
)

// New returns a Host for cfg. Nothing is dialled until the first operation
// (or Connect).
func New(cfg reach.Config, opts HostOptions) *Host {
	if cfg.KeepaliveCount <= 0 {
		cfg.KeepaliveCount = reach.DefaultKeepaliveCount
	}
	if cfg.ConnectTimeout <= 0 {
		cfg.ConnectTimeout = reach.DefaultConnectTimeout
	}
	return &Host{cfg: cfg, opts: opts, fenceID: randhex.String(8)}
}

// Config is the resolved configuration of the host.
func (h *Host) Config() reach.Config { return h.cfg }

func (h *Host) maxSessions() int {
	if h.opts.MaxSessions > 0 {
		return h.opts.MaxSessions
	}
	return 8
}

func (h *Host) sessionRetry() time.Duration {
	if h.opts.SessionRetry > 0 {
		return h.opts.SessionRetry
	}
	return 30 * time.Second
}

var errClosed = errors.New("host closed")

// Close closes the connection. Operations after Close fail. The marks of
// the jobs whose results were collected are removed first, for up to 2 s
// (5 s when the connection must be made again, see forgetCollected).
func (h *Host) Close() error {
	h.forgetCollected()
	h.mu.Lock()
	h.closed = true
	c := h.cur
	h.mu.Unlock()
	if c != nil {
		c.kill(errClosed)
	}
	return nil
}

// forgetCollected removes the files of every collected job, a request
// per toForget's share, within 2 s in all over the connection. When the
// last one dropped (a reset, a lost link) it dials again: the login gets
// 5 s and the requests 5 s more once the host let it in (on a busy host
// each can take seconds). One that went silent is not dialled again: a
// host that stopped answering would only hold Close up.
func (h *Host) forgetCollected() {
	h.mu.Lock()
	c := h.cur
	h.mu.Unlock()
	h.collectedMu.Lock()
	none := len(h.collected) == 0
	h.collectedMu.Unlock()
	if c == nil || c.silent.Load() || none {
		return
	}
	bound := 2 * time.Second
	if c.isDead() {
		dialCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_, err := h.conn(dialCtx)
		cancel()
		if err != nil {
			return
		}
		bound = 5 * time.Second
	}
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	for ids := h.toForget(); len(ids) > 0; ids = h.toForget() {
		c, err := h.conn(ctx)
		if err == nil {
			_, _, err = c.call(ctx, change, "forget", "", hostproto.Forget(ids...))
		}
		h.forgetDone(ids, err == nil)
		if err != nil {
			return
		}
	}
}

// toForget takes (some of) the jobs whose files can go, for one request
// to remove on the host. Each goes with one request at a time: a batch's
// requests leave at once, and would otherwise all carry the same list,
// every one of their servers removing the same files. The request gives
// them back with forgetDone.
func (h *Host) toForget() []string {
	h.collectedMu.Lock()
	defer h.collectedMu.Unlock()
	n := min(len(h.collected), 64)
	ids := slices.Clone(h.collected[:n])
	h.collected = slices.Delete(h.collected, 0, n)
	return ids
}

// forgetDone ends the request that carried ids (toForget): when it failed,
// the host may not have had them, and they go with a later one (a second
// removal of the same files is harmless).
func (h *Host) forgetDone(ids []string, sent bool) {
	if sent || len(ids) == 0 {
		return
	}
	h.collectedMu.Lock()
	defer h.collectedMu.Unlock()
	h.collected = append(h.collected, ids...)
}

// gotResult records that the result of job id arrived.
func (h *Host) gotResult(id string) {
	h.collectedMu.Lock()
	defer h.collectedMu.Unlock()
	h.collected = append(h.collected, id)
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
	return nil, &reach.ConnectError{Host: h.cfg.String(), Err: errors.New("connection closed right after it was made")}
}

// dial runs without the caller's context: callers may give up waiting,
// but the connection they asked for is still worth having.
func (h *Host) dial(done chan struct{}) {
	link, err := reach.Dial(context.Background(), &h.cfg)
	var c *conn
	if err == nil {
		c = newConn(h, link)
		c.warm()
	}
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
		c.kill(errClosed)
		return
	}
	h.failures, h.lastErr = 0, nil
	h.cur = c
	h.wasUp = true
}

// ready returns the live connection, as conn does. When the host was
// reached before and cannot be now (a dropped link, a host restarting), a
// new call waits for it as a call in flight would
// (HostOptions.ReattachTimeout), unless the host refused the login or its
// key: a host never reached fails at once.
func (h *Host) ready(ctx context.Context) (*conn, error) {
	c, err := h.conn(ctx)
	var ce *reach.ConnectError
	if err == nil || !errors.As(err, &ce) || permanent(err) || h.opts.ReattachTimeout < 0 {
		return c, err
	}
	h.mu.Lock()
	wasUp := h.wasUp
	h.mu.Unlock()
	if !wasUp {
		return nil, err
	}
	if werr := h.awaitHost(ctx, h.reattachTimeout()); werr != nil {
		return nil, werr
	}
	return h.conn(ctx)
}

// permanent says whether a failure to connect will not pass by waiting:
// the host's key or the login was refused.
func permanent(err error) bool {
	var hk *reach.HostKeyError
	var ae *reach.AuthError
	return errors.As(err, &hk) || errors.As(err, &ae)
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
	Config  reach.Config
	Auth    string
	HostKey string
	SFTP    bool
	Setsid  bool
	Tools   []string // helpers found on the host (sha256sum, readlink, gnufind)
	RTT     time.Duration
}

// Reach dials the connection, with its first command server, unless it is
// up: what a session needs before its first call, and no more.
func (h *Host) Reach(ctx context.Context) error {
	_, err := h.conn(ctx)
	return err
}

// Connect dials (or reuses) the connection and reports on it.
func (h *Host) Connect(ctx context.Context) (Info, error) {
	c, err := h.conn(ctx)
	if err != nil {
		return Info{}, err
	}
	info := Info{Config: h.cfg, Auth: c.link.Auth(), HostKey: c.link.HostKey()}
	sc, done, err := c.useSFTP(ctx)
	if err != nil {
		return info, err
	}
	if sc != nil {
		info.SFTP = true
		done()
	}
	s, err := c.server(ctx, false)
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

// SessionsOpened is how many session channels the Host has asked its
// hosts for so far (command servers and SFTP, over all its connections):
// a steady state opens none.
func (h *Host) SessionsOpened() int64 { return h.sessions.Load() }

// Ping costs one round trip; it fails when the connection is gone.
// Down says, without a round trip, whether the host's connection was lost:
// one was made, and the last one is dead (no new one is up yet).
func (h *Host) Down() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.wasUp && (h.cur == nil || h.cur.isDead())
}

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
	digest  string // how guarded writes check a file: a digestMethods entry, "bytes" (cmp), or "" (nothing)
	gnuFind bool
	statC   bool // stat -c and xargs -0 (GNU or BusyBox)
}

// probed asks the host once per connection; a failed probe is asked again
// by the next caller.
func (c *conn) probed(ctx context.Context) (probe, error) {
	c.probeMu.Lock()
	defer c.probeMu.Unlock()
	if c.probe != nil {
		return *c.probe, nil
	}
	_, out, err := c.call(ctx, query, "probe", "", hostproto.ProbeHost())
	if err != nil {
		return probe{}, err
	}
	p := probe{}
	pretend := c.host.testing()
	for _, n := range strings.Fields(string(out)) {
		switch n {
		case "gnufind":
			p.gnuFind = !pretend.NoGNUFind
		case "statc":
			p.statC = !pretend.NoStatC
		}
		p.names = append(p.names, n)
	}
	have := func(n string) bool { return slices.Contains(p.names, n) && !slices.Contains(pretend.NoTools, n) }
	for _, m := range digestMethods {
		if have(m) {
			p.digest = m
			break
		}
	}
	if p.digest == "" && have("cmp") {
		p.digest = "bytes"
	}
	c.probe = &p
	return p, nil
}

// LinkState is what HostOptions.OnLinkState hears.
type LinkState int

const (
	// LinkReconnecting: the connection was lost and calls wait for the
	// host to come back.
	LinkReconnecting LinkState = iota
	// LinkBack: the host answers again.
	LinkBack
	// LinkGaveUp: every waiting call gave up before the host came back.
	LinkGaveUp
)

// linkWait counts a call that starts (delta 1) or stops (-1, with how its
// wait ended) waiting for the host, and tells OnLinkState of the changes.
func (h *Host) linkWait(delta int, err error) {
	h.linkMu.Lock()
	h.linkWaiters += delta
	state, tell := LinkReconnecting, false
	switch {
	case delta > 0 && !h.reconnecting:
		h.reconnecting, h.lostSince, tell = true, time.Now(), true
	case delta < 0 && h.reconnecting && err == nil:
		h.reconnecting, state, tell = false, LinkBack, true
	case delta < 0 && h.reconnecting && h.linkWaiters == 0:
		h.reconnecting, state, tell = false, LinkGaveUp, true
	}
	down := time.Since(h.lostSince)
	h.linkMu.Unlock()
	if tell && h.opts.OnLinkState != nil {
		h.opts.OnLinkState(state, down, err)
	}
}
