package tools

import (
	"context"
	"encoding/json"

	"github.com/pi-remote/pi-remote/env"
	"github.com/pi-remote/pi-remote/loop"
)

// Calls in one batch see the writes and edits before them on the same host:
// a call that does not mutate takes an env.Barrier in the loop's in-order
// prepare stage (never waiting there), and define's Execute waits on it
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

// admitUnder orders a call after the mutations admitted before it of its
// "path" argument or below it (the working directory when there is none).
func admitUnder(e *env.ExecutionEnv) func(ctx context.Context, args json.RawMessage) (any, func(), error) {
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

// awaitBarrier waits, when the call was admitted behind a barrier, for the
// mutations it follows.
func awaitBarrier(ctx context.Context) error {
	if b, ok := loop.AdmissionFrom(ctx).(*env.Barrier); ok {
		return b.Wait(ctx)
	}
	return nil
}
