package tui

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A paste of more than 10 lines is a marker in the editor and goes out
// whole.
func TestLongPasteIsAMarker(t *testing.T) {
	h := newHarness(t, Options{})
	var lines []string
	for i := range 200 {
		lines = append(lines, strings.Repeat("x", i%7)+"line")
	}
	pasted := strings.Join(lines, "\n") + "\n"
	h.typeText("look: ")
	h.do(tea.PasteMsg{Content: pasted})
	assert.Equal(t, "look: [paste #1: 200 lines]", h.m.editor.value())
	h.do(tea.PasteMsg{Content: "short\npaste"})
	assert.Equal(t, "look: [paste #1: 200 lines]short\npaste", h.m.editor.value())
	h.do(enter)
	require.Eventually(t, func() bool { h.a.mu.Lock(); defer h.a.mu.Unlock(); return len(h.a.prompts) == 1 }, time.Second, time.Millisecond)
	assert.Equal(t, "look: "+pasted+"short\npaste", h.a.prompts[0], "sent unchanged")
	close(h.a.release)
	h.settle()
}

// Up and Down walk through earlier prompts; a new one is saved.
func TestHistory(t *testing.T) {
	var saved []string
	h := newHarness(t, Options{History: []string{"first", "second"}, SaveHistory: func(p string) { saved = append(saved, p) }})
	h.typeText("draft")
	h.do(up)
	assert.Equal(t, "second", h.m.editor.value())
	h.do(up)
	assert.Equal(t, "first", h.m.editor.value())
	h.do(up)
	assert.Equal(t, "first", h.m.editor.value(), "nothing before the first")
	h.do(down)
	h.do(down)
	assert.Equal(t, "draft", h.m.editor.value(), "back to what was being written")
	close(h.a.release)
	h.do(enter)
	h.settle()
	assert.Equal(t, []string{"draft"}, saved)
	h.do(up)
	assert.Equal(t, "draft", h.m.editor.value())
}

// "/" offers the commands, "@" paths on the host (asked in the
// background); Tab or Enter takes the one highlighted.
func TestCompletion(t *testing.T) {
	var asked []string
	h := newHarness(t, Options{CompletePath: func(_ context.Context, prefix string) []string {
		asked = append(asked, prefix)
		return []string{prefix + "ain.go", prefix + "akefile", "cmd/"}
	}})
	h.typeText("/co")
	assert.Equal(t, []string{"/compact", "/copy"}, h.m.editor.comps)
	assert.Contains(t, h.view(), "▸ /compact")
	h.do(down)
	assert.Contains(t, h.view(), "▸ /copy", "Up and Down move through the offers")
	h.do(up)
	h.do(tea.KeyPressMsg{Code: tea.KeyTab})
	assert.Equal(t, "/compact ", h.m.editor.value())
	assert.Empty(t, h.m.editor.comps)

	h.m.editor.ta.Reset()
	h.typeText("look at @")
	h.do(tea.KeyPressMsg{Code: 'm', Text: "m"})
	h.completions()
	assert.Equal(t, []string{"m"}, asked)
	assert.Equal(t, []string{"@main.go", "@makefile", "@cmd/"}, h.m.editor.comps)
	h.do(tea.KeyPressMsg{Code: tea.KeyTab})
	assert.Equal(t, "look at @main.go ", h.m.editor.value())

	// Enter on a half-typed command runs the command offered.
	h.m.editor.ta.Reset()
	h.typeText("/hot")
	h.do(enter)
	assert.Equal(t, "", h.m.editor.value())
	assert.Empty(t, h.a.prompts, "a command, not a prompt")
}

// Ctrl+Z (or Ctrl+-) undoes the editor's changes one by one: typing, a
// new line, a paste, a completion, a clear.
func TestUndo(t *testing.T) {
	h := newHarness(t, Options{})
	undo := tea.KeyPressMsg{Code: 'z', Mod: tea.ModCtrl}
	h.do(tea.KeyPressMsg{Code: 'a', Text: "a"})
	h.do(tea.KeyPressMsg{Code: 'b', Text: "b"})
	h.do(altEnter)
	h.do(tea.PasteMsg{Content: "pasted"})
	assert.Equal(t, "ab\npasted", h.m.editor.value())
	h.do(ctrlC)
	assert.Equal(t, "", h.m.editor.value())
	h.do(undo)
	assert.Equal(t, "ab\npasted", h.m.editor.value(), "the clear is undone")
	h.do(undo)
	assert.Equal(t, "ab\n", h.m.editor.value())
	h.do(undo)
	assert.Equal(t, "ab", h.m.editor.value())
	h.do(tea.KeyPressMsg{Code: '_', Mod: tea.ModCtrl})
	assert.Equal(t, "a", h.m.editor.value())
	h.do(tea.KeyPressMsg{Code: 'c', Text: "c"})
	assert.Equal(t, "ac", h.m.editor.value(), "the cursor came back to where it was")
	h.do(undo)
	h.do(undo)
	h.do(undo)
	assert.Equal(t, "", h.m.editor.value(), "nothing left to undo is no error")
}

// A prompt with a folded paste goes to the history whole: recalled and
// sent again, the model gets the paste, not its marker.
func TestRecalledPasteSendsThePaste(t *testing.T) {
	var saved []string
	h := newHarness(t, Options{SaveHistory: func(p string) { saved = append(saved, p) }})
	close(h.a.release)
	pasted := strings.Repeat("12\n", 19) + "12"
	h.typeText("sum these: ")
	h.do(tea.PasteMsg{Content: pasted})
	h.do(enter)
	h.settle()
	h.do(up)
	h.do(enter)
	h.settle()
	require.Len(t, h.a.prompts, 2)
	assert.Equal(t, "sum these: "+pasted, h.a.prompts[1], "the recalled prompt sends the paste")
	assert.Equal(t, []string{"sum these: " + pasted}, saved, "the history file keeps the text, not the marker")
}

// A line longer than the editor is wide wraps onto as many rows as it
// needs, all shown; Up and Down move between those rows first and reach
// the history only from the first row or the last.
func TestWrappedLine(t *testing.T) {
	h := newHarness(t, Options{History: []string{"earlier"}})
	h.m.Update(tea.WindowSizeMsg{Width: 101, Height: 30})
	var words []string
	for i := range 30 {
		words = append(words, fmt.Sprintf("w%03d", i))
	}
	text := strings.Join(words, " ") // 149 columns
	h.typeText(text)
	view := ansi.Strip(h.view())
	assert.Contains(t, view, "w000 w001", "the start of the line is shown")
	assert.Contains(t, view, "w028 w029", "and its end")
	assert.Equal(t, 2, h.m.editor.ta.Height(), "two rows for a line of 149 columns at 100")
	row := func() int { return h.m.editor.cursor().Y }
	last := row()
	h.do(up)
	assert.Equal(t, text, h.m.editor.value(), "Up inside the line stays in it")
	assert.Equal(t, last-1, row(), "on the row above")
	h.do(down)
	assert.Equal(t, text, h.m.editor.value())
	assert.Equal(t, last, row(), "Down comes back")
	h.do(up)
	h.do(up)
	assert.Equal(t, "earlier", h.m.editor.value(), "Up on the first row recalls the history")
	h.do(down)
	assert.Equal(t, text, h.m.editor.value())
	assert.Equal(t, 2, h.m.editor.ta.Height())
	assert.Contains(t, ansi.Strip(h.view()), "w000 w001", "shown from its start again")
}

// A directory offered for @path is taken without a space after it, and
// what is in it is offered next; nothing offered, Tab leaves the text.
func TestCompleteDirectory(t *testing.T) {
	var asked []string
	h := newHarness(t, Options{CompletePath: func(_ context.Context, prefix string) []string {
		asked = append(asked, prefix)
		switch prefix {
		case "pk":
			return []string{"pkg/"}
		case "pkg/":
			return []string{"pkg/parse.go"}
		}
		return nil
	}})
	h.typeText("see @p")
	h.do(tea.KeyPressMsg{Code: 'k', Text: "k"})
	h.completions()
	h.do(tea.KeyPressMsg{Code: tea.KeyTab})
	assert.Equal(t, "see @pkg/", h.m.editor.value())
	h.completions()
	assert.Equal(t, []string{"@pkg/parse.go"}, h.m.editor.comps, "the directory's files offered next")
	assert.Equal(t, []string{"pk", "pkg/"}, asked)

	h.m.editor.ta.Reset()
	h.typeText("see @zz")
	h.do(tea.KeyPressMsg{Code: 'z', Text: "z"})
	h.do(tea.KeyPressMsg{Code: tea.KeyTab})
	assert.Equal(t, "see @zzz", h.m.editor.value(), "nothing offered, nothing inserted")
	assert.NotContains(t, h.view(), "▸")
}

// Typing on stops the @path query for the word as it was: a slow host is
// not searched for every letter at once.
func TestCompletionQueryStops(t *testing.T) {
	stopped := make(chan string, 4)
	h := newHarness(t, Options{CompletePath: func(ctx context.Context, prefix string) []string {
		<-ctx.Done()
		stopped <- prefix
		return nil
	}})
	h.typeText("@")
	h.do(tea.KeyPressMsg{Code: 'a', Text: "a"})
	h.do(tea.KeyPressMsg{Code: 'b', Text: "b"})
	select {
	case p := <-stopped:
		assert.Equal(t, "a", p)
	case <-time.After(5 * time.Second):
		t.Fatal("the query for @a went on")
	}
	h.do(tea.KeyPressMsg{Code: ' ', Text: " "})
	select {
	case p := <-stopped:
		assert.Equal(t, "ab", p)
	case <-time.After(5 * time.Second):
		t.Fatal("the query for @ab went on")
	}
}
