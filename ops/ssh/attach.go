package ssh

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pi-remote/pi-remote/ops"
)

// Re-attaching after a lost connection. Every Exec call whose connection
// dropped queues here; one gatherer per Host waits for the host to answer
// again and then serves all the calls queued by then with a single
// attach_jobs request (server.sh): one server, one round trip, however
// many commands were running. Calls that lose their connection while a
// batch is being served form the next batch.

// reattach is one Exec call waiting for its job's output and status.
type reattach struct {
	ctx  context.Context
	id   string
	out  *gatedWriter // to the call's countingWriter
	sent *countingWriter
	save [3]string // SAVE, SAVE_BYTES, SAVE_LINES of run_job

	deadline time.Time // when the call stops waiting for the host

	once sync.Once
	done chan attachResult
}

type attachResult struct {
	status string
	err    error
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
// run_job's. It gives up waiting for the host after HostOptions'
// ReattachTimeout from each drop; a cancelled call has its job killed.
func (h *Host) reattachJob(ctx context.Context, id string, sent *countingWriter, save [3]string) (string, error) {
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
				return "", ctx.Err()
			}
			return "", fmt.Errorf("%w: %s did not answer within %s; the command may still be running on the host as job %s (`pi-remote jobs attach %s` follows it; it is killed when its lease of %s runs out)",
				ops.ErrConnectionLost, h.cfg.String(), h.reattachTimeout(), id, id, h.leaseTTL())
		}
		switch {
		case res.err == nil && ctx.Err() != nil:
			// Killed as asked (its status says how it ended).
			h.gotResult(id)
			return "", ctx.Err()
		case res.err == nil:
			return res.status, nil
		case ctx.Err() != nil:
			// The kill was not confirmed: make sure, once the host answers.
			go h.cancelJob(id)
			return "", ctx.Err()
		case errors.Is(res.err, ops.ErrConnectionLost) && !permanent(res.err):
			continue // dropped again: wait for the host again
		}
		return "", res.err
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
// to one batch each time it answers.
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
		h.attachMu.Unlock()
		go h.serveBatch(c, batch)
	}
}

// serveBatch attaches to the jobs of batch with one attach_jobs request on
// c and gives each call its output and verdict. Calls still open when the
// connection dies get ErrConnectionLost and queue again.
func (h *Host) serveBatch(c *conn, batch []*reattach) {
	// A server may take a while to free (every channel busy with other
	// commands): waited for until it comes, the connection dies, or every
	// call of the batch gives up (each one's job then dies through cancelJob).
	ctx, cancel := context.WithCancel(context.Background())
	var left atomic.Int32
	left.Store(int32(len(batch)))
	for _, r := range batch {
		stop := context.AfterFunc(r.ctx, func() {
			if left.Add(-1) == 0 {
				cancel()
			}
		})
		defer stop()
	}
	s, err := c.server(ctx, true)
	cancel()
	if err != nil {
		for _, r := range batch {
			r.settle(attachResult{err: c.lost(err)})
		}
		return
	}
	ttl := h.leaseTTL()
	args := []string{strconv.Itoa(int(ttl.Seconds()))}
	open := make(map[string]*reattach, len(batch))
	for _, r := range batch {
		args = append(args, r.id, strconv.FormatInt(r.sent.n, 10), r.save[0], r.save[1], r.save[2])
		open[r.id] = r
	}
	b := &batchState{c: c, s: s, open: open}
	prev, mine, err := s.post(call("attach_jobs", args...))
	defer close(mine)
	if err != nil {
		b.fail(c.lost(err))
		return
	}
	if prev != nil {
		<-prev
	}
	stopRenewing := renewLease(s, ttl)
	defer stopRenewing()
	for _, r := range batch {
		stop := context.AfterFunc(r.ctx, func() { b.kill(r) })
		defer stop()
	}
	b.read()
}

// batchState is one attach_jobs request being read.
type batchState struct {
	c *conn
	s *server

	mu   sync.Mutex
	open map[string]*reattach // calls without a verdict yet
}

// take removes the call of job id from the open ones.
func (b *batchState) take(id string) *reattach {
	b.mu.Lock()
	defer b.mu.Unlock()
	r := b.open[id]
	delete(b.open, id)
	return r
}

func (b *batchState) get(id string) *reattach {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.open[id]
}

// kill asks the host to kill r's job; the call's verdict comes with the
// job's end, or after killWait without one.
func (b *batchState) kill(r *reattach) {
	if b.get(r.id) == nil {
		return
	}
	if b.s.write("k "+r.id+"\n") != nil {
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
			b.s.close()
		}
	})
}

// fail gives every open call err.
func (b *batchState) fail(err error) {
	b.s.close()
	b.c.release(b.s)
	b.mu.Lock()
	open := b.open
	b.open = nil
	b.mu.Unlock()
	for _, r := range open {
		r.settle(attachResult{err: err})
	}
}

// read reads the answer up to its end.
func (b *batchState) read() {
	status, err := readAttach(b.s,
		func(id string) io.Writer {
			if r := b.get(id); r != nil {
				return r.out
			}
			return io.Discard
		},
		func(id, status string) {
			if r := b.take(id); r != nil {
				r.settle(attachResult{status: status})
			}
		})
	switch {
	case err != nil:
		b.fail(b.c.lost(err))
		return
	case status != "OK":
		b.fail(fmt.Errorf("command server: %s", strings.TrimPrefix(status, "!EIO ")))
		return
	}
	b.c.release(b.s)
	b.mu.Lock()
	open := b.open
	b.open = nil
	b.mu.Unlock()
	for _, r := range open {
		r.settle(attachResult{err: fmt.Errorf("command server: no status for job %s", r.id)})
	}
}

// readAttach reads an answer of attach_jobs from s: the output in each "D"
// frame goes to out(ID), each "X" frame to end(ID, STATUS). It returns the
// final status.
func readAttach(s *server, out func(id string) io.Writer, end func(id, status string)) (string, error) {
	rd := s.stdout
	for {
		line, err := rd.ReadString('\n')
		if err != nil {
			s.broken.Store(true)
			if errors.Is(err, io.EOF) {
				err = errServerExited
			}
			return "", fmt.Errorf("command server: %w%s", err, s.stderr.suffix())
		}
		line = strings.TrimSuffix(line, "\n")
		if status, ok := strings.CutPrefix(line, string(s.marker)); ok {
			return status, nil
		}
		kind, rest, _ := strings.Cut(line, " ")
		id, arg, _ := strings.Cut(rest, " ")
		switch kind {
		case "D":
			n, err := strconv.ParseInt(arg, 10, 64)
			if err != nil || n < 0 {
				s.broken.Store(true)
				return "", fmt.Errorf("command server: bad frame %q", line)
			}
			if err := copyFrame(out(id), rd, n); err != nil {
				s.broken.Store(true)
				return "", fmt.Errorf("command server: %w", err)
			}
		case "X":
			end(id, arg)
		default:
			s.broken.Store(true)
			return "", fmt.Errorf("command server: bad frame %q", line)
		}
	}
}

// copyFrame copies the n bytes of a frame from rd to w. After an error of
// w's, the rest of the frame is read all the same: the stream stays in
// step.
func copyFrame(w io.Writer, rd io.Reader, n int64) error {
	lr := &io.LimitedReader{R: rd, N: n}
	buf := make([]byte, 32<<10)
	var werr error
	for lr.N > 0 {
		k, err := lr.Read(buf)
		if k > 0 && werr == nil {
			_, werr = w.Write(buf[:k])
		}
		if errors.Is(err, io.EOF) && lr.N > 0 {
			return io.ErrUnexpectedEOF
		}
		if err != nil && !errors.Is(err, io.EOF) {
			return err
		}
	}
	return nil
}
