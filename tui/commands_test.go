package tui

import (
	"fmt"
	"image/color"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pi-remote/pi-remote/loop"
)

// /hotkeys is one table: every description starts in the same column,
// however long a key or a command's usage ("/thinking off|low|medium|high").
func TestHotkeysAligned(t *testing.T) {
	h := newHarness(t, Options{Commands: Commands{SetModel: func(string) error { return nil }, SetThinking: func(string) error { return nil }}})
	h.typeText("/hotkeys")
	h.do(enter)
	out := strings.Join(h.printed, "\n")
	require.Contains(t, out, "/thinking off|low|medium|high")
	assert.Contains(t, out, "Ctrl+P, Shift+Ctrl+P")
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

// Ctrl+T shows the model's thinking instead of folding it (and back);
// Ctrl+L opens the model picker; Shift+Tab steps the thinking level.
func TestThinkingAndModelKeys(t *testing.T) {
	var level string
	h := newHarness(t, Options{Thinking: "off", Commands: Commands{
		SetModel:    func(string) error { return nil },
		Models:      func() []Choice { return []Choice{{Label: "openai/gpt-4o", Value: "openai/gpt-4o"}} },
		SetThinking: func(l string) error { level = l; return nil },
	}})
	ctrlT := tea.KeyPressMsg{Code: 't', Mod: tea.ModCtrl}
	think := func(text string) {
		h.do(eventMsg{loop.MessageStart{Message: &loop.AssistantMessage{}}})
		h.do(eventMsg{loop.MessageUpdate{Message: &loop.AssistantMessage{}, Delta: &loop.ThinkingDelta{Delta: text}}})
		h.do(eventMsg{loop.MessageUpdate{Message: &loop.AssistantMessage{}, Delta: &loop.TextDelta{Delta: "answer"}}})
		h.do(eventMsg{loop.MessageEnd{Message: &loop.AssistantMessage{Content: loop.ContentList{&loop.Thinking{Thinking: text}, &loop.Text{Text: "answer"}}}}})
	}
	think("first idea\nsecond idea")
	out := strings.Join(h.printed, "\n")
	assert.Contains(t, out, "(thought for 2 lines — folded)")
	assert.NotContains(t, out, "first idea")
	h.do(ctrlT)
	assert.Contains(t, h.view(), "thinking shown")
	h.printed = nil
	think("third idea")
	assert.Contains(t, strings.Join(h.printed, "\n"), "third idea")
	h.do(ctrlT)
	h.printed = nil
	think("fourth idea")
	assert.NotContains(t, strings.Join(h.printed, "\n"), "fourth idea")

	h.do(tea.KeyPressMsg{Code: 'l', Mod: tea.ModCtrl})
	require.NotNil(t, h.m.picker, "Ctrl+L opens the model picker")
	h.do(esc)
	shiftTab := tea.KeyPressMsg{Code: tea.KeyTab, Mod: tea.ModShift}
	h.do(shiftTab)
	assert.Equal(t, "low", level)
	h.do(shiftTab)
	h.do(shiftTab)
	h.do(shiftTab)
	assert.Equal(t, "off", level, "after high comes off")

	// During a run both say they wait, rather than doing nothing unseen.
	h.m.running = true
	h.do(shiftTab)
	assert.Equal(t, "off", level, "the level does not change mid-run")
	assert.Contains(t, h.view(), "Shift+Tab waits until the run ends")
	h.do(tea.KeyPressMsg{Code: 'l', Mod: tea.ModCtrl})
	assert.Nil(t, h.m.picker)
	assert.Contains(t, h.view(), "Ctrl+L waits until the run ends")
}

// A code line wider than the terminal goes on under itself, indented as
// it was: code reads by its indentation. Tabs are 4 spaces.
func TestWrappedCodeKeepsItsIndentation(t *testing.T) {
	md := "```go\nfunc main() {\n\tif veryLongConditionName && anotherVeryLongConditionName && yetAnotherOne {\n\t\treturn\n\t}\n}\n```"
	out := ansi.Strip(markdown(md, 60, newTheme(false)))
	var cond, rest int
	for _, line := range strings.Split(out, "\n") {
		assert.LessOrEqual(t, ansi.StringWidth(line), 60, "%q", line)
		if strings.TrimSpace(line) != "" {
			assert.True(t, strings.HasPrefix(line, "    "), "every row of the block indented: %q", line)
		}
		if strings.Contains(line, "if veryLong") {
			cond = strings.Index(line, "if")
		}
		if strings.Contains(line, "yetAnotherOne") {
			rest = len(line) - len(strings.TrimLeft(line, " "))
		}
	}
	require.Positive(t, cond)
	assert.Equal(t, cond+2, rest, "the continuation is indented under its line:\n%s", out)
	assert.NotContains(t, out, "\t")
	assert.Equal(t, "a\n```\n    x\n```\nb\tc", wrapCode("a\n```\n\tx\n```\nb\tc", 40), "only code blocks change")
}

// A table is as wide as its cells need, not the terminal; when it does
// not fit, its widest columns narrow and their cells wrap, headers
// included (never cut to "…"); a table in a code block stays code.
func TestTablesFit(t *testing.T) {
	md := "| Package | Description of what it does | Lines of code | Owner |\n|---|:---|---:|---|\n" +
		"| ops/ssh | the ssh backend and its pool of command servers | 7490 | lead |\n| `tui` | **the** terminal | 3000 | helper |\n\nafter"
	out := ansi.Strip(markdown(md, 60, newTheme(false)))
	for _, line := range strings.Split(out, "\n") {
		assert.LessOrEqual(t, ansi.StringWidth(line), 60, "%q", line)
	}
	assert.NotContains(t, out, "…")
	for _, word := range []string{"Description", "does", "Lines of", "command servers", "tui", "the terminal"} {
		assert.Contains(t, out, word)
	}
	assert.NotContains(t, out, "**")
	assert.Contains(t, out, "after")

	small := ansi.Strip(markdown("| a | b |\n|---|---|\n| 1 | 2 |", 80, newTheme(false)))
	for _, line := range strings.Split(small, "\n") {
		assert.Less(t, ansi.StringWidth(line), 12, "a small table stays small: %q", line)
	}
	code := "```\n| a | b |\n|---|---|\n```"
	parts, isTable := splitTables(code)
	assert.Equal(t, []bool{false}, isTable, "%q", parts)
}

// With "theme": "auto" the terminal's background decides the answer's
// style (a light one gets Glamour's light style); "dark" and "light" hold
// whatever the terminal says.
func TestThemeFollowsTheBackground(t *testing.T) {
	white := tea.BackgroundColorMsg{Color: color.RGBA{R: 0xff, G: 0xff, B: 0xff, A: 0xff}}
	black := tea.BackgroundColorMsg{Color: color.RGBA{A: 0xff}}
	m := newModel(Options{Theme: "auto"}, newTheme(true))
	m.Update(white)
	assert.True(t, m.th.light)
	heading := markdown("## Title and `code`", 60, m.th)
	m.Update(black)
	assert.False(t, m.th.light)
	assert.NotEqual(t, heading, markdown("## Title and `code`", 60, m.th), "the light style is another")
	dark := newModel(Options{Theme: "dark"}, newTheme(true))
	dark.Update(white)
	assert.False(t, dark.th.light, "a theme set holds")
}

// A long user message (a paste) shows its first 30 rows in the
// scrollback and says how many more went to the model.
func TestLongUserMessageFolds(t *testing.T) {
	lines := make([]string, 200)
	for i := range lines {
		lines[i] = "pasted line"
	}
	out := renderUser("read this:\n"+strings.Join(lines, "\n"), 80, newTheme(false))
	rows := strings.Split(out, "\n")
	assert.Len(t, rows, 31)
	assert.Equal(t, "› read this:", rows[0])
	assert.Equal(t, "  … 171 more lines (sent whole)", rows[30])
	short := renderUser("one\ntwo", 80, newTheme(false))
	assert.Equal(t, "› one\n  two", short)
}

// Ctrl+P switches to the next usable model of the scoped list as /model
// does, Shift+Ctrl+P to the previous; it says so when there is no list,
// or nothing else to switch to, and waits while a run goes on.
func TestCtrlPCyclesTheScopedModels(t *testing.T) {
	var switched []string
	scope := ModelScope{}
	h := newHarness(t, Options{Model: "openai/gpt-4o", Commands: Commands{
		SetModel:     func(name string) error { switched = append(switched, name); return nil },
		ScopedModels: func() ModelScope { return scope },
	}})
	h.m.footer.model = "openai/gpt-4o"
	ctrlP := tea.KeyPressMsg{Code: 'p', Mod: tea.ModCtrl}
	shiftCtrlP := tea.KeyPressMsg{Code: 'p', Mod: tea.ModCtrl | tea.ModShift}

	h.do(ctrlP)
	assert.Empty(t, switched)
	assert.Contains(t, h.m.footer.notice, `no models to cycle through: list them with --models or "enabledModels"`)

	scope = ModelScope{Set: true, Models: []string{"openai/gpt-4o", "openai/gpt-4o-mini", "scripted/demo.json"}, Skipped: []string{"anthropic/claude-haiku-4-5 — needs ANTHROPIC_API_KEY"}}
	h.printed = nil
	h.do(ctrlP)
	h.do(ctrlP)
	h.do(ctrlP)
	assert.Equal(t, []string{"openai/gpt-4o-mini", "scripted/demo.json", "openai/gpt-4o"}, switched, "in the list's order, round")
	assert.Equal(t, []string{"model: openai/gpt-4o-mini", "model: scripted/demo.json", "model: openai/gpt-4o"}, h.printed, "each switch shown as /model shows it")
	assert.Equal(t, "openai/gpt-4o", h.m.footer.model, "the footer names the model")
	h.do(shiftCtrlP)
	assert.Equal(t, "scripted/demo.json", switched[len(switched)-1], "Shift+Ctrl+P goes back")
	assert.Equal(t, "scripted/demo.json", h.m.footer.model)

	// From a model outside the list: its first (its last going back).
	h.m.footer.model = "openai/o3"
	h.do(ctrlP)
	assert.Equal(t, "openai/gpt-4o", switched[len(switched)-1])
	h.m.footer.model = "openai/o3"
	h.do(shiftCtrlP)
	assert.Equal(t, "scripted/demo.json", switched[len(switched)-1])

	// One usable model, the current one: nothing to switch to, and why.
	scope.Models = []string{"scripted/demo.json"}
	n := len(switched)
	h.do(ctrlP)
	assert.Len(t, switched, n)
	assert.Equal(t, "only scripted/demo.json of the scoped list can be used; skipped: anthropic/claude-haiku-4-5 — needs ANTHROPIC_API_KEY", h.m.footer.notice)
	scope.Models = nil
	h.do(ctrlP)
	assert.Len(t, switched, n)
	assert.Equal(t, "no model of the scoped list can be used; skipped: anthropic/claude-haiku-4-5 — needs ANTHROPIC_API_KEY", h.m.footer.notice)

	// A failed switch is shown, and the footer keeps the model in use.
	scope.Models = []string{"openai/gpt-4o", "openai/broken"}
	h.m.footer.model = "openai/gpt-4o"
	h.m.o.Commands.SetModel = func(name string) error { return fmt.Errorf("model %s: no such model", name) }
	h.printed = nil
	h.do(ctrlP)
	assert.Equal(t, []string{"model openai/broken: no such model"}, h.printed)
	assert.Equal(t, "openai/gpt-4o", h.m.footer.model)

	// During a run it waits, and says so.
	h.m.o.Commands.SetModel = func(name string) error { switched = append(switched, name); return nil }
	h.m.running = true
	n = len(switched)
	h.do(ctrlP)
	assert.Len(t, switched, n)
	assert.Contains(t, h.view(), "Ctrl+P waits until the run ends")
}

// /mcp prints the servers as the front end describes them, controls in
// a server's text shown as text.
func TestMCPCommand(t *testing.T) {
	h := newHarness(t, Options{Commands: Commands{MCP: func() string { return "db  running\x1b[2J\n  tools: mcp__db__query" }}})
	h.typeText("/mcp")
	h.do(enter)
	out := strings.Join(h.printed, "\n")
	assert.Contains(t, out, "db  running^[[2J\n  tools: mcp__db__query")
	assert.NotContains(t, out, "\x1b[2J")
}
