package loop

import (
	"context"
	"encoding/json"
	"iter"
)

// Model is a language model behind a streaming interface. Providers live in
// package llm; tests use a scripted model.
type Model interface {
	// Stream sends the request and yields the response as stream events,
	// ending with exactly one *StreamDone or *StreamError. Cancelling ctx
	// ends the stream with a StreamError whose StopReason is StopAborted.
	Stream(ctx context.Context, req Request) iter.Seq[StreamEvent]
}

// Request is one model call.
type Request struct {
	SystemPrompt string
	Messages     []Message
	Tools        []ToolSpec
}

// ToolSpec describes a tool to the model.
type ToolSpec struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Parameters  json.RawMessage `json:"parameters"`
	Strict      bool            `json:"strict,omitempty"`
}

// StreamEvent is one event of a model response. The set is closed.
// Content blocks are addressed by Index, the position of the block in the
// final message; a new Index starts a new block.
type StreamEvent interface {
	streamEvent() string
}

type (
	// StreamStart opens a response.
	StreamStart struct {
		Model string `json:"model,omitempty"`
	}
	// TextDelta appends text to the text block at Index.
	TextDelta struct {
		Index int    `json:"contentIndex"`
		Delta string `json:"delta"`
	}
	// ThinkingDelta appends reasoning to the thinking block at Index.
	ThinkingDelta struct {
		Index     int    `json:"contentIndex"`
		Delta     string `json:"delta"`
		Signature string `json:"signature,omitempty"`
	}
	// ToolCallDelta starts (ID and Name set) or continues the tool call at
	// Index; ArgumentsDelta is a piece of its JSON arguments.
	ToolCallDelta struct {
		Index          int    `json:"contentIndex"`
		ID             string `json:"id,omitempty"`
		Name           string `json:"name,omitempty"`
		ArgumentsDelta string `json:"delta"`
	}
	// StreamDone ends a successful response.
	StreamDone struct {
		StopReason StopReason `json:"reason"`
		Usage      *Usage     `json:"usage,omitempty"`
	}
	// StreamError ends a failed or aborted response.
	StreamError struct {
		StopReason StopReason `json:"reason"` // StopError or StopAborted
		Message    string     `json:"error"`
		Usage      *Usage     `json:"usage,omitempty"`
	}
)

func (*StreamStart) streamEvent() string   { return "start" }
func (*TextDelta) streamEvent() string     { return "text_delta" }
func (*ThinkingDelta) streamEvent() string { return "thinking_delta" }
func (*ToolCallDelta) streamEvent() string { return "toolcall_delta" }
func (*StreamDone) streamEvent() string    { return "done" }
func (*StreamError) streamEvent() string   { return "error" }

func (e *StreamStart) MarshalJSON() ([]byte, error) {
	type plain StreamStart
	return marshalTagged(e.streamEvent(), (*plain)(e))
}

func (e *TextDelta) MarshalJSON() ([]byte, error) {
	type plain TextDelta
	return marshalTagged(e.streamEvent(), (*plain)(e))
}

func (e *ThinkingDelta) MarshalJSON() ([]byte, error) {
	type plain ThinkingDelta
	return marshalTagged(e.streamEvent(), (*plain)(e))
}

func (e *ToolCallDelta) MarshalJSON() ([]byte, error) {
	type plain ToolCallDelta
	return marshalTagged(e.streamEvent(), (*plain)(e))
}

func (e *StreamDone) MarshalJSON() ([]byte, error) {
	type plain StreamDone
	return marshalTagged(e.streamEvent(), (*plain)(e))
}

func (e *StreamError) MarshalJSON() ([]byte, error) {
	type plain StreamError
	return marshalTagged(e.streamEvent(), (*plain)(e))
}
