package llm

import (
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"os"
	"sync"

	"github.com/pi-remote/pi-remote/loop"
)

// Scripted is a model that replays assistant turns from a script instead
// of calling a provider: for tests and reproducible demos. Each request
// gets the next turn; a request after the last turn is an error.
//
// Script file format:
//
//	{"turns": [
//	  {"text": "Reading it.", "toolCalls": [{"id": "c1", "name": "read", "arguments": {"path": "go.mod"}}]},
//	  {"thinking": "It is fine.", "text": "go.mod looks right."}
//	]}
type Scripted struct {
	mu    sync.Mutex
	turns []ScriptTurn
	next  int
}

// ScriptTurn is one scripted assistant response.
type ScriptTurn struct {
	Thinking  string           `json:"thinking,omitempty"`
	Text      string           `json:"text,omitempty"`
	ToolCalls []ScriptToolCall `json:"toolCalls,omitempty"`
	// StopReason overrides the natural one ("length" to test that path).
	StopReason loop.StopReason `json:"stopReason,omitempty"`
	// Error makes the turn fail with this message.
	Error string `json:"error,omitempty"`
	// Usage is the usage the turn reports (none when unset).
	Usage *loop.Usage `json:"usage,omitempty"`
}

// ScriptToolCall is one tool call of a scripted turn.
type ScriptToolCall struct {
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
}

// NewScripted replays turns.
func NewScripted(turns ...ScriptTurn) *Scripted { return &Scripted{turns: turns} }

// LoadScript reads a script file.
func LoadScript(name string) (*Scripted, error) {
	b, err := os.ReadFile(name)
	if err != nil {
		return nil, fmt.Errorf("scripted model: %w", err)
	}
	var s struct {
		Turns []ScriptTurn `json:"turns"`
	}
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("scripted model %s: %w", name, err)
	}
	if len(s.Turns) == 0 {
		return nil, fmt.Errorf("scripted model %s: no turns", name)
	}
	return NewScripted(s.Turns...), nil
}

// Stream implements loop.Model.
func (s *Scripted) Stream(ctx context.Context, _ loop.Request) iter.Seq[loop.StreamEvent] {
	return func(yield func(loop.StreamEvent) bool) {
		s.mu.Lock()
		if s.next >= len(s.turns) {
			s.mu.Unlock()
			yield(&loop.StreamError{StopReason: loop.StopError, Message: fmt.Sprintf("scripted model: no turn %d in the script", s.next+1)})
			return
		}
		t := s.turns[s.next]
		s.next++
		s.mu.Unlock()

		if !yield(&loop.StreamStart{Model: "scripted"}) {
			return
		}
		if t.Error != "" {
			yield(&loop.StreamError{StopReason: loop.StopError, Message: t.Error})
			return
		}
		idx := 0
		var events []loop.StreamEvent
		if t.Thinking != "" {
			events = append(events, &loop.ThinkingDelta{Index: idx, Delta: t.Thinking})
			idx++
		}
		if t.Text != "" {
			events = append(events, &loop.TextDelta{Index: idx, Delta: t.Text})
			idx++
		}
		for _, c := range t.ToolCalls {
			args := string(c.Arguments)
			if args == "" {
				args = "{}"
			}
			events = append(events, &loop.ToolCallDelta{Index: idx, ID: c.ID, Name: c.Name, ArgumentsDelta: args})
			idx++
		}
		for _, ev := range events {
			if ctx.Err() != nil {
				yield(&loop.StreamError{StopReason: loop.StopAborted, Message: "aborted"})
				return
			}
			if !yield(ev) {
				return
			}
		}
		stop := t.StopReason
		if stop == "" {
			stop = loop.StopEnd
			if len(t.ToolCalls) > 0 {
				stop = loop.StopToolUse
			}
		}
		yield(&loop.StreamDone{StopReason: stop, Usage: t.Usage})
	}
}
