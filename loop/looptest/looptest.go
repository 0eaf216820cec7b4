// Package looptest provides a scripted model for tests of the agent loop
// and of anything built on it. It replays prepared responses and records
// the requests it was sent.
package looptest

import (
	"context"
	"encoding/json"
	"iter"
	"sync"

	"github.com/pi-remote/pi-remote/loop"
)

// Scripted is a loop.Model that replays one response per call. It is safe
// for concurrent use.
type Scripted struct {
	mu        sync.Mutex
	responses [][]loop.StreamEvent
	requests  []loop.Request
}

// New returns a model that answers the n-th call with responses[n]. Calls
// past the end get a plain "done" text answer.
func New(responses ...[]loop.StreamEvent) *Scripted {
	return &Scripted{responses: responses}
}

// Requests returns the requests received so far.
func (s *Scripted) Requests() []loop.Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]loop.Request(nil), s.requests...)
}

// Stream implements loop.Model.
func (s *Scripted) Stream(ctx context.Context, req loop.Request) iter.Seq[loop.StreamEvent] {
	s.mu.Lock()
	n := len(s.requests)
	s.requests = append(s.requests, req)
	var events []loop.StreamEvent
	if n < len(s.responses) {
		events = s.responses[n]
	} else {
		events = Text("done")
	}
	s.mu.Unlock()
	return func(yield func(loop.StreamEvent) bool) {
		for _, ev := range events {
			if ctx.Err() != nil {
				yield(&loop.StreamError{StopReason: loop.StopAborted, Message: "aborted"})
				return
			}
			if !yield(ev) {
				return
			}
		}
	}
}

// Text is a response that says text and stops.
func Text(text string) []loop.StreamEvent {
	return []loop.StreamEvent{
		&loop.StreamStart{Model: "scripted"},
		&loop.TextDelta{Index: 0, Delta: text},
		&loop.StreamDone{StopReason: loop.StopEnd, Usage: &loop.Usage{Input: 10, Output: 5}},
	}
}

// Call is a tool call for ToolCalls.
type Call struct {
	ID   string
	Name string
	Args any // marshalled to JSON; a string is used as raw JSON text
}

// ToolCalls is a response asking for the given tool calls, with each call's
// arguments split across two deltas as real providers stream them.
func ToolCalls(calls ...Call) []loop.StreamEvent {
	evs := []loop.StreamEvent{&loop.StreamStart{Model: "scripted"}}
	for i, c := range calls {
		var raw string
		if s, ok := c.Args.(string); ok {
			raw = s
		} else {
			b, err := json.Marshal(c.Args)
			if err != nil {
				panic(err)
			}
			raw = string(b)
		}
		half := len(raw) / 2
		evs = append(evs,
			&loop.ToolCallDelta{Index: i, ID: c.ID, Name: c.Name, ArgumentsDelta: raw[:half]},
			&loop.ToolCallDelta{Index: i, ArgumentsDelta: raw[half:]},
		)
	}
	return append(evs, &loop.StreamDone{StopReason: loop.StopToolUse, Usage: &loop.Usage{Input: 20, Output: 10}})
}
