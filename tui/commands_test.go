package tui

import (
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// /hotkeys is one table: every description starts in the same column,
// however long a key or a command's usage ("/thinking off|low|medium|high").
func TestHotkeysAligned(t *testing.T) {
	h := newHarness(t, Options{Commands: Commands{SetModel: func(string) error { return nil }, SetThinking: func(string) error { return nil }}})
	h.typeText("/hotkeys")
	h.do(enter)
	out := strings.Join(h.printed, "\n")
	require.Contains(t, out, "/thinking off|low|medium|high")
	column := -1
	for _, line := range strings.Split(out, "\n") {
		if line == "" || !strings.Contains(line, "  ") {
			continue // a heading
		}
		key := strings.Index(line, "  ")
		at := key + len(line[key:]) - len(strings.TrimLeft(line[key:], " "))
		if column < 0 {
			column = at
		}
		assert.Equal(t, column, at, "%q", line)
	}
	assert.Positive(t, column)
}

// The "Ctrl+C again to quit" hint goes when its window does (2 s, its
// timer's message), not at the next key only; a timer of an earlier
// window leaves a newer hint alone.
func TestCtrlCHintEndsWithItsWindow(t *testing.T) {
	h := newHarness(t, Options{})
	_, cmd := h.m.Update(ctrlC)
	require.NotNil(t, cmd, "a timer for the window")
	require.Contains(t, h.view(), ctrlCHint)
	first := h.m.lastCtrlC
	h.do(quitWindowMsg(first.Add(-time.Second)))
	assert.Contains(t, h.view(), ctrlCHint, "an earlier window's timer")
	h.do(quitWindowMsg(first))
	assert.NotContains(t, h.view(), ctrlCHint)
	assert.False(t, h.do(ctrlC), "the window is over: a Ctrl+C warns again, it does not quit")
	assert.Contains(t, h.view(), ctrlCHint)
}

// An answer's text is in the terminal's own colour, readable on a light
// background as on a dark one: not the dark style's grey 252.
func TestAnswerTextInTheTerminalsColour(t *testing.T) {
	out := markdown("plain words and **bold** ones", 80, newTheme(true))
	assert.Contains(t, out, "plain words")
	assert.NotContains(t, out, "252")
}

// Completing a command shows what it takes and does beside it.
func TestCommandCompletionsSayWhatTheyDo(t *testing.T) {
	h := newHarness(t, Options{})
	h.typeText("/comp")
	view := h.view()
	assert.Contains(t, view, "▸ /compact  [focus] — summarize")
	h.m.editor.clear()
	h.typeText("/h")
	assert.Contains(t, h.view(), "/hotkeys  — keys and commands")
}

// A completion with its description never wraps: it is cut to the width.
func TestCompletionsFitTheWidth(t *testing.T) {
	h := newHarness(t, Options{})
	h.do(tea.WindowSizeMsg{Width: 30, Height: 24})
	h.typeText("/")
	for _, line := range strings.Split(h.view(), "\n") {
		assert.LessOrEqual(t, ansi.StringWidth(line), 30, "%q", line)
	}
}
