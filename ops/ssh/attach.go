package ssh

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/pi-remote/pi-remote/ops"
	"github.com/pi-remote/pi-remote/ops/ssh/internal/hostproto"
)

// Re-attaching after a lost connection. Every Exec call whose connection
// dropped queues here; one gatherer per Host waits for the host to answer
// again and then serves all the calls queued by then with a single
// attach_jobs request (attach.sh): one server, one round trip, however
// many commands were running. Calls that lose their connection while a
// batch is being served form the next batch (the old one went with that
// connection).
//
// The same request follows commands whose servers let go of them, to serve
// other requests (conn.letGoLocked): they join the request running on the
// connection, so that however many long commands run, they hold one server.

// reattach is one Exec call waiting for its job's output and status.
type reattach struct {
	ctx  context.Context
	id   string
	out  *gatedWriter // to the call's countingWriter
	sent *countingWriter
	save [3]string // SAVE, SAVE_BYTES, SAVE_LINES of its start

	deadline time.Time // when the call stops waiting for the host

	once sync.Once
	done chan attachResult
}

type attachResult struct {
	status hostproto.Status
	err    error
}

// follow is what the attach request needs of r.
func (r *reattach) follow() hostproto.Follow {
	return hostproto.Follow{ID: r.id, Offset: r.sent.n, Save: r.save[0], SaveBytes: r.save[1], SaveLines: r.save[2]}
}

// settle gives the call its verdict, once; nothing more reaches its output.
func (r *reattach) settle(res attachResult) {
	r.once.Do(func() {
		r.out.shut()
		r.done <- res
	})
}

// reattachJob waits for job r.id to be served by an attach_jobs batch,
// through further drops of the connection, and returns its status as
// its start's. It gives up waiting for the host after HostOptions'
// ReattachTimeout from each drop; a cancelled call has its job killed.
func (h *Host) reattachJob(ctx context.Context, id string, sent *countingWriter, save [3]string) (hostproto.Status, error) {
	var none hostproto.Status
	for {
		r := &reattach{ctx: ctx, id: id, sent: sent, save: save, done: make(chan attachResult, 1),
			out: &gatedWriter{w: sent}, deadline: time.Now().Add(h.reattachTimeout())}
		h.queueReattach(r)
		res, ok := h.awaitBatch(ctx, r)
		if !ok {
			// Still queued: the host did not come back in time, or the
			// caller gave up.
			if ctx.Err() != nil {
				go h.cancelJob(id)
				return none, ctx.Err()
			}
			return none, fmt.Errorf("%w: %s did not answer within %s; the command may still be running on the host as job %s (`pi-remote jobs attach %s` follows it; it is killed when its lease of %s runs out)",
				ops.ErrConnectionLost, h.cfg.String(), h.reattachTimeout(), id, id, h.leaseTTL())
		}
		switch {
		case res.err == nil && ctx.Err() != nil:
			// Killed as asked (its status says how it ended).
			h.gotResult(id)
			return none, ctx.Err()
		case res.err == nil:
			return res.status, nil
		case ctx.Err() != nil:
			// The kill was not confirmed: make sure, once the host answers.
			go h.cancelJob(id)
			return none, ctx.Err()
		case errors.Is(res.err, ops.ErrConnectionLost) && !permanent(res.err):
			continue // dropped again: wait for the host again
		}
		return none, res.err
	}
}

// awaitBatch waits for r's verdict. It reports false when r left the
// queue before a batch took it: its deadline passed or ctx ended.
func (h *Host) awaitBatch(ctx context.Context, r *reattach) (attachResult, bool) {
	timeout := time.NewTimer(time.Until(r.deadline))
	defer timeout.Stop()
	ctxDone, timedOut := ctx.Done(), timeout.C
	for {
		select {
		case res := <-r.done:
			return res, true
		case <-ctxDone:
			ctxDone = nil
		case <-timedOut:
			timedOut = nil
		}
		if h.unqueueReattach(r) {
			return attachResult{}, false
		}
		// A batch has it: it kills the job of a cancelled call and
		// answers within killWait, or when the connection dies.
	}
}

func (h *Host) queueReattach(r *reattach) {
	h.attachMu.Lock()
	defer h.attachMu.Unlock()
	h.attachQueue = append(h.attachQueue, r)
	if !h.gathering {
		h.gathering = true
		go h.gather()
	}
}

// unqueueReattach takes r out of the queue; false when a batch took it.
func (h *Host) unqueueReattach(r *reattach) bool {
	h.attachMu.Lock()
	defer h.attachMu.Unlock()
	for i, q := range h.attachQueue {
		if q == r {
			h.attachQueue = append(h.attachQueue[:i], h.attachQueue[i+1:]...)
			return true
		}
	}
	return false
}

// gather waits for the host while calls are queued, and hands all of them
// to the connection's attach request each time it answers: the one already
// running, or a new one.
func (h *Host) gather() {
	for {
		h.attachMu.Lock()
		var last time.Time
		for _, r := range h.attachQueue {
			if r.deadline.After(last) {
				last = r.deadline
			}
		}
		if len(h.attachQueue) == 0 {
			h.gathering = false
			h.attachMu.Unlock()
			return
		}
		h.attachMu.Unlock()
		ctx, cancel := context.WithDeadline(context.Background(), last)
		err := h.awaitHost(ctx, time.Until(last))
		var c *conn
		if err == nil {
			c, err = h.conn(ctx)
		}
		cancel()
		h.attachMu.Lock()
		batch := h.attachQueue
		if err != nil && (errors.Is(err, errClosed) || permanent(err)) {
			h.attachQueue = nil
			h.attachMu.Unlock()
			for _, r := range batch {
				r.settle(attachResult{err: err})
			}
			continue
		}
		if err != nil {
			// Not back in time: the calls time out and leave the queue.
			h.attachMu.Unlock()
			time.Sleep(10 * time.Millisecond)
			continue
		}
		h.attachQueue = nil
		if b := h.attaching; b != nil && b.c == c && b.join(batch) {
			h.attachMu.Unlock()
			continue
		}
		b := newBatch(h, c)
		b.join(batch)
		h.attaching = b
		h.attachMu.Unlock()
		go b.serve()
	}
}

// batchState is one attach_jobs request: it follows the jobs of calls
// that lost their connection, or whose server let go of them, until each
// ends. Calls join it while it runs ("a" lines).
type batchState struct {
	h *Host
	c *conn

	wait       context.Context // for a server; ends when every call gave up first
	cancelWait context.CancelFunc

	mu      sync.Mutex
	s       *server              // once it has one
	started bool                 // the request went: joining calls are sent as "a" lines
	ended   bool                 // the answer ended: no more calls join
	ending  bool                 // every call has its verdict: counted in c.ending until the server is back
	open    map[string]*reattach // calls without a verdict yet
	stops   []func() bool        // their context.AfterFuncs
}

func newBatch(h *Host, c *conn) *batchState {
	b := &batchState{h: h, c: c, open: map[string]*reattach{}}
	b.wait, b.cancelWait = context.WithCancel(context.Background())
	return b
}

// join adds calls to b; false when b's answer has ended.
func (b *batchState) join(calls []*reattach) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.ended {
		return false
	}
	for _, r := range calls {
		b.open[r.id] = r
		b.stops = append(b.stops, context.AfterFunc(r.ctx, func() { b.kill(r) }))
		if b.started {
			if b.ending {
				// The answer goes on (unless it ends as this arrives:
				// then the call attaches again).
				b.ending = false
				b.c.markEnding(false)
			}
			// A write that fails breaks the server, which the reader
			// sees.
			b.s.control(hostproto.Add(r.follow()))
		}
	}
	return true
}

// serve takes a server, which may wait for one to free (every channel
// busy with other commands: see conn.letGoLocked; or a batch's request
// running, whose server is back once each of its calls is done or let go
// of: see need.follows), sends the request with
// the calls joined so far, and reads its answer.
func (b *batchState) serve() {
	defer func() {
		for _, stop := range b.stops {
			stop()
		}
	}()
	s, err := b.c.serverFor(b.wait, need{streams: true, follows: true})
	b.cancelWait()
	if err != nil {
		b.end(nil, b.c.lost(err))
		return
	}
	ttl := b.h.leaseTTL()
	b.mu.Lock()
	b.s, b.started = s, true
	var follow []hostproto.Follow
	for _, r := range b.open {
		follow = append(follow, r.follow())
	}
	req := hostproto.AttachJobs(ttl, follow...)
	prev, mine, err := s.post(req)
	b.mu.Unlock()
	defer close(mine)
	if err != nil {
		s.close()
		b.end(s, b.c.lost(err))
		return
	}
	if prev != nil {
		<-prev
	}
	stopRenewing := renewLease(s, ttl)
	defer stopRenewing()
	// With one channel, or every one held by this and short requests, the
	// commands' output pauses while a request waits (it goes on from where
	// it stopped in the next attach request): like a command's server,
	// this one is let go of.
	b.c.mayLetGo(s)
	b.read(req)
}

func (b *batchState) take(id string) *reattach {
	b.mu.Lock()
	defer b.mu.Unlock()
	r := b.open[id]
	delete(b.open, id)
	return r
}

// takeLast is take for a call's verdict: once every call has one, the
// host ends the answer at once (attach.sh), and the server is counted as
// coming back (conn.markEnding) from before the last call returns.
func (b *batchState) takeLast(id string) *reattach {
	b.mu.Lock()
	defer b.mu.Unlock()
	r := b.open[id]
	delete(b.open, id)
	if r != nil && len(b.open) == 0 && !b.ending {
		b.ending = true
		b.c.markEnding(true)
	}
	return r
}

func (b *batchState) get(id string) *reattach {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.open[id]
}

// kill asks the host to kill r's job; the call's verdict comes with the
// job's end, or after killWait without one. Before the request went, the
// call just leaves (its job is killed once a server answers, cancelJob).
func (b *batchState) kill(r *reattach) {
	b.mu.Lock()
	if b.open[r.id] != r {
		b.mu.Unlock()
		return
	}
	if !b.started {
		delete(b.open, r.id)
		none := len(b.open) == 0
		b.mu.Unlock()
		r.settle(attachResult{err: r.ctx.Err()})
		if none {
			b.cancelWait()
		}
		return
	}
	s := b.s
	b.mu.Unlock()
	if s.control(hostproto.KillJob(r.id)) != nil {
		return // the reader sees the broken server
	}
	time.AfterFunc(killWait, func() {
		if b.take(r.id) == nil {
			return
		}
		r.settle(attachResult{err: errKillUnconfirmed})
		b.mu.Lock()
		none := len(b.open) == 0
		b.mu.Unlock()
		if none {
			// Nobody waits for the rest of the answer.
			s.close()
		}
	})
}

// end closes b to joining calls and gives each open call err; with
// err nil, calls that joined as the answer ended (no verdict for them)
// attach again. s, if any, goes back to the pool.
func (b *batchState) end(s *server, err error) {
	b.h.attachMu.Lock()
	if b.h.attaching == b {
		b.h.attaching = nil
	}
	b.h.attachMu.Unlock()
	b.mu.Lock()
	b.ended = true
	open := b.open
	b.open = nil
	ending := b.ending
	b.ending = false
	b.mu.Unlock()
	if s != nil {
		b.c.release(s)
	}
	if ending {
		// (After the server is back: a request waiting for it finds it.)
		b.c.markEnding(false)
	}
	if err == nil {
		err = errNotJoined
	}
	for _, r := range open {
		r.settle(attachResult{err: err})
	}
}

// errNotJoined: a call joined an attach request as it ended; it attaches
// again (as after a lost connection).
var errNotJoined = fmt.Errorf("%w: the attach request ended as the command joined it", ops.ErrConnectionLost)

// read reads the answer to req up to its end.
func (b *batchState) read(req hostproto.Request) {
	status, err := readFrames(b.s, req,
		func(id string) io.Writer {
			if r := b.get(id); r != nil {
				return r.out
			}
			return io.Discard
		},
		func(id string, status hostproto.Status) {
			if r := b.takeLast(id); r != nil {
				r.settle(attachResult{status: status})
			}
		})
	switch {
	case err != nil:
		b.s.close()
		b.end(b.s, b.c.lost(frameError(b.s, err)))
	case status.Kind == hostproto.Detached:
		b.end(b.s, nil) // its calls attach again
	case status.Kind != hostproto.OK:
		b.s.close()
		b.end(b.s, fmt.Errorf("command server: %s", status.Arg))
	default:
		b.end(b.s, nil)
	}
}
