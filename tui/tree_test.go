package tui

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pi-remote/pi-remote/loop"
	"github.com/pi-remote/pi-remote/session"
)

// treeSession is a real session file the harness's /tree reads and
// moves in; the fake agent's context follows the moves.
type treeSession struct {
	s     *session.Session
	moves []string
}

func newTreeSession(t *testing.T, msgs ...loop.Message) (*treeSession, []string) {
	t.Helper()
	s, err := session.Create(filepath.Join(t.TempDir(), "s.jsonl"), session.Header{Host: "local", Cwd: "/"})
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	ts := &treeSession{s: s}
	return ts, ts.add(t, msgs...)
}

func (ts *treeSession) add(t *testing.T, msgs ...loop.Message) []string {
	t.Helper()
	var ids []string
	for _, m := range msgs {
		id, err := ts.s.Append(m)
		require.NoError(t, err)
		ids = append(ids, id)
	}
	return ids
}

// commands are /tree's commands on the file, for h's agent.
func (ts *treeSession) commands(h **harness) Commands {
	return Commands{
		Tree: func() ([]session.Entry, string, error) {
			_, es, leaf, err := session.Tree(ts.s.Path())
			return es, leaf, err
		},
		Navigate: func(id string) error {
			c, err := ts.s.MoveLeaf(id)
			if err != nil {
				return err
			}
			ts.moves = append(ts.moves, id)
			(*h).a.msgs = c.Messages
			return nil
		},
	}
}

func said(text string) loop.Message {
	return &loop.AssistantMessage{StopReason: loop.StopEnd, Content: loop.ContentList{&loop.Text{Text: text}}}
}

// pickerRows are the rows the open picker shows, as on the screen.
func pickerRows(h *harness) []string {
	var rows []string
	for _, l := range strings.Split(ansi.Strip(h.view()), "\n") {
		if (strings.HasPrefix(l, "▸ ") || strings.HasPrefix(l, "  ")) && !strings.HasPrefix(l, "  … ") {
			rows = append(rows, l)
		}
	}
	return rows
}

// /tree shows every branch: each line of conversation in its column,
// branch glyphs where the session went back, who said what (tool calls
// by name and argument, results, compactions marked), and the current
// branch's end marked and selected.
func TestTreePickerShowsTheBranches(t *testing.T) {
	ts, ids := newTreeSession(t,
		loop.NewUserText("list the files\nplease"),
		&loop.AssistantMessage{Content: loop.ContentList{&loop.ToolCall{ID: "c1", Name: "bash", Arguments: []byte(`{"command":"ls -la"}`)}}},
		&loop.ToolResultMessage{ToolCallID: "c1", ToolName: "bash", Content: loop.ContentList{&loop.Text{Text: "a.txt\nb.txt"}}},
		said("Two files."),
		loop.NewUserText("delete them"),
		said("Deleted."))
	_, err := ts.s.MoveLeaf(ids[3])
	require.NoError(t, err)
	ts.add(t, loop.NewUserText("keep them"), said("Kept."))
	_, _, err = ts.s.AppendCompaction(session.Compaction{Summary: "listed and kept the files"})
	require.NoError(t, err)
	var h *harness
	h = newHarness(t, Options{Commands: ts.commands(&h)})

	h.typeText("/tree")
	h.do(enter)
	require.NotNil(t, h.m.picker)
	assert.Equal(t, []string{
		"    user: list the files please",
		"    assistant: → bash ls -la",
		"    result: ✓ bash a.txt b.txt",
		"    assistant: Two files.",
		"    ├─ user: delete them",
		"    │  assistant: Deleted.",
		"    └─ user: keep them",
		"       assistant: Kept.",
		"▸ ●    [compaction] listed and kept the files",
	}, pickerRows(h))

	h.typeText("dele")
	assert.Equal(t, []string{"▸   ├─ user: delete them", "    │  assistant: Deleted."}, pickerRows(h), "typing filters")
	h.do(esc)
	assert.Nil(t, h.m.picker)
	assert.Empty(t, ts.moves, "Esc closes, nothing moved")
}

// Each kind of entry says what it is on its line.
func TestTreeLabels(t *testing.T) {
	for _, tc := range []struct {
		e    session.Entry
		want string
	}{
		{session.Entry{Message: loop.NewUserText("  fix\n the   build ")}, "user: fix the build"},
		{session.Entry{Message: said("Done.")}, "assistant: Done."},
		{session.Entry{Message: &loop.AssistantMessage{Content: loop.ContentList{&loop.Text{Text: "Reading."},
			&loop.ToolCall{Name: "read", Arguments: []byte(`{"path":"a.go"}`)}, &loop.ToolCall{Name: "ls", Arguments: []byte(`{}`)}}}},
			"assistant: Reading. → read a.go → ls"},
		{session.Entry{Message: &loop.AssistantMessage{StopReason: loop.StopError, ErrorMessage: "rate limited"}}, "assistant: [error] rate limited"},
		{session.Entry{Message: &loop.AssistantMessage{Content: loop.ContentList{&loop.Thinking{Thinking: "hmm"}}}}, "assistant: [no text]"},
		{session.Entry{Message: &loop.ToolResultMessage{ToolName: "bash", IsError: true, Content: loop.ContentList{&loop.Text{Text: "exit 1"}}}}, "result: ✗ bash exit 1"},
		{session.Entry{Summary: "goal: fix it\nprogress: none"}, "[compaction] goal: fix it progress: none"},
	} {
		assert.Equal(t, tc.want, treeLabel(tc.e))
	}
	assert.Equal(t, len("user: ")+200, ansi.StringWidth(treeLabel(session.Entry{Message: loop.NewUserText(strings.Repeat("x", 500))})), "cut to 200 columns after the role")
}

// A long session scrolls in the picker, the current end in sight; at 50
// columns no row wraps.
func TestTreePickerLongAndNarrow(t *testing.T) {
	var msgs []loop.Message
	for i := range 40 {
		msgs = append(msgs, loop.NewUserText(strings.Repeat("a long prompt ", 10)+string(rune('A'+i%26))), said("ok"))
	}
	ts, _ := newTreeSession(t, msgs...)
	var h *harness
	h = newHarness(t, Options{Commands: ts.commands(&h)})
	h.do(tea.WindowSizeMsg{Width: 50, Height: 24})
	h.typeText("/tree")
	h.do(enter)
	view := h.view()
	assert.Contains(t, view, "  … 70 more above", "the rows left out counted")
	rows := pickerRows(h)
	require.Len(t, rows, maxPicker)
	assert.True(t, strings.HasPrefix(rows[len(rows)-1], "▸ ● "), "the end of the branch, selected: %q", rows[len(rows)-1])
	for _, l := range strings.Split(view, "\n") {
		assert.LessOrEqual(t, ansi.StringWidth(l), 49, "%q", l)
	}
	h.do(up)
	rows = pickerRows(h)
	assert.True(t, strings.HasPrefix(rows[len(rows)-2], "▸   user: a long prompt"), "Up selects the prompt before, the rows stay: %q", rows)
	h.do(tea.KeyPressMsg{Code: tea.KeyPgUp})
	rows = pickerRows(h)
	assert.True(t, strings.HasPrefix(rows[0], "▸ "), "PgUp: a screenful up, at the top: %q", rows)
	assert.Contains(t, h.view(), "  … 68 more above")
	h.do(tea.KeyPressMsg{Code: tea.KeyPgDown})
	h.do(tea.KeyPressMsg{Code: tea.KeyPgDown})
	rows = pickerRows(h)
	assert.True(t, strings.HasPrefix(rows[len(rows)-1], "▸ ● "), "PgDn: down to the last: %q", rows)
}

// Picking a user message goes back to before it, its text in the editor
// to edit and send again; picking an answer goes on from it. Either way
// the conversation shown again is the new branch's.
func TestTreePickGoesBack(t *testing.T) {
	ts, ids := newTreeSession(t, loop.NewUserText("first prompt"), said("first answer"), loop.NewUserText("second prompt\nwith more"), said("second answer"))
	var h *harness
	h = newHarness(t, Options{Commands: ts.commands(&h)})
	h.a.msgs = nil

	h.typeText("/tree")
	h.do(enter)
	h.do(up) // the second prompt
	h.do(enter)
	assert.Nil(t, h.m.picker)
	assert.Equal(t, []string{ids[1]}, ts.moves, "to the prompt's parent")
	assert.Equal(t, "second prompt\nwith more", h.m.editor.value(), "the prompt back in the editor")
	out := strings.Join(h.printed, "\n")
	assert.Contains(t, out, "/tree: back before user: second prompt with more")
	assert.Contains(t, out, "› first prompt", "the branch's conversation shown again")
	assert.Contains(t, out, "first answer")
	assert.NotContains(t, out, "second answer")

	h.m.editor.clear()
	h.printed = nil
	h.typeText("/tree")
	h.do(enter)
	h.typeText("first answer")
	h.do(enter)
	assert.Equal(t, ids[1], ts.moves[1], "an answer: on from it")
	assert.Empty(t, h.m.editor.value())
	assert.Contains(t, strings.Join(h.printed, "\n"), "/tree: on from assistant: first answer")

	h.printed = nil
	h.typeText("/tree")
	h.do(enter)
	h.typeText("first prompt")
	h.do(enter)
	assert.Equal(t, "", ts.moves[2], "the first prompt: before everything")
	assert.Equal(t, "first prompt", h.m.editor.value())
	assert.Contains(t, strings.Join(h.printed, "\n"), "the branch is empty")
}

// Esc twice on an empty editor opens /tree at the last user message of
// the current branch; not with text in the editor, not when something
// came between or the first was long ago, not while a run goes on (Esc
// aborts it then).
func TestEscEscOpensTheTree(t *testing.T) {
	ts, _ := newTreeSession(t, loop.NewUserText("only prompt"), said("an answer"), said("another answer"))
	var h *harness
	h = newHarness(t, Options{Commands: ts.commands(&h)})

	h.do(esc)
	assert.Nil(t, h.m.picker, "one Esc does nothing")
	h.do(esc)
	require.NotNil(t, h.m.picker)
	rows := pickerRows(h)
	assert.Equal(t, "▸   user: only prompt", rows[0], "the last user message selected")
	assert.Equal(t, "  ● assistant: another answer", rows[2])
	h.do(esc)
	assert.Nil(t, h.m.picker)
	h.do(tea.KeyPressMsg{Code: tea.KeyEscape, Mod: tea.ModAlt})
	assert.NotNil(t, h.m.picker, "two Esc read as one key (Alt+Esc)")
	h.do(esc)

	h.do(esc)
	h.typeText("x")
	h.m.editor.clear()
	h.do(esc)
	assert.Nil(t, h.m.picker, "a key between the two")

	h.do(esc)
	h.m.lastEsc = time.Now().Add(-time.Second)
	h.do(esc)
	assert.Nil(t, h.m.picker, "the first Esc too long ago")

	h.typeText("draft")
	h.do(esc)
	h.do(esc)
	assert.Nil(t, h.m.picker, "the editor is not empty")
	h.m.editor.clear()

	h.typeText("go")
	h.do(enter)
	require.True(t, h.m.running)
	h.do(esc)
	h.do(esc)
	assert.Nil(t, h.m.picker, "during a run Esc aborts")
	h.settle()

	h.typeText("/tree")
	h.do(enter)
	require.NotNil(t, h.m.picker)
	h.m.running = true // (a run started meanwhile, as by a queued follow-up)
	h.do(enter)
	assert.Contains(t, strings.Join(h.printed, "\n"), "/tree waits until the run ends")
	assert.Empty(t, ts.moves)

	h.m.running = false
	h.printed = nil
	h.typeText("/hotkeys")
	h.do(enter)
	out := strings.Join(h.printed, "\n")
	assert.Contains(t, out, "Esc Esc")
	assert.Contains(t, out, "/tree")
}

// Without a session file to move in, there is no /tree and Esc Esc does
// nothing.
func TestNoTreeWithoutItsCommands(t *testing.T) {
	h := newHarness(t, Options{})
	h.do(esc)
	h.do(esc)
	assert.Nil(t, h.m.picker)
	h.typeText("/tree")
	h.do(enter)
	assert.Contains(t, strings.Join(h.printed, "\n"), "unknown command /tree")
}

// Control sequences in what was said show as text, and the line that
// says where /tree went stays on one row once they show so: it is cut
// to the terminal's width after they become text, not before.
func TestTreeShowsControlSequencesOnOneRow(t *testing.T) {
	nasty := "\x1b]0;PWNED\x07title \x1b]52;c;aGk=\x07clip " + strings.Repeat("\x1b[2J", 20) + "end"
	ts, _ := newTreeSession(t, loop.NewUserText("go"), said(nasty), loop.NewUserText("more"), said("ok"))
	var h *harness
	h = newHarness(t, Options{Commands: ts.commands(&h)})
	h.do(tea.WindowSizeMsg{Width: 50, Height: 20})

	h.typeText("/tree")
	h.do(enter)
	h.typeText("PWNED")
	rows := pickerRows(h)
	require.Len(t, rows, 1)
	assert.Contains(t, rows[0], "^[]0;PWNED^G", "the sequence shown as text")
	h.do(enter)
	require.Len(t, ts.moves, 1)
	about := ansi.Strip(h.printed[0])
	assert.Contains(t, about, "── /tree: on from assistant: ^[]0;PWNED^G")
	assert.NotContains(t, about, "\x1b]")
	assert.NotContains(t, about, "\n", "one row")
	assert.LessOrEqual(t, ansi.StringWidth(about), 49, "%q", about)
}

// Esc Esc walks up from the current branch's end to the last user
// message; a file whose parents go round in a loop (edited by hand
// while the session runs) does not make it walk for ever.
func TestEscEscOnALoopOfParents(t *testing.T) {
	entries := []session.Entry{
		{ID: "u1", Message: loop.NewUserText("first")},
		{ID: "a1", ParentID: "a3", Message: said("one")},
		{ID: "a2", ParentID: "a1", Message: said("two")},
		{ID: "a3", ParentID: "a2", Message: said("three")},
	}
	var h *harness
	h = newHarness(t, Options{Commands: Commands{
		Tree:     func() ([]session.Entry, string, error) { return entries, "a3", nil },
		Navigate: func(string) error { return nil },
	}})
	done := make(chan struct{})
	go func() {
		defer close(done)
		h.do(esc)
		h.do(esc)
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Esc Esc did not return")
	}
	require.NotNil(t, h.m.picker)
	assert.Equal(t, []string{"▸   user: first"}, pickerRows(h), "what a root leads to")
}

// Backspace in a picker's filter takes back the last character typed,
// however many bytes it is.
func TestPickerFilterBackspaceTakesACharacter(t *testing.T) {
	ts, _ := newTreeSession(t, loop.NewUserText("café crème"), said("served"))
	var h *harness
	h = newHarness(t, Options{Commands: ts.commands(&h)})
	h.typeText("/tree")
	h.do(enter)
	h.typeText("crè")
	assert.Equal(t, []string{"▸   user: café crème"}, pickerRows(h))
	h.do(tea.KeyPressMsg{Code: tea.KeyBackspace})
	assert.Equal(t, "cr", h.m.picker.filter)
	h.typeText("é")
	assert.Equal(t, "cré", h.m.picker.filter)
	assert.Equal(t, []string{"  nothing matches"}, pickerRows(h))
	assert.Contains(t, ansi.Strip(h.view()), "filter: cré")
}

// The notice that says the editor holds a message to send again goes
// when a later move puts none there.
func TestTreeEditNoticeGoes(t *testing.T) {
	ts, _ := newTreeSession(t, loop.NewUserText("first prompt"), said("first answer"), loop.NewUserText("second prompt"), said("second answer"))
	var h *harness
	h = newHarness(t, Options{Commands: ts.commands(&h)})
	h.typeText("/tree")
	h.do(enter)
	h.typeText("second prompt")
	h.do(enter)
	require.Equal(t, "second prompt", h.m.editor.value())
	assert.Contains(t, ansi.Strip(h.view()), "edit the message, Enter sends it on the new branch")

	h.do(ctrlC) // (the person changes their mind)
	require.Empty(t, h.m.editor.value())
	h.typeText("/tree")
	h.do(enter)
	h.typeText("first answer")
	h.do(enter)
	require.Len(t, ts.moves, 2)
	assert.NotContains(t, ansi.Strip(h.view()), "edit the message", "no message in the editor now")
}

// Esc Esc that reaches the program in one read (Alt+Esc) closes a
// picker as Esc does.
func TestPickerClosesOnEscEsc(t *testing.T) {
	ts, _ := newTreeSession(t, loop.NewUserText("go"), said("ok"))
	var h *harness
	h = newHarness(t, Options{Commands: ts.commands(&h)})
	h.typeText("/tree")
	h.do(enter)
	require.NotNil(t, h.m.picker)
	h.do(altEsc)
	assert.Nil(t, h.m.picker)
	assert.Empty(t, ts.moves)
}
