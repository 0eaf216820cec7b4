package env

import (
	"context"
	"strings"

	"github.com/pi-remote/pi-remote/canonpath"
)

// A Barrier orders a call that does not mutate (a read, a search, a
// command) after the mutations reserved before it on the environment, so
// that the calls of one batch see the writes and edits before them. It is
// taken in the same in-order stage as the reservations (the agent loop's
// prepare stage) and, like Reserve, never waits there: Wait, when the call
// runs, waits for the earlier mutations that overlap it and for nothing
// else, so calls that do not depend on each other still run in parallel.
//
// A Barrier after everything (After) waits for every earlier mutation: a
// shell command may touch any file. A Barrier under a path (AfterUnder)
// waits for the earlier mutations of that path, or, for a directory, of
// anything below it. Mutations count from any caller that reserved before,
// not only from the same batch, once admitted (Reservation.Hold).
//
// Overlap is first decided on the spelling: a mutation whose absolute path
// is the barrier's path or below it. Another spelling of the same file (a
// symlinked directory on the way) is caught by the canonical keys: when an
// earlier mutation does not match by spelling, the barrier's own key is
// asked of the host at once, concurrently with the mutations, and compared
// with theirs when the call runs.
type Barrier struct {
	all    bool
	abs    string // the path the call touches, when not all
	before []*Reservation

	keyed chan struct{} // closed once key is set; nil when no key is needed
	key   canonpath.Key // zero when asking failed: then the spelling decides
}

// After returns a barrier after every mutation reserved so far.
func (e *ExecutionEnv) After() *Barrier {
	return &Barrier{all: true, before: e.queue.snapshot()}
}

// AfterUnder returns a barrier after the mutations reserved so far of the
// path p (as by Resolve) or of anything below it. A path that does not
// resolve gives a barrier after everything, so the call reports its own
// error in its place.
func (e *ExecutionEnv) AfterUnder(ctx context.Context, p string) *Barrier {
	abs, err := e.Resolve(ctx, p)
	if err != nil {
		return e.After()
	}
	b := &Barrier{abs: abs, before: e.queue.snapshot()}
	spelled := true
	for _, r := range b.before {
		if !under(r.abs, abs) {
			spelled = false
		}
	}
	if spelled {
		return b
	}
	e.queue.mu.Lock()
	key, remembered := e.queue.keys[abs]
	e.queue.mu.Unlock()
	b.keyed = make(chan struct{})
	if remembered {
		b.key = key
		close(b.keyed)
		return b
	}
	go func() {
		defer close(b.keyed)
		if k, err := e.Key(ctx, abs); err == nil {
			b.key = k
		}
	}()
	return b
}

// Wait waits until every earlier mutation the barrier overlaps is over, or
// ctx ends (it then returns ctx's error).
func (b *Barrier) Wait(ctx context.Context) error {
	for _, r := range b.before {
		if !b.all && !under(r.abs, b.abs) {
			overlaps, err := b.overlapsKey(ctx, r)
			if err != nil {
				return err
			}
			if !overlaps {
				continue
			}
		}
		select {
		case <-r.finished:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// overlapsKey reports whether r's file is the barrier's, or below it, by
// their canonical keys.
func (b *Barrier) overlapsKey(ctx context.Context, r *Reservation) (bool, error) {
	for _, ch := range []chan struct{}{b.keyed, r.entered} {
		select {
		case <-ch:
		case <-ctx.Done():
			return false, ctx.Err()
		}
	}
	if r.err != nil || b.key == (canonpath.Key{}) {
		// Nothing to compare: the mutation fails on its own, or the host
		// could not say which file the barrier's path is; its spelling
		// did not match.
		return false, nil
	}
	return under(r.key.Path(), b.key.Path()), nil
}

// under reports whether the absolute, clean path p is dir or below it.
func under(p, dir string) bool {
	if p == dir || dir == "/" {
		return true
	}
	return strings.HasPrefix(p, dir) && p[len(dir)] == '/'
}

// snapshot is the reservations not finished yet, in order, but for those
// held (Hold).
func (q *mutationQueue) snapshot() []*Reservation {
	q.mu.Lock()
	defer q.mu.Unlock()
	var out []*Reservation
	for _, r := range q.unfinished {
		if !r.held {
			out = append(out, r)
		}
	}
	return out
}
