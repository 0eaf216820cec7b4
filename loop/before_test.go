package loop_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pi-remote/pi-remote/loop"
)

// TestBeforeToolCallRewrites: arguments BeforeToolCall gives are validated
// again and are what Admit, Execute and AfterToolCall see; its note ends
// the result, whatever the result is.
func TestBeforeToolCallRewrites(t *testing.T) {
	tool := echoTool()
	tool.Validate = func(args json.RawMessage) (json.RawMessage, error) {
		var in struct{ Text string }
		if err := json.Unmarshal(args, &in); err != nil || in.Text == "" {
			return nil, errors.New("text is required")
		}
		return args, nil
	}
	var admitted []string
	tool.Admit = func(_ context.Context, args json.RawMessage) (any, func(), error) {
		admitted = append(admitted, string(args))
		if string(args) == `{"text":"refused"}` {
			return nil, nil, errors.New("not admitted")
		}
		return nil, nil, nil
	}
	var afterArgs []string
	cfg := loop.Config{
		Tools: []loop.Tool{tool},
		BeforeToolCall: func(_ context.Context, c loop.BeforeToolCallContext) (*loop.BeforeToolCallResult, error) {
			var in struct{ Text string }
			require.NoError(t, json.Unmarshal(c.Args, &in))
			switch in.Text {
			case "rewrite":
				return &loop.BeforeToolCallResult{Args: json.RawMessage(`{"text":"rewritten"}`), Note: "a note"}, nil
			case "invalid":
				return &loop.BeforeToolCallResult{Args: json.RawMessage(`{"text":""}`), Note: "a note"}, nil
			case "block":
				return &loop.BeforeToolCallResult{Block: true, Reason: "no", Note: "a note"}, nil
			case "refuse":
				return &loop.BeforeToolCallResult{Args: json.RawMessage(`{"text":"refused"}`), Note: "a note"}, nil
			}
			return nil, nil
		},
		AfterToolCall: func(_ context.Context, c loop.AfterToolCallContext) (*loop.AfterToolCallResult, error) {
			afterArgs = append(afterArgs, string(c.Args))
			return nil, nil
		},
	}
	call := func(text string) *loop.ToolResultMessage {
		return loop.ExecuteTool(t.Context(), cfg, &loop.ToolCall{ID: text, Name: "echo", Arguments: json.RawMessage(`{"text":"` + text + `"}`)}, nil)
	}

	m := call("rewrite")
	assert.False(t, m.IsError)
	assert.Equal(t, "rewritten\na note", textOf(m), "the tool ran with the new arguments; the note ends the result")
	assert.Equal(t, []string{`{"text":"rewritten"}`}, afterArgs)

	m = call("invalid")
	assert.True(t, m.IsError)
	assert.Equal(t, "Invalid arguments for echo (as rewritten before the call): text is required\na note", textOf(m))

	m = call("block")
	assert.True(t, m.IsError)
	assert.Equal(t, "no\na note", textOf(m))

	m = call("refuse")
	assert.True(t, m.IsError)
	assert.Equal(t, "echo: not admitted\na note", textOf(m))

	assert.Equal(t, []string{`{"text":"rewritten"}`, `{"text":"refused"}`}, admitted, "Admit sees the new arguments; a blocked or invalid call is never admitted")
	assert.Len(t, afterArgs, 1, "only the executed call is finalized")
}
