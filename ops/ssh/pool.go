package ssh

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"sync"
	"time"

	gossh "golang.org/x/crypto/ssh"

	"github.com/pi-remote/pi-remote/ops/ssh/internal/hostproto"
)

// maxPipeline bounds the requests in flight on one server.
const maxPipeline = 4

// poolEntry is what the pool keeps of one of its servers, guarded by the
// pool's lock (conn.mu).
type poolEntry struct {
	inFlight int  // requests given out on the server and not released
	streams  bool // the one in flight reads the request stream while it runs: nothing may follow it
	// A command in flight that may be let go of when another request
	// waits for a server (see conn.letGoLocked): since when it runs
	// (zero: none), and whether it was asked to.
	jobSince  time.Time
	lettingGo bool
	uses      uint64 // times it went from idle to busy
}

// need says what a request wants of the pool.
type need struct {
	// streams: the request reads the request stream while it runs (a
	// command, a read), so it needs a server of its own: a request sent
	// behind it would be read as a line for it.
	streams bool
	// gc: a command that may join a batch's request.
	gc *groupCall
	// follows: the attach request, following commands let go of. Their
	// output waits in the host's job files, so it waits for a batch's
	// server (back within about a stream delay: every call of a batch is
	// either done or let go of by then) rather than open a session, up to
	// followWait.
	follows bool
}

// followWait bounds how long the attach request waits for a batch's
// server before it may open a session: batches that follow one another
// could otherwise keep it waiting.
const followWait = 5 * time.Second

// acquire takes a channel slot, waiting while all are in use. With
// wantServer it returns a server instead when one can take the request: an
// idle one, or a busy one the request may be pipelined behind (the server
// reads it once it has answered the requests ahead). A command that may
// join a batch's request (n.gc) gets errJoined when it joined one.
//
// Each pass asks the pool's policies in order (decideLocked), under the
// pool's lock; what they decide is carried out once the lock is released.
func (c *conn) acquire(ctx context.Context, wantServer bool, n need) (*server, error) {
	r := claim{need: n, wantServer: wantServer}
	if n.follows {
		r.followUntil = time.Now().Add(followWait)
	}
	for {
		c.mu.Lock()
		v := c.decideLocked(&r)
		c.mu.Unlock()
		if v.drop != nil {
			v.drop.close()
		}
		if v.done {
			return v.s, v.err
		}
		if v.letGo != nil {
			// Its answer ("!DETACHED") frees it.
			go c.letGo(v.letGo, v.uses)
		}
		if v.freed != nil {
			if err := c.awaitFreed(ctx, v.freed, v.until); err != nil {
				return nil, err
			}
		}
	}
}

// claim is one acquire call: what it asks of the pool.
type claim struct {
	need
	wantServer bool
	// followUntil: with need.follows, until when the request waits for a
	// batch's server rather than open a session (followWait).
	followUntil time.Time
}

// verdict is what one of acquire's policies decided, to be carried out
// once the pool's lock is released.
type verdict struct {
	// done: acquire returns s and err (errJoined, or nil); a nil s
	// without err is a channel slot for a new session.
	done bool
	s    *server
	err  error
	// drop is a server to close (before returning, or asking again).
	drop *server
	// Not done: the policies are asked again, after freed is closed (a
	// server or a slot freed) or until passed, when they are set; letGo
	// is first asked to let go of its command (uses: of which request).
	freed <-chan struct{}
	until time.Duration
	letGo *server
	uses  uint64
}

// decideLocked is the list of the pool's policies, in the order they are
// asked; the first that decides wins.
func (c *conn) decideLocked(r *claim) verdict {
	if v, ok := c.joinBatchLocked(r); ok {
		return v
	}
	if v, ok := c.takeIdleLocked(r); ok {
		return v
	}
	if v, ok := c.awaitSoonLocked(r); ok {
		return v
	}
	c.retryRefusedLocked()
	if v, ok := c.useFreeSlotLocked(r); ok {
		return v
	}
	// Every slot in use: a short request may follow a busy server's.
	if v, ok := c.pipelineLocked(r); ok {
		return v
	}
	if v, ok := c.closeIdleForOtherLocked(r); ok {
		return v
	}
	return c.awaitLetGoLocked()
}

// joinBatchLocked: a command that may join a batch's request (need.gc),
// finding no idle server, joins the request running.
func (c *conn) joinBatchLocked(r *claim) (verdict, bool) {
	if r.gc == nil || c.group == nil || len(c.idle) > 0 {
		return verdict{}, false
	}
	c.group.joinLocked(r.gc)
	return verdict{done: true, err: errJoined}, true
}

// takeIdleLocked gives the request the idle server that came back last. A
// command that may join a batch, taking the last idle server while other
// commands are on their way (groupWantedLocked), opens a batch's request on
// it instead (errJoined; see jobServer), which the commands that come while
// it runs join. An idle server whose shell ended is closed, and the
// policies asked again.
func (c *conn) takeIdleLocked(r *claim) (verdict, bool) {
	if !r.wantServer || len(c.idle) == 0 {
		return verdict{}, false
	}
	s := c.idle[len(c.idle)-1]
	c.idle = c.idle[:len(c.idle)-1]
	if s.broken.Load() {
		// Its shell ended while it was idle.
		c.used--
		c.closedAt = time.Now()
		return verdict{drop: s}, true
	}
	c.busyLocked(s, r.streams)
	if r.gc != nil && c.groupWantedLocked() {
		// Opened here, under the lock that took the server: a call
		// that comes next finds it, not a free slot.
		c.openGroupLocked(s, r.gc)
		return verdict{done: true, err: errJoined}, true
	}
	return verdict{done: true, s: s}, true
}

// awaitSoonLocked: a request that finds no idle server waits for one that
// is up or back sooner than a new session would be (that costs a round
// trip and the user's login shell): while warm-up starts servers for the
// pool (no later than one opened now would be), or a request's answer ends
// (a batch's "e" sent, the attach request's last call answered); the
// attach request (need.follows) waits for a batch's server while the batch
// runs, too, within a stream delay, up to followWait. A short request
// meanwhile may follow a busy server's. (Not while the pool recovers from
// a refusal: then a new session is what brings it back.)
func (c *conn) awaitSoonLocked(r *claim) (verdict, bool) {
	following := r.follows && c.group != nil && time.Now().Before(r.followUntil)
	if !r.wantServer || !(c.starting > 0 || c.ending > 0 || following) || len(c.idle) > 0 || c.limit != c.max {
		return verdict{}, false
	}
	if v, ok := c.pipelineLocked(r); ok {
		return v, true
	}
	v := verdict{freed: c.freed}
	if following {
		v.until = max(time.Until(r.followUntil), time.Millisecond)
	}
	return v, true
}

// retryRefusedLocked: the refusal that lowered the limit may have been
// passing; once sessionRetry has passed since, try one more channel
// (refused again, it waits as long).
func (c *conn) retryRefusedLocked() {
	if c.used >= c.limit && c.limit < c.max && time.Since(c.loweredAt) >= c.host.sessionRetry() {
		c.limit++
		c.loweredAt = time.Now()
	}
}

// useFreeSlotLocked: with a slot free, a request that may wait behind
// another still takes a busy server rather than a new session, which costs
// a round trip and the user's login shell (0.5 s against a slow rc file,
// where the requests ahead take milliseconds): the pool is as large as the
// warm-up made it, and the free slot is SFTP's. Any other request takes
// the slot.
func (c *conn) useFreeSlotLocked(r *claim) (verdict, bool) {
	if c.used >= c.limit {
		return verdict{}, false
	}
	if v, ok := c.pipelineLocked(r); ok {
		return v, true
	}
	c.used++
	return verdict{done: true}, true
}

// pipelineLocked gives a short request (one for a server that does not
// read the request stream) a busy server it may follow (pipelinableLocked),
// if there is one.
func (c *conn) pipelineLocked(r *claim) (verdict, bool) {
	if !r.wantServer || r.streams {
		return verdict{}, false
	}
	s := c.pipelinableLocked()
	if s == nil {
		return verdict{}, false
	}
	c.busyLocked(s, r.streams)
	return verdict{done: true, s: s}, true
}

// closeIdleForOtherLocked: with every slot held, a session of another kind
// (SFTP) takes the slot of an idle server, which is closed.
func (c *conn) closeIdleForOtherLocked(r *claim) (verdict, bool) {
	if r.wantServer || len(c.idle) == 0 {
		return verdict{}, false
	}
	s := c.idle[0]
	c.idle = c.idle[1:]
	c.closedAt = time.Now()
	return verdict{done: true, drop: s}, true
}

// awaitLetGoLocked: nothing to take, so the request waits for a server or a
// slot to free, and frees one when a command has held its server long
// enough (letGoLocked).
func (c *conn) awaitLetGoLocked() verdict {
	s, next := c.letGoLocked()
	v := verdict{freed: c.freed, until: next, letGo: s}
	if s != nil {
		v.uses = s.pool.uses
	}
	return v
}

// markEnding counts a request whose answer is ending (on), until its
// server is back in the pool or the answer goes on after all (off): a
// request that finds no idle server meanwhile waits for it (acquire).
func (c *conn) markEnding(on bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if on {
		c.ending++
		return
	}
	c.ending--
	c.notifyLocked()
}

// awaitFreed waits until freed is closed or, when next is positive, for
// next.
func (c *conn) awaitFreed(ctx context.Context, freed <-chan struct{}, next time.Duration) error {
	var later <-chan time.Time
	if next > 0 {
		t := time.NewTimer(next)
		defer t.Stop()
		later = t.C
	}
	select {
	case <-freed:
	case <-later:
	case <-ctx.Done():
		return ctx.Err()
	case <-c.dead:
		return c.lost(io.EOF)
	}
	return nil
}

// letGoAfter is how long a command holds a server of its own while other
// requests wait for one: then it is let go of, and followed with the
// connection's other such commands on one server (attach.go).
const letGoAfter = 500 * time.Millisecond

// letGoLocked picks the server to free for a request that would wait: the
// one whose command has run longest, if that is letGoAfter by now, and
// marks it; otherwise how long until one will be. One at a time: the
// server it frees goes to one waiter, and the next waiter asks again.
func (c *conn) letGoLocked() (*server, time.Duration) {
	if c.lettingGo > 0 {
		return nil, 0
	}
	var oldest *server
	for _, s := range c.busy {
		if !s.pool.jobSince.IsZero() && !s.pool.lettingGo && !s.broken.Load() && (oldest == nil || s.pool.jobSince.Before(oldest.pool.jobSince)) {
			oldest = s
		}
	}
	if oldest == nil {
		return nil, 0
	}
	if wait := letGoAfter - time.Since(oldest.pool.jobSince); wait > 0 {
		return nil, wait
	}
	oldest.pool.lettingGo = true
	c.lettingGo++
	return oldest, 0
}

// letGo asks s to let go of its command, unless that request has ended
// meanwhile: a "d" must not reach a later request on s. (Checked and sent
// with the writer's lock: no later request can go out in between.)
func (c *conn) letGo(s *server, uses uint64) {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	c.mu.Lock()
	still := s.pool.lettingGo && s.pool.uses == uses
	c.mu.Unlock()
	if !still {
		return
	}
	s.controlLocked(hostproto.LetGo) // a write that fails breaks s: its reader sees it
}

// mayLetGo marks s, which was given a command, as one that may be let go
// of; requests waiting for a server hear of it.
func (c *conn) mayLetGo(s *server) {
	c.mu.Lock()
	defer c.mu.Unlock()
	s.pool.jobSince = time.Now()
	c.notifyLocked()
}

// busyLocked counts one more request in flight on s.
func (c *conn) busyLocked(s *server, streams bool) {
	if s.pool.inFlight == 0 {
		c.busy = append(c.busy, s)
		s.pool.uses++
	}
	s.pool.inFlight++
	s.pool.streams = s.pool.streams || streams
}

// pipelinableLocked is the busy server with the fewest requests in flight
// that can take one more, or nil.
func (c *conn) pipelinableLocked() *server {
	var best *server
	for _, s := range c.busy {
		if s.pool.streams || s.pool.inFlight >= maxPipeline || s.broken.Load() {
			continue
		}
		if best == nil || s.pool.inFlight < best.pool.inFlight {
			best = s
		}
	}
	return best
}

// release gives back a slot (s == nil) or ends a request on s: a server
// with nothing more in flight goes back to the pool, or is closed when its
// state is unknown.
func (c *conn) release(s *server) {
	c.mu.Lock()
	defer c.mu.Unlock()
	defer c.notifyLocked()
	if s == nil {
		c.used--
		c.closedAt = time.Now()
		return
	}
	if s.pool.inFlight--; s.pool.inFlight > 0 {
		return
	}
	s.pool.streams = false
	s.pool.jobSince = time.Time{}
	if s.pool.lettingGo {
		s.pool.lettingGo = false
		c.lettingGo--
	}
	if i := slices.Index(c.busy, s); i >= 0 {
		c.busy = slices.Delete(c.busy, i, i+1)
	}
	if !s.broken.Load() && !c.isDead() {
		c.idle = append(c.idle, s)
		return
	}
	s.close()
	c.used--
	c.closedAt = time.Now()
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

// maxClosedEarly bounds the channels opened again after errClosedEarly.
const maxClosedEarly = 4

func isOpenRefused(err error) bool {
	var oce *gossh.OpenChannelError
	return errors.As(err, &oce)
}

// server returns a command server for one request: idle, newly started,
// or busy with short requests that this one may follow (see acquire).
// End the request with release.
func (c *conn) server(ctx context.Context, streams bool) (*server, error) {
	return c.serverFor(ctx, need{streams: streams})
}

// serverFor is server for a request that needs n: errJoined when a
// command joined a batch's request (see acquire).
func (c *conn) serverFor(ctx context.Context, n need) (*server, error) {
	early := 0
	for {
		s, err := c.acquire(ctx, true, n)
		if err != nil || s != nil {
			return s, err
		}
		c.host.sessions.Add(1)
		s, err = c.startServer(ctx)
		switch {
		case err == nil:
			c.mu.Lock()
			c.busyLocked(s, n.streams)
			c.mu.Unlock()
			return s, nil
		case c.isDead():
			c.release(nil)
			return nil, c.lost(err)
		case errors.Is(err, errClosedEarly) && early < maxClosedEarly && !c.isDead():
			// Nothing ran: open another channel, after a moment.
			c.release(nil)
			early++
			select {
			case <-time.After(time.Duration(early) * 50 * time.Millisecond):
			case <-ctx.Done():
				return nil, ctx.Err()
			}
			continue
		case errors.Is(err, errClosedEarly):
			c.release(nil)
			return nil, fmt.Errorf("%s: %w (%d times in a row)", c.host.cfg.String(), err, early+1)
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

// warm starts the connection's command servers as part of connecting, so
// that no call pays for a session (and the user's login shell) on the hot
// path: the first server before the connection is handed out (the first
// call, or the calls coming back after a lost connection, find it ready),
// then, concurrently and in the background, as many more as fit beside
// SFTP. (SFTP itself opens on the first upload that needs it, once per
// connection. Opened here too, against dropbear without sftp-server, one
// connection in fifty died with "ssh: invalid channel" in the CLI's
// one-shot calls: dropbear sends a packet on a channel x/crypto has closed.)
// A server that cannot start now is left to the call that needs it, which
// reports why.
func (c *conn) warm() {
	ctx, cancel := context.WithTimeout(context.Background(), c.host.cfg.ConnectTimeout)
	if s, err := c.server(ctx, false); err == nil {
		c.release(s)
	}
	cancel()
	more := c.max - 2 // one slot for SFTP, one started above
	if c.host.opts.NoSFTP || c.max < 3 {
		more++
	}
	if w := c.host.opts.WarmServers; w > 0 {
		more = min(more, w-1)
	}
	// Their slots are taken before the connection is handed out: a call
	// that finds no idle server waits for one of these rather than open
	// a session of its own (acquire).
	c.mu.Lock()
	n := 0
	for ; n < more && c.used < c.limit && !c.isDead(); n++ {
		c.used++
		c.starting++
	}
	c.mu.Unlock()
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), c.host.cfg.ConnectTimeout)
		defer cancel()
		var wg sync.WaitGroup
		for range n {
			wg.Go(func() { c.grow(ctx) })
		}
		wg.Wait()
	}()
}

// grow starts a server for the pool in a slot warm took for it.
func (c *conn) grow(ctx context.Context) {
	defer func() {
		// (After the server is in the pool: a request waiting for it
		// finds it.)
		c.mu.Lock()
		c.starting--
		c.notifyLocked()
		c.mu.Unlock()
	}()
	c.host.sessions.Add(1)
	s, err := c.startServer(ctx)
	if err != nil {
		if isOpenRefused(err) {
			c.refused()
			return
		}
		c.release(nil)
		return
	}
	c.mu.Lock()
	c.busyLocked(s, false)
	c.mu.Unlock()
	c.release(s)
}

// startServer starts a server on the connection, fenced by its epoch.
func (c *conn) startServer(ctx context.Context) (*server, error) {
	s, err := startServer(ctx, c.link.Client(), !c.host.testing().NoSetsid, c.host.fenceID, strconv.FormatUint(c.epoch, 10))
	if err == nil && s.privateJobs {
		c.host.privateJobs.Store(true)
	}
	return s, err
}
