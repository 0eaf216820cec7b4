package printer

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/pi-remote/pi-remote/env"
	"github.com/pi-remote/pi-remote/loop"
	"github.com/pi-remote/pi-remote/ops/local"
	"github.com/pi-remote/pi-remote/ops/ssh"
	"github.com/pi-remote/pi-remote/tools"
)

func uiEvents(lines int) []loop.Event {
	var out strings.Builder
	for i := 1; i <= lines; i++ {
		fmt.Fprintf(&out, "step %d\n", i)
	}
	partial := loop.TextResult(out.String())
	return []loop.Event{
		loop.TurnStart{},
		loop.MessageUpdate{Message: &loop.AssistantMessage{}, Delta: &loop.TextDelta{Delta: "Building."}},
		loop.MessageEnd{Message: &loop.AssistantMessage{Content: loop.ContentList{&loop.Text{Text: "Building."}}, Usage: &loop.Usage{Input: 310, Output: 12, CacheRead: 128}}},
		loop.ToolExecutionStart{ToolCallID: "c1", ToolName: "bash", Args: json.RawMessage(`{"command":"make"}`)},
		loop.ToolExecutionUpdate{ToolCallID: "c1", ToolName: "bash", PartialResult: partial},
		loop.ToolExecutionUpdate{ToolCallID: "c1", ToolName: "bash", PartialResult: partial},
		loop.ToolExecutionEnd{ToolCallID: "c1", ToolName: "bash", Result: partial, IsError: true},
	}
}

func defsByName(t *testing.T) map[string]tools.Definition {
	e := env.New(local.New(), env.Options{Cwd: t.TempDir(), Home: t.TempDir()})
	m := map[string]tools.Definition{}
	for _, d := range tools.Definitions(e, tools.Options{}) {
		m[d.Name] = d
	}
	return m
}

func TestPrintUIOnATerminal(t *testing.T) {
	var out, errOut bytes.Buffer
	p := New(&out, &errOut, defsByName(t), true, true)
	for _, e := range uiEvents(30) {
		p.Emit(e)
	}
	p.Finish()
	s := errOut.String()
	assert.Equal(t, "Building.\n", out.String())
	assert.Contains(t, s, "\x1b[36m→ $ make\x1b[0m", "the call, coloured")
	assert.Contains(t, s, "    │ step 30", "live tail of the running command")
	assert.Contains(t, s, "\x1b[5F\x1b[J", "the live tail is erased before it is redrawn")
	assert.Contains(t, s, "\x1b[31m✗\x1b[0m bash", "a failed call is marked in red")
	assert.Contains(t, s, "… 18 earlier lines", "long output folded with a count")
	assert.Contains(t, s, "tokens: 310 in (128 cached), 12 out", "usage per turn")
	assert.Contains(t, s, "waiting for the model", "spinner while the model thinks")
}

func TestPrintUIPiped(t *testing.T) {
	var out, errOut bytes.Buffer
	p := New(&out, &errOut, defsByName(t), false, false)
	for _, e := range uiEvents(30) {
		p.Emit(e)
	}
	p.Finish()
	s := errOut.String()
	assert.NotContains(t, s, "\x1b", "plain text when piped")
	assert.NotContains(t, s, "│", "no live tail when piped")
	assert.Contains(t, s, "→ $ make\n  ✗ bash\n    … 18 earlier lines\n    step 19\n")
}

func TestPrintUITellsOfLostConnections(t *testing.T) {
	var out, errOut bytes.Buffer
	p := New(&out, &errOut, defsByName(t), false, false)
	p.LinkState("devbox", ssh.LinkReconnecting, 0, nil)
	p.LinkState("devbox", ssh.LinkBack, 12340*time.Millisecond, nil)
	p.LinkState("devbox", ssh.LinkReconnecting, 0, nil)
	p.LinkState("devbox", ssh.LinkGaveUp, 3*time.Minute, errors.New("connection refused"))
	assert.Equal(t, "  ⟳ connection to devbox lost; reconnecting… (running commands go on there)\n"+
		"  ⟳ reconnected to devbox after 12.3s\n"+
		"  ⟳ connection to devbox lost; reconnecting… (running commands go on there)\n"+
		"  ✗ devbox did not come back within 3m0s: connection refused\n", errOut.String())
	assert.Empty(t, out.String(), "stdout has the assistant's text only")
}

// A refusal of a context too long is a note (the session compacts and
// tries again), other failures are errors.
func TestPrintUIOverflowIsNotAnError(t *testing.T) {
	var out, errOut bytes.Buffer
	p := New(&out, &errOut, defsByName(t), true, false)
	p.Emit(loop.MessageEnd{Message: &loop.AssistantMessage{StopReason: loop.StopError, ErrorMessage: "This model's maximum context length is 8192 tokens (HTTP 400)"}})
	p.Emit(loop.MessageEnd{Message: &loop.AssistantMessage{StopReason: loop.StopError, ErrorMessage: "Internal server error (HTTP 500)"}})
	p.Finish()
	s := errOut.String()
	assert.Contains(t, s, "the context did not fit: This model's maximum context length is 8192 tokens")
	assert.NotContains(t, s, "error: This model's")
	assert.Contains(t, s, "error: Internal server error (HTTP 500)")
}
