package env

import (
	"context"
	"errors"
	"slices"
	"sync"

	"github.com/pi-remote/pi-remote/canonpath"
	"github.com/pi-remote/pi-remote/ops"
)

// The mutation queue serializes changes to one file on one environment.
// Reservations are taken in the order the caller asks for them (the agent
// loop reserves during its in-order prepare stage), and each reservation
// waits for every earlier reservation of the same key before it runs, so the
// mutations of one batch land in call order whatever order their goroutines
// start in. Different keys never wait for each other. A key's entry is
// deleted as soon as its last reservation is released.
//
// Which file a path names is a question for the host (canonpath: a round
// trip on a remote one), so Reserve does not wait for the answer: every
// reservation resolves its key at once, concurrently, and enters its
// file's queue only after every earlier reservation has entered its own.
// A batch of calls is admitted in one round trip instead of one per call,
// in the same order.
//
// A file mutated again is admitted with no round trip at all: the queue
// remembers the key the host gave for each path, and the mutation checks it
// on the host when it writes (ops.WriteOptions.Canonical, passed to the
// function Do runs). A remembered key that no longer holds — a symlink on
// the way changed since — fails that write with ops.ErrMoved before
// anything is written; Do then forgets it and runs the mutation again in
// the queue of the key the host gives now (calls admitted after it may then
// go first: the files changed under the batch).
//
// The queue also keeps its unfinished reservations in order, for the
// barriers that order the calls which do not mutate (order.go).
type mutationQueue struct {
	mu    sync.Mutex
	tails map[canonpath.Key]*slot
	last  chan struct{}            // closed once the latest reservation has entered its queue
	keys  map[string]canonpath.Key // remembered keys of absolute paths

	// unfinished are the reservations not finished yet, in the order they
	// were taken: what a later Barrier waits for (order.go).
	unfinished []*Reservation
}

// rememberedMax bounds the remembered keys; past it they are all forgotten.
const rememberedMax = 4096

type slot struct {
	done chan struct{} // closed on release
	prev *slot         // guarded by mutationQueue.mu; nil once acquired
}

// Reservation is a place in a file's mutation queue.
type Reservation struct {
	q   *mutationQueue
	s   *slot
	e   *ExecutionEnv
	abs string

	entered    chan struct{} // closed once key and err are set and s is queued (or not, on error)
	key        canonpath.Key
	remembered bool // key came from the queue's memory, not from the host
	err        error
	pinned     bool // set by Pin, before Do

	released bool // guarded by q.mu
	once     sync.Once

	finished   chan struct{} // closed once the mutation is over (Do returned, or Release)
	finishOnce sync.Once
	held       bool // guarded by q.mu; set by Hold until its call is admitted
}

// Reserve resolves p (as by Resolve) and takes the next place in the
// mutation queue of the file it names. It does not wait, not even for the
// host to say which file that is: call Do to wait for the earlier holders
// and run, or Release to give the place up. Every Reservation must be
// released (Do releases).
func (e *ExecutionEnv) Reserve(ctx context.Context, p string) (*Reservation, error) {
	abs, err := e.Resolve(ctx, p)
	if err != nil {
		return nil, err
	}
	return e.reserve(ctx, abs), nil
}

func (e *ExecutionEnv) reserve(ctx context.Context, abs string) *Reservation {
	q := &e.queue
	r := &Reservation{q: q, s: &slot{done: make(chan struct{})}, e: e, abs: abs, entered: make(chan struct{}), finished: make(chan struct{})}
	q.mu.Lock()
	q.unfinished = append(q.unfinished, r)
	before := q.last
	q.last = r.entered
	key, remembered := q.keys[abs]
	q.mu.Unlock()
	go func() {
		var err error
		if !remembered {
			key, err = e.Key(ctx, abs)
		}
		if before != nil {
			<-before
		}
		q.mu.Lock()
		defer q.mu.Unlock()
		r.key, r.remembered, r.err = key, remembered, err
		if err == nil && !remembered {
			if len(q.keys) >= rememberedMax {
				clear(q.keys)
			}
			q.keys[abs] = key
		}
		if err == nil && !r.released {
			r.s.prev = q.tails[key]
			q.tails[key] = r.s
		}
		close(r.entered)
	}()
	return r
}

// Mutate runs fn while holding p's place in the mutation queue: Reserve then
// Do.
func (e *ExecutionEnv) Mutate(ctx context.Context, p string, fn func(canonical string) error) error {
	r, err := e.Reserve(ctx, p)
	if err != nil {
		return err
	}
	return r.Do(ctx, fn)
}

// Key is the canonical key the reservation holds, once the host has said
// (it waits for that); the zero Key when that failed.
func (r *Reservation) Key() canonpath.Key {
	<-r.entered
	return r.key
}

// Do waits until every earlier reservation of the same file is released,
// runs fn, and releases. fn gets the canonical path its write must check
// (ops.WriteOptions.Canonical): the remembered key's, or "" when the host
// gave the key just now. When fn fails with ops.ErrMoved, Do forgets that
// key and runs fn once more, in the queue of the key the host gives now.
// If ctx ends while waiting, Do releases and returns ctx's error without
// running fn.
func (r *Reservation) Do(ctx context.Context, fn func(canonical string) error) error {
	defer r.finish()
	err := r.do(ctx, fn)
	// (ErrMoved comes from fn, which ran once the reservation had entered
	// its queue: only then is r.remembered settled. A Do that gave up
	// waiting before must not read it.)
	if !errors.Is(err, ops.ErrMoved) || !r.remembered && !r.pinned {
		return err
	}
	r.q.mu.Lock()
	if r.q.keys[r.abs] == r.key {
		delete(r.q.keys, r.abs)
	}
	r.q.mu.Unlock()
	if r.pinned {
		return err
	}
	again := r.e.reserve(ctx, r.abs)
	defer again.finish()
	return again.do(ctx, fn)
}

// Hold marks the reservation as not admitted yet — its call waits for a
// decision, a person's approval — until the function returned is called.
// Barriers taken meanwhile (After, AfterUnder) do not wait for it: a
// command another front end sends while a person decides on a write need
// not wait for that person. Calls of the same batch are admitted in order,
// so they never see a held reservation before theirs.
func (r *Reservation) Hold() (admitted func()) {
	r.q.mu.Lock()
	r.held = true
	r.q.mu.Unlock()
	return func() {
		r.q.mu.Lock()
		r.held = false
		r.q.mu.Unlock()
	}
}

// Pin commits the reservation's mutation to its key, for a caller that
// decided on the key (a permission rule matched against it): Do then
// passes the key to fn whether the host gave it just now or the queue
// remembered it, so the write checks as it commits that its path still
// names that file; and a write that finds it moved fails with
// ops.ErrMoved rather than run again under the key the host gives now,
// which nobody decided on. Call it before Do, from the goroutine that
// reserved.
func (r *Reservation) Pin() { r.pinned = true }

func (r *Reservation) do(ctx context.Context, fn func(canonical string) error) error {
	defer r.release()
	if err := r.wait(ctx); err != nil {
		return err
	}
	canonical := ""
	if r.remembered || r.pinned {
		canonical = r.key.Path()
	}
	return fn(canonical)
}

func (r *Reservation) wait(ctx context.Context) error {
	select {
	case <-r.entered:
	case <-ctx.Done():
		return ctx.Err()
	}
	if r.err != nil {
		return r.err
	}
	// Walk back through the predecessors: a predecessor that gave up its
	// place early is done before its own predecessors are, so each one is
	// waited for.
	for {
		r.q.mu.Lock()
		p := r.s.prev
		r.q.mu.Unlock()
		if p == nil {
			return nil
		}
		select {
		case <-p.done:
			r.q.mu.Lock()
			if r.s.prev == p {
				r.s.prev = p.prev
			}
			r.q.mu.Unlock()
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// Release gives up the place in the queue. It is idempotent, and may come
// before the reservation has entered its queue (it then never does).
func (r *Reservation) Release() {
	r.release()
	r.finish()
}

// release gives up the place in the file's queue; finish ends the
// mutation for the barriers after it. Do keeps them apart: a mutation run
// again under a new key (ErrMoved) leaves its first place but is not over.
func (r *Reservation) release() {
	r.once.Do(func() {
		r.q.mu.Lock()
		defer r.q.mu.Unlock()
		r.released = true
		close(r.s.done)
		if r.q.tails[r.key] == r.s {
			delete(r.q.tails, r.key)
		}
	})
}

func (r *Reservation) finish() {
	r.finishOnce.Do(func() {
		r.q.mu.Lock()
		r.q.unfinished = slices.DeleteFunc(r.q.unfinished, func(p *Reservation) bool { return p == r })
		r.q.mu.Unlock()
		close(r.finished)
	})
}

// pending reports how many files have reservations; for tests.
func (q *mutationQueue) pending() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.tails)
}
