package ssh

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/pi-remote/pi-remote/ops/ssh/internal/hostproto"
)

// Batches. An agent sends its commands in batches, and a batch is larger
// than the pool: with every server busy the rest of the batch would wait a
// round trip for one to free, or pay for a new session (the user's login
// shell). Instead, the command that takes the connection's last idle
// server while others are in flight opens a run_jobs request on it
// (batches.sh), and the commands that come while it runs join it: each is
// one more line on that server's request stream ("add_job"), started at
// once. A command's output and status come in one frame when it ends; one
// that runs longer than its stream delay is let go of ("d ID") and
// followed, streaming, by the attach request (attach.go). The request ends
// ("e") once no call waits in it.

// group is one run_jobs request.
type group struct {
	c *conn
	s *server

	ready chan struct{} // closed once the request line went
	err   error         // why it did not, set before ready closes

	// Guarded by c.mu.
	open   map[string]*groupCall // calls without a verdict yet
	ended  bool                  // "e" sent, or the answer over: no more calls join
	ending bool                  // counted in c.ending, from "e" until the server is back
}

// groupCall is one Exec call in a group.
type groupCall struct {
	id   string
	g    *group // the group it joined
	out  *gatedWriter
	once sync.Once
	done chan attachResult
}

func newGroupCall(id string, out io.Writer) *groupCall {
	return &groupCall{id: id, out: &gatedWriter{w: out}, done: make(chan attachResult, 1)}
}

// settle gives the call its verdict, once; nothing more reaches its output.
func (gc *groupCall) settle(res attachResult) {
	gc.once.Do(func() {
		gc.out.shut()
		gc.done <- res
	})
}

// jobServer returns a server for a command of its own, or the group it
// joined (gc nil: never one). A call takes an idle server if there is one,
// and joins the group running on the connection otherwise; the call that
// takes the last idle server while other commands are in flight (or on
// their way: Host.running) opens one. (A group only takes the calls that
// find every server busy: one shell starts its jobs and sends their
// results, one after another.)
func (c *conn) jobServer(ctx context.Context, gc *groupCall) (*server, *group, error) {
	s, err := c.serverFor(ctx, need{streams: true, gc: gc})
	if errors.Is(err, errJoined) {
		return nil, gc.g, nil
	}
	if err != nil || gc == nil {
		return s, nil, err
	}
	// A server started for this call (it is the call's), or freed by
	// another (see acquire).
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.groupWantedLocked() {
		return nil, c.openGroupLocked(s, gc), nil
	}
	return s, nil, nil
}

// groupWantedLocked says whether a command that has just taken a server
// should open a group on it: none is open, no other server is idle, and
// other commands are in flight or on their way.
func (c *conn) groupWantedLocked() bool {
	return c.group == nil && len(c.idle) == 0 && c.host.running.Load() >= 2
}

// openGroupLocked makes s, just taken by gc's call, the server of a new
// group that gc joins; calls waiting for a server join it too.
func (c *conn) openGroupLocked(s *server, gc *groupCall) *group {
	g := &group{c: c, s: s, ready: make(chan struct{}), open: map[string]*groupCall{}}
	g.joinLocked(gc)
	c.group = g
	c.notifyLocked()
	go g.serve()
	return g
}

// joinLocked adds gc to g (with c.mu held).
func (g *group) joinLocked(gc *groupCall) {
	g.open[gc.id] = gc
	gc.g = g
}

// errJoined: the command joined the connection's group (acquire).
var errJoined = errors.New("joined the batch's request")

// serve sends the request and reads its answer to the end: the calls'
// frames, then, once the last call has its verdict and "e" went, the
// status.
func (g *group) serve() {
	h := g.c.host
	ttl := h.leaseTTL()
	forget := h.toForget()
	req := hostproto.RunJobs(ttl, h.outputLimit(), forget)
	prev, mine, err := g.s.post(req)
	defer close(mine)
	sent := false
	defer func() { h.forgetDone(forget, sent) }()
	g.err = err
	close(g.ready)
	if err != nil {
		g.s.close()
		g.end(g.c.lost(err))
		return
	}
	if prev != nil {
		<-prev
	}
	stop := renewLease(g.s, ttl)
	defer stop()
	status, err := readFrames(g.s, req,
		func(id string) io.Writer {
			g.c.mu.Lock()
			defer g.c.mu.Unlock()
			if gc := g.open[id]; gc != nil {
				return gc.out
			}
			return io.Discard
		},
		func(id string, status hostproto.Status) {
			g.c.mu.Lock()
			gc := g.open[id]
			g.c.mu.Unlock()
			if gc != nil {
				gc.settle(attachResult{status: status})
				g.leave(gc)
			}
		})
	switch {
	case err != nil:
		g.s.close()
		g.end(g.c.lost(frameError(g.s, err)))
	case status.Kind != hostproto.OK:
		g.s.close()
		g.end(fmt.Errorf("command server: %s", strings.TrimPrefix(status.Text, "!EIO ")))
	default:
		sent = true
		g.end(nil)
	}
}

// leave takes gc out of the group; the last call out ends the request.
func (g *group) leave(gc *groupCall) {
	g.c.mu.Lock()
	if g.open[gc.id] == gc {
		delete(g.open, gc.id)
	}
	last := len(g.open) == 0 && !g.ended
	if last {
		g.ended = true
		if g.c.group == g {
			g.c.group = nil
		}
		g.ending = true
		g.c.ending++
	}
	g.c.mu.Unlock()
	if !last {
		return
	}
	// (Behind the request line, which goes at once.) A write that fails
	// breaks the server, which the reader sees.
	<-g.ready
	if g.err == nil {
		g.s.control(hostproto.End)
	}
}

// end closes the group to joining calls, gives every call still in it
// err, and gives the server back to the pool (or closes it, when broken).
func (g *group) end(err error) {
	g.c.mu.Lock()
	g.ended = true
	if g.c.group == g {
		g.c.group = nil
	}
	open := g.open
	g.open = map[string]*groupCall{}
	g.c.mu.Unlock()
	g.c.release(g.s)
	// (After the server is back: a call waiting for it finds it.)
	g.c.mu.Lock()
	if g.ending {
		g.ending = false
		g.c.ending--
		g.c.notifyLocked()
	}
	g.c.mu.Unlock()
	if err == nil {
		err = fmt.Errorf("command server: the batch's request ended before the command's")
	}
	for _, gc := range open {
		gc.settle(attachResult{err: err})
	}
}

// run starts gc's job in the group and waits for its verdict: its status,
// "!DETACHED" (let go of after its stream delay, or started before: the
// caller follows it with the attach request), or the error that ended the
// group. A cancelled call has its job killed and returns ctx.Err() once
// the host confirms it.
func (g *group) run(ctx context.Context, gc *groupCall, js jobStart) (hostproto.Status, error) {
	var none hostproto.Status
	select {
	case <-g.ready:
	case <-ctx.Done():
		g.leave(gc)
		gc.settle(attachResult{err: ctx.Err()})
		return none, ctx.Err()
	}
	if g.err != nil {
		g.leave(gc)
		return none, g.c.lost(g.err)
	}
	// (A write that fails breaks the server: the reader ends the group.)
	g.s.send(hostproto.AddJob(js.Job))
	stopAsking := g.c.host.askStream(g.s, hostproto.LetGoOf(gc.id))
	defer stopAsking()
	var res attachResult
	select {
	case res = <-gc.done:
		return groupStatus(res)
	case <-ctx.Done():
	}
	stopAsking()
	if g.s.control(hostproto.KillJob(gc.id)) == nil {
		select {
		case res = <-gc.done:
			status, err := groupStatus(res)
			if err != nil || status.Kind != hostproto.Ended {
				// Let go of, or gone with the connection, as the kill went.
				return none, fmt.Errorf("%w (%w)", ctx.Err(), errKillUnconfirmed)
			}
			return none, ctx.Err()
		case <-time.After(killWait):
		}
	}
	gc.settle(attachResult{err: errKillUnconfirmed})
	g.leave(gc)
	return none, fmt.Errorf("%w (%w)", ctx.Err(), errKillUnconfirmed)
}

// groupStatus is a group call's verdict as runJob returns it (asLetGo).
func groupStatus(res attachResult) (hostproto.Status, error) {
	return asLetGo(res.status), res.err
}

// asLetGo is a job's status as Exec follows it: a job that was started
// before (a start sent again, "!ATTACH") is attached to, as one let go of
// ("!DETACHED").
func asLetGo(st hostproto.Status) hostproto.Status {
	if st.Kind == hostproto.Attach {
		return hostproto.Status{Kind: hostproto.Detached, Text: "!DETACHED"}
	}
	return st
}
