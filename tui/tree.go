package tui

import (
	"encoding/json"
	"errors"
	"strings"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/pi-remote/pi-remote/internal/termtext"
	"github.com/pi-remote/pi-remote/loop"
	"github.com/pi-remote/pi-remote/session"
)

// editNote is the footer's notice when /tree put a message back in the
// editor.
const editNote = "edit the message, Enter sends it on the new branch"

// escWindow is how soon a second Esc on an empty editor opens /tree.
const escWindow = 500 * time.Millisecond

// maxGutter is how many columns of branch glyphs a row of /tree shows at
// most: deeper rows show the last ones after "…", so that a deep tree
// still leaves room for the text in a narrow terminal.
const maxGutter = 18

// treeRow is one row of /tree: an entry and the branch glyphs before it.
type treeRow struct {
	entry  session.Entry
	gutter string
}

// treeRows lays out a session's entries (session.Tree's) as /tree shows
// them: depth first, children in the order written. A line of
// conversation stays in its column; where an entry has more than one
// child (the session went back to it) each child's line is drawn under a
// branch glyph, ├─ or └─, and indented after it. Entries that no root
// leads to (a damaged file) are left out.
func treeRows(entries []session.Entry) []treeRow {
	known := map[string]bool{}
	for _, e := range entries {
		known[e.ID] = true
	}
	children := map[string][]int{}
	var roots []int
	for i, e := range entries {
		if e.ParentID == "" || !known[e.ParentID] {
			roots = append(roots, i)
		} else {
			children[e.ParentID] = append(children[e.ParentID], i)
		}
	}
	// (Iterative: a long session is one very deep line.)
	type item struct {
		i          int
		lead, rest string // the row's glyphs; those its descendants go on from
	}
	var stack []item
	push := func(kids []int, rest string) {
		if len(kids) == 1 {
			stack = append(stack, item{kids[0], rest, rest})
			return
		}
		for j := len(kids) - 1; j >= 0; j-- {
			if j == len(kids)-1 {
				stack = append(stack, item{kids[j], rest + "└─ ", rest + "   "})
			} else {
				stack = append(stack, item{kids[j], rest + "├─ ", rest + "│  "})
			}
		}
	}
	push(roots, "")
	var rows []treeRow
	for len(stack) > 0 {
		it := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		e := entries[it.i]
		gutter := it.lead
		if r := []rune(gutter); len(r) > maxGutter {
			gutter = "…" + string(r[len(r)-maxGutter+1:])
		}
		rows = append(rows, treeRow{entry: e, gutter: gutter})
		push(children[e.ID], it.rest)
	}
	return rows
}

// treeLabel says what an entry is in one line: who, then the first of
// what was said; an answer's tool calls by name and main argument; a
// compaction marked as such.
func treeLabel(e session.Entry) string {
	if e.Message == nil {
		return "[compaction] " + clip(e.Summary)
	}
	switch m := e.Message.(type) {
	case *loop.UserMessage:
		return "user: " + clip(m.Content.Text())
	case *loop.AssistantMessage:
		parts := []string{}
		if t := clip(m.Content.Text()); t != "" {
			parts = append(parts, t)
		}
		for _, c := range m.ToolCalls() {
			parts = append(parts, "→ "+callSummary(c))
		}
		if m.ErrorMessage != "" {
			parts = append(parts, "[error] "+clip(m.ErrorMessage))
		}
		if len(parts) == 0 {
			parts = append(parts, "[no text]") // (thinking only, or cut short)
		}
		return "assistant: " + strings.Join(parts, " ")
	case *loop.ToolResultMessage:
		mark := "✓"
		if m.IsError {
			mark = "✗"
		}
		return "result: " + mark + " " + m.ToolName + " " + clip(m.Content.Text())
	}
	return "?"
}

// callSummary is a tool call's name and its main argument.
func callSummary(c *loop.ToolCall) string {
	var args map[string]any
	if json.Unmarshal(c.Arguments, &args) != nil {
		return c.Name // (arguments that are not an object)
	}
	for _, k := range []string{"command", "path", "pattern", "url", "query"} {
		if v, ok := args[k].(string); ok && v != "" {
			return c.Name + " " + clip(v)
		}
	}
	return c.Name
}

// clip is s on one line, at most 200 columns: a row of /tree is cut to
// the terminal's width anyway.
func clip(s string) string {
	return ansi.Truncate(strings.Join(strings.Fields(s), " "), 200, "…")
}

// openTree opens /tree: the session's entries as a tree, the current
// branch's end marked (●) and selected, or, for Esc Esc (atPrompt), the
// last user message on the current branch.
func (m *model) openTree(atPrompt bool) tea.Cmd {
	c := m.o.Commands
	entries, leaf, err := c.Tree()
	if err != nil {
		return m.fail(err)
	}
	if len(entries) == 0 {
		return m.print(m.th.dim.Render("/tree: the session has no messages yet"))
	}
	byID := map[string]session.Entry{}
	for _, e := range entries {
		byID[e.ID] = e
	}
	selected := leaf
	if atPrompt {
		// (At most one step an entry: parents that go round in a loop,
		// in a file edited meanwhile, end the walk.)
		for id, steps := leaf, 0; id != "" && steps < len(entries); id, steps = byID[id].ParentID, steps+1 {
			if _, ok := byID[id].Message.(*loop.UserMessage); ok {
				selected = id
				break
			}
		}
	}
	rows := treeRows(entries)
	choices := make([]Choice, len(rows))
	sel := 0
	for i, r := range rows {
		mark := "  "
		if r.entry.ID == leaf {
			mark = "● "
		}
		if r.entry.ID == selected {
			sel = i
		}
		choices[i] = Choice{Label: mark + r.gutter + treeLabel(r.entry), Value: r.entry.ID}
	}
	m.picker = &picker{title: "session tree (● now)", all: choices, sel: sel, pick: func(m *model, ch Choice) tea.Cmd {
		return m.goTo(byID[ch.Value])
	}}
	return nil
}

// goTo makes the session go on from e: from before it, its text back in
// the editor, when it is a user message (to edit and send again); from
// it otherwise. The conversation of the branch is shown again.
func (m *model) goTo(e session.Entry) tea.Cmd {
	if m.running {
		return m.fail(errors.New("/tree waits until the run ends (Esc aborts it)"))
	}
	target, text := e.ID, ""
	if u, ok := e.Message.(*loop.UserMessage); ok {
		target, text = e.ParentID, u.Content.Text()
	}
	if err := m.o.Commands.Navigate(target); err != nil {
		return m.fail(err)
	}
	switch {
	case text != "" && m.editor.value() == "":
		m.editor.setText(text)
		m.footer.notice = editNote
	case m.footer.notice == editNote:
		m.footer.notice = "" // (an earlier move's, its message no longer in the editor)
	}
	m.transcript.lastAnswer = ""
	m.refreshUsage()
	about := "── /tree: on from " + treeLabel(e) + " ──"
	if text != "" {
		about = "── /tree: back before " + treeLabel(e) + " ──"
	}
	// (Cut once its control sequences show as text: they take columns
	// then.)
	cmds := []tea.Cmd{m.print(m.th.dim.Render(ansi.Truncate(termtext.String(about), m.cols(), "…")))}
	if len(m.o.Agent.Messages()) == 0 {
		cmds = append(cmds, m.print(m.th.dim.Render("(the branch is empty: the next prompt starts the conversation over)")))
	}
	return tea.Sequence(append(cmds, m.replay())...)
}

// escTree is Esc on an empty editor with no run: a second one within
// escWindow opens /tree at the last user message.
func (m *model) escTree() tea.Cmd {
	if m.o.Commands.Tree == nil || m.o.Commands.Navigate == nil {
		return nil
	}
	if !m.lastEsc.IsZero() && time.Since(m.lastEsc) < escWindow {
		m.lastEsc = time.Time{}
		return m.openTree(true)
	}
	m.lastEsc = time.Now()
	return nil
}

// treeCommand is /tree.
func treeCommand(m *model, _ string) tea.Cmd { return m.openTree(false) }
