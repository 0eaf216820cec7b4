package tui

import (
	"fmt"
	"strings"
	"testing"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pi-remote/pi-remote/agent"
	"github.com/pi-remote/pi-remote/loop"
)

// Tool events: a running box is live, a finished one leaves the view
// (for the scrollback).
func TestToolBoxesLiveThenScrollback(t *testing.T) {
	h := newHarness(t, Options{})
	h.do(eventMsg{loop.ToolExecutionStart{ToolCallID: "c1", ToolName: "bash", Args: []byte(`{"command":"make"}`)}})
	h.do(eventMsg{loop.ToolExecutionUpdate{ToolCallID: "c1", ToolName: "bash", PartialResult: loop.TextResult("compiling\nlinking")}})
	assert.Contains(t, h.view(), "linking")
	h.do(eventMsg{loop.ToolExecutionEnd{ToolCallID: "c1", ToolName: "bash", Result: loop.TextResult("built")}})
	assert.NotContains(t, h.view(), "make")
	h.do(eventMsg{loop.MessageUpdate{Message: &loop.AssistantMessage{}, Delta: &loop.TextDelta{Delta: "Done: "}}})
	h.do(eventMsg{loop.MessageUpdate{Message: &loop.AssistantMessage{}, Delta: &loop.TextDelta{Delta: "it builds."}}})
	assert.Contains(t, h.view(), "Done: it builds.", "the answer streams live")
	h.do(eventMsg{loop.MessageEnd{Message: &loop.AssistantMessage{Content: loop.ContentList{&loop.Text{Text: "Done: it builds."}}}}})
	assert.NotContains(t, h.view(), "Done: it builds.", "a finished answer goes to the scrollback")
	assert.Equal(t, "Done: it builds.", h.m.transcript.lastAnswer)
	h.do(eventMsg{agent.UsageUpdate{Session: agent.Totals{Cost: 1.5}, ContextTokens: 800, ContextWindow: 1000}})
	assert.Contains(t, h.view(), "$1.500")
	assert.Contains(t, h.view(), "ctx 80% of 1k")
}

// An answer streams: blocks that are complete (a blank line outside a
// code fence ends them) go to the scrollback as they come; only the block
// being written is live.
func TestStreamingMarkdown(t *testing.T) {
	assert.Equal(t, 0, stableCut("one paragraph, still going"))
	assert.Equal(t, len("First.\n\n"), stableCut("First.\n\nSecond"))
	assert.Equal(t, len("a\n\n"), stableCut("a\n\n```go\nx := 1\n\ny := 2\n"), "no cut inside a fence")
	assert.Equal(t, len("a\n\n```go\nx\n\ny\n```\n\n"), stableCut("a\n\n```go\nx\n\ny\n```\n\nafter"))

	h := newHarness(t, Options{})
	delta := func(s string) {
		h.do(eventMsg{loop.MessageUpdate{Message: &loop.AssistantMessage{}, Delta: &loop.TextDelta{Delta: s}}})
	}
	h.do(eventMsg{loop.MessageStart{Message: &loop.AssistantMessage{}}})
	h.do(eventMsg{loop.MessageUpdate{Message: &loop.AssistantMessage{}, Delta: &loop.ThinkingDelta{Delta: "let me\nthink"}}})
	delta("First paragraph.")
	assert.Contains(t, h.view(), "First paragraph.")
	assert.True(t, h.m.transcript.thoughtShown, "the folded thinking went out before the text")
	delta("\n\nSecond ")
	assert.NotContains(t, h.view(), "First paragraph.", "a finished block leaves the live part")
	assert.Contains(t, h.view(), "Second")
	delta("paragraph.")
	h.do(eventMsg{loop.MessageEnd{Message: &loop.AssistantMessage{Content: loop.ContentList{
		&loop.Thinking{Thinking: "let me\nthink"}, &loop.Text{Text: "First paragraph.\n\nSecond paragraph."}}}}})
	assert.NotContains(t, h.view(), "Second")
	assert.Equal(t, "First paragraph.\n\nSecond paragraph.", h.m.transcript.lastAnswer)
}

// Ctrl+O shows all tool output or folds it, in place: the boxes still
// live change, nothing is printed again, and boxes go to the scrollback
// as shown; with paste markers in the editor it shows what they stand
// for.
func TestCtrlO(t *testing.T) {
	h := newHarness(t, Options{})
	ctrlO := tea.KeyPressMsg{Code: 'o', Mod: tea.ModCtrl}
	output := make([]string, 12)
	for i := range output {
		output[i] = fmt.Sprintf("out %d", i+1)
	}
	h.do(eventMsg{loop.ToolExecutionStart{ToolCallID: "a", ToolName: "bash", Args: []byte(`{"command":"x"}`)}})
	h.do(eventMsg{loop.ToolExecutionUpdate{ToolCallID: "a", ToolName: "bash", PartialResult: loop.TextResult(strings.Join(output, "\n"))}})
	assert.NotContains(t, h.view(), "out 1\n", "folded: the last lines")
	assert.Contains(t, h.view(), "out 12")

	h.do(ctrlO)
	assert.Empty(t, h.printed, "nothing is printed again")
	assert.True(t, h.m.transcript.expanded)
	assert.Contains(t, h.view(), "out 1\n", "in full, in place")
	assert.Contains(t, h.view(), "tool output in full")
	h.typeText("x")
	assert.NotContains(t, h.view(), "tool output in full", "the note goes at the next key")
	h.do(tea.KeyPressMsg{Code: tea.KeyBackspace})
	h.do(eventMsg{loop.ToolExecutionEnd{ToolCallID: "a", ToolName: "bash", Result: loop.TextResult(strings.Join(output, "\n"))}})
	require.NotEmpty(t, h.printed)
	assert.Contains(t, strings.Join(h.printed, "\n"), "out 1\n", "the box goes to the scrollback as shown: in full")
	printed := len(h.printed)

	h.do(ctrlO)
	assert.False(t, h.m.transcript.expanded)
	assert.Len(t, h.printed, printed, "nothing is printed again")
	h.do(ctrlO)
	assert.Len(t, h.printed, printed, "nothing is printed again")

	h.do(tea.PasteMsg{Content: strings.Repeat("line\n", 20)})
	expanded := h.m.transcript.expanded
	h.do(ctrlO)
	assert.Equal(t, strings.Repeat("line\n", 20), h.m.editor.value())
	assert.Equal(t, expanded, h.m.transcript.expanded, "the key was the editor's")
}

// Finished boxes go to the scrollback in the order of the calls, not of
// their ends: a box waits, live, for those before it.
func TestToolBoxesInCallOrder(t *testing.T) {
	h := newHarness(t, Options{Tools: definitions(t)})
	h.do(eventMsg{loop.MessageEnd{Message: &loop.AssistantMessage{StopReason: loop.StopToolUse, Content: loop.ContentList{
		&loop.ToolCall{ID: "c1", Name: "bash", Arguments: []byte(`{"command":"echo first"}`)},
		&loop.ToolCall{ID: "c2", Name: "bash", Arguments: []byte(`{"command":"echo second"}`)},
		&loop.ToolCall{ID: "c3", Name: "bash", Arguments: []byte(`{"command":"echo third"}`)},
	}}}})
	for _, id := range []string{"c1", "c2", "c3"} {
		h.do(eventMsg{loop.ToolExecutionStart{ToolCallID: id, ToolName: "bash"}})
	}
	end := func(id string) {
		h.do(eventMsg{loop.ToolExecutionEnd{ToolCallID: id, ToolName: "bash", Result: loop.TextResult("result of " + id)}})
	}
	end("c3")
	end("c2")
	assert.Empty(t, h.printed, "the first call still runs")
	assert.Contains(t, h.view(), "result of c3", "a finished box waits in view")
	end("c1")
	require.Len(t, h.printed, 3)
	for i, id := range []string{"c1", "c2", "c3"} {
		assert.Contains(t, h.printed[i], "result of "+id)
	}
	assert.NotContains(t, h.view(), "result of")
}

// The calls an answer asks for show as pending until they start.
func TestPendingThenRunning(t *testing.T) {
	h := newHarness(t, Options{Tools: definitions(t)})
	h.do(eventMsg{loop.MessageEnd{Message: &loop.AssistantMessage{StopReason: loop.StopToolUse, Content: loop.ContentList{
		&loop.ToolCall{ID: "c1", Name: "bash", Arguments: []byte(`{"command":"make"}`)},
		&loop.ToolCall{ID: "c2", Name: "bash", Arguments: []byte(`{"command":"make test"}`)},
	}}}})
	require.Len(t, h.m.transcript.boxes, 2)
	assert.Contains(t, h.view(), "○ $ make test")
	h.do(eventMsg{loop.ToolExecutionStart{ToolCallID: "c1", ToolName: "bash", Args: []byte(`{"command":"make"}`)}})
	assert.Equal(t, toolRunning, h.m.transcript.boxes[0].state)
	assert.Equal(t, toolPending, h.m.transcript.boxes[1].state)
	require.Len(t, h.m.transcript.boxes, 2, "no second box for a started call")
}

// The transcript on its own, printing to a list: when a run ends, what
// was live goes to the scrollback in order — the tools still running
// (interrupted), the rest of the answer, the messages not delivered.
func TestTranscriptEndRun(t *testing.T) {
	var printed []string
	f := frame{cols: 79, th: newTheme(false), spin: "⠋", print: func(s string) tea.Cmd {
		printed = append(printed, s)
		return nil
	}}
	tr := transcript{}
	tr.event(loop.MessageStart{Message: &loop.AssistantMessage{}}, f)
	tr.event(loop.MessageUpdate{Message: &loop.AssistantMessage{}, Delta: &loop.TextDelta{Delta: "half an answer"}}, f)
	tr.event(loop.ToolExecutionStart{ToolCallID: "c1", ToolName: "bash", Args: []byte(`{"command":"sleep 9"}`)}, f)
	tr.queued = []string{"and then this"}
	assert.Empty(t, printed, "all of it is live")
	assert.Len(t, tr.view(true, f, 20), 3, "the answer, the tool, the queued message")

	tr.endRun(f)
	require.Len(t, printed, 3)
	assert.Contains(t, printed[0], "✗")
	assert.Contains(t, printed[0], "interrupted")
	assert.Contains(t, printed[1], "half an answer")
	assert.Equal(t, "(not delivered) › and then this", printed[2])
	assert.Empty(t, tr.view(false, f, 20), "nothing is live any more")
}

// A paragraph being written shows whole, wrapped at the terminal's width
// (its last 12 rows), not as one line cut at the edge.
func TestStreamingParagraphWraps(t *testing.T) {
	h := newHarness(t, Options{})
	h.do(tea.WindowSizeMsg{Width: 60, Height: 40})
	h.do(eventMsg{loop.MessageStart{Message: &loop.AssistantMessage{}}})
	words := make([]string, 40)
	for i := range words {
		words[i] = fmt.Sprintf("word%02d", i)
	}
	h.do(eventMsg{loop.MessageUpdate{Message: &loop.AssistantMessage{}, Delta: &loop.TextDelta{Delta: strings.Join(words, " ")}}})
	view := h.view()
	for _, w := range []string{"word00", "word20", "word39"} {
		assert.Contains(t, view, w, "the whole paragraph, wrapped")
	}
	for _, line := range strings.Split(view, "\n") {
		assert.LessOrEqual(t, ansi.StringWidth(line), 60, "%q", line)
	}
	long := strings.Repeat("abcdefghij", 30) // no space to break at
	h.do(eventMsg{loop.MessageUpdate{Message: &loop.AssistantMessage{}, Delta: &loop.TextDelta{Delta: " " + long}}})
	view = h.view()
	assert.Contains(t, view, "abcdefghij")
	for _, line := range strings.Split(view, "\n") {
		assert.LessOrEqual(t, ansi.StringWidth(line), 60, "%q", line)
	}
}
