package tools

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/pi-remote/pi-remote/env"
	"github.com/pi-remote/pi-remote/loop"
)

// Calls in one batch see the writes and edits before them on the same host:
// a call that does not mutate takes an env.Barrier in the loop's in-order
// prepare stage (never waiting there), and Define's Execute waits on it
// before the tool runs.

// batchOrder ends every tool's description.
const batchOrder = " Calls in one batch see the writes and edits before them on the same host."

// admitAfterAll orders a call after every mutation admitted before it: a
// command may touch any file.
func admitAfterAll(e *env.ExecutionEnv) func(ctx context.Context, args json.RawMessage) (any, func(), error) {
	return func(context.Context, json.RawMessage) (any, func(), error) {
		return e.After(), nil, nil
	}
}

// AdmitUnder is the Admit of a tool that reads its "path" argument (a
// file, or a directory and what is below it), as read, grep, find and ls
// do: the call runs after the mutations reserved before it of that path
// or below it (the working directory when there is none), so it sees the
// writes and edits before it in its batch. Define's Execute does the
// waiting.
func AdmitUnder(e *env.ExecutionEnv) func(ctx context.Context, args json.RawMessage) (any, func(), error) {
	return func(ctx context.Context, args json.RawMessage) (any, func(), error) {
		var in struct {
			Path string `json:"path"`
		}
		if json.Unmarshal(args, &in) != nil {
			// (The tool reports its bad arguments itself.)
			return e.After(), nil, nil
		}
		if in.Path == "" {
			in.Path = "."
		}
		return e.AfterUnder(ctx, in.Path), nil, nil
	}
}

// AdmitPath is the Admit of a tool that changes the file its "path"
// argument names, as edit and write do: in the loop's in-order prepare
// stage it reserves that file's next place in e's mutation queue (an
// env.Reservation) without waiting, so that the mutations of one file in
// a batch apply in call order and different files proceed in parallel.
// The tool's Execute then runs its change through Mutate. A path that
// does not resolve fails the call with an error result.
func AdmitPath(e *env.ExecutionEnv) func(ctx context.Context, args json.RawMessage) (any, func(), error) {
	return func(ctx context.Context, args json.RawMessage) (any, func(), error) {
		var in struct {
			Path string `json:"path"`
		}
		if err := json.Unmarshal(args, &in); err != nil {
			return nil, nil, err
		}
		r, err := e.Reserve(ctx, in.Path)
		if err != nil {
			return nil, nil, fmt.Errorf("invalid path %q: %w", in.Path, err)
		}
		return r, r.Release, nil
	}
}

// Mutate runs fn holding p's place in e's mutation queue: the place
// AdmitPath reserved when the call came through the loop, else the next
// one (env.ExecutionEnv.Mutate), so a tool called directly is queued too.
// fn gets the canonical path its write passes on
// (ops.WriteOptions.Canonical), so that the write checks it still names
// the file the queue is for.
func Mutate(ctx context.Context, e *env.ExecutionEnv, p string, fn func(canonical string) error) error {
	if r, ok := loop.AdmissionFrom(ctx).(*env.Reservation); ok {
		return r.Do(ctx, fn)
	}
	return e.Mutate(ctx, p, fn)
}

// awaitBarrier waits, when the call was admitted behind a barrier, for the
// mutations it follows.
func awaitBarrier(ctx context.Context) error {
	if b, ok := loop.AdmissionFrom(ctx).(*env.Barrier); ok {
		return b.Wait(ctx)
	}
	return nil
}
