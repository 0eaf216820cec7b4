package loop

import (
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"slices"
	"strings"
	"time"
)

// assembler builds an assistant message from stream events. Blocks are
// replaced, never mutated, so a shallow copy of the message is a stable
// snapshot.
type assembler struct {
	msg  *AssistantMessage
	args map[int]*strings.Builder // raw tool-call arguments by block index
	pos  map[int]int              // block index -> position in msg.Content
	done bool
}

func newAssembler(timestamp int64) *assembler {
	return &assembler{
		msg:  &AssistantMessage{Timestamp: timestamp},
		args: map[int]*strings.Builder{},
		pos:  map[int]int{},
	}
}

func (a *assembler) block(index int, make func() Content) (int, Content) {
	if p, ok := a.pos[index]; ok {
		return p, a.msg.Content[p]
	}
	c := make()
	a.msg.Content = append(a.msg.Content, c)
	a.pos[index] = len(a.msg.Content) - 1
	return len(a.msg.Content) - 1, c
}

func (a *assembler) set(p int, c Content) {
	content := slices.Clone(a.msg.Content)
	content[p] = c
	a.msg.Content = content
}

// apply folds one event into the message. It reports false for events that
// do not fit (a delta of another kind at an existing index).
func (a *assembler) apply(ev StreamEvent) error {
	switch ev := ev.(type) {
	case *StreamStart:
		a.msg.Model = ev.Model
	case *TextDelta:
		p, c := a.block(ev.Index, func() Content { return &Text{} })
		t, ok := c.(*Text)
		if !ok {
			return fmt.Errorf("text delta for %s block %d", c.contentType(), ev.Index)
		}
		a.set(p, &Text{Text: t.Text + ev.Delta})
	case *ThinkingDelta:
		p, c := a.block(ev.Index, func() Content { return &Thinking{} })
		t, ok := c.(*Thinking)
		if !ok {
			return fmt.Errorf("thinking delta for %s block %d", c.contentType(), ev.Index)
		}
		sig := t.Signature
		if ev.Signature != "" {
			sig = ev.Signature
		}
		a.set(p, &Thinking{Thinking: t.Thinking + ev.Delta, Signature: sig})
	case *ToolCallDelta:
		p, c := a.block(ev.Index, func() Content { return &ToolCall{} })
		tc, ok := c.(*ToolCall)
		if !ok {
			return fmt.Errorf("tool call delta for %s block %d", c.contentType(), ev.Index)
		}
		b := a.args[ev.Index]
		if b == nil {
			b = &strings.Builder{}
			a.args[ev.Index] = b
		}
		b.WriteString(ev.ArgumentsDelta)
		next := *tc
		if ev.ID != "" {
			next.ID = ev.ID
		}
		if ev.Name != "" {
			next.Name = ev.Name
		}
		a.set(p, &next)
	case *StreamDone:
		a.msg.StopReason = ev.StopReason
		a.msg.Usage = ev.Usage
		a.done = true
	case *StreamError:
		a.msg.StopReason = ev.StopReason
		a.msg.ErrorMessage = ev.Message
		a.msg.Usage = ev.Usage
		a.done = true
	default:
		return fmt.Errorf("unknown stream event %T", ev)
	}
	return nil
}

// finish parses the tool-call arguments. Arguments that are not valid JSON
// are kept as a JSON string so the transcript stays valid and the prepare
// stage can report the problem to the model.
func (a *assembler) finish() *AssistantMessage {
	for index, b := range a.args {
		p := a.pos[index]
		tc := *(a.msg.Content[p].(*ToolCall))
		raw := strings.TrimSpace(b.String())
		switch {
		case raw == "":
			tc.Arguments = json.RawMessage("{}")
		case json.Valid([]byte(raw)):
			tc.Arguments = json.RawMessage(raw)
		default:
			quoted, err := json.Marshal(raw)
			if err != nil {
				quoted = json.RawMessage("{}")
			}
			tc.Arguments = quoted
		}
		a.set(p, &tc)
	}
	return a.msg
}

// snapshot is a copy of the message safe to hand to an event consumer.
func (a *assembler) snapshot() *AssistantMessage {
	m := *a.msg
	m.Content = slices.Clone(a.msg.Content)
	return &m
}

// Complete makes one model call outside a run (no tools unless req has
// them, no events) and returns the assembled message; a failure is the
// message's StopReason and ErrorMessage, as in a run.
func Complete(ctx context.Context, m Model, req Request) *AssistantMessage {
	a := newAssembler(time.Now().UnixMilli())
	a.consume(ctx, m.Stream(ctx, req), func(StreamEvent) {})
	msg := a.finish()
	if msg.StopReason == StopError && ctx.Err() != nil {
		msg.StopReason = StopAborted
	}
	return msg
}

// consume applies a model's stream, calling each after every event
// applied, and ends the message if the stream did not (aborted when ctx
// ended, an error otherwise).
func (a *assembler) consume(ctx context.Context, events iter.Seq[StreamEvent], each func(StreamEvent)) {
	for ev := range events {
		if a.done {
			break // nothing may follow the final event
		}
		if err := a.apply(ev); err != nil {
			a.apply(&StreamError{StopReason: StopError, Message: "malformed model stream: " + err.Error()})
			break
		}
		each(ev)
	}
	if !a.done {
		if ctx.Err() != nil {
			a.apply(&StreamError{StopReason: StopAborted, Message: "aborted"})
		} else {
			a.apply(&StreamError{StopReason: StopError, Message: "model stream ended without a final event"})
		}
	}
}
