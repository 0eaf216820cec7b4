package tui

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"regexp"
	"strings"

	"charm.land/bubbles/v2/key"
	"charm.land/bubbles/v2/textarea"
	tea "charm.land/bubbletea/v2"
	"charm.land/lipgloss/v2"
)

// editor is the prompt being written: a text area that grows with its
// text, the prompt history (Up and Down), long pastes folded into markers,
// undo, and the completions offered for the word at its end
// (completion.go). The model gives it the keys it does not take itself.
type editor struct {
	ta textarea.Model
	// describe says what a completed /command does (its arguments and
	// help), shown beside it.
	describe func(command string) string

	history     []string
	histPos     int    // len(history) when not browsing
	draft       string // the text before browsing history
	saveHistory func(string)

	pastes []string
	undo   []edit

	comps        []string // completions offered for token
	compSel      int
	token        string
	completePath func(ctx context.Context, prefix string) []string
	stopQuery    context.CancelFunc // the @path query under way, if any
}

func newEditor(o Options, th theme) editor {
	ta := textarea.New()
	ta.Prompt = "› "
	ta.ShowLineNumbers = false
	ta.CharLimit = 0
	// The editor is as tall as its text's rows, wrapped ones counted, up
	// to editorMaxHeight; longer text scrolls. (MaxContentHeight, set,
	// keeps MaxHeight from limiting the text itself.)
	ta.DynamicHeight = true
	ta.MinHeight = 1
	ta.MaxHeight = editorMaxHeight
	ta.MaxContentHeight = math.MaxInt
	// Enter sends; a new line is Shift+Enter where the terminal tells it
	// apart, Ctrl+J everywhere (tmux too), Alt+Enter when idle.
	ta.KeyMap.InsertNewline = key.NewBinding(key.WithKeys("shift+enter", "ctrl+j"))
	// The editor is text on the terminal's own background; the prompt
	// marks it.
	st := textarea.DefaultDarkStyles()
	for _, s := range []*textarea.StyleState{&st.Focused, &st.Blurred} {
		s.Base, s.Text, s.CursorLine, s.EndOfBuffer = lipgloss.NewStyle(), lipgloss.NewStyle(), lipgloss.NewStyle(), lipgloss.NewStyle()
		s.Prompt = th.user
		s.Placeholder = th.dim
	}
	ta.SetStyles(st)
	ta.SetVirtualCursor(false)
	ta.Placeholder = "Ask, or / for commands (Ctrl+D quits)"
	ta.Focus()
	return editor{ta: ta, history: o.History, histPos: len(o.History), saveHistory: o.SaveHistory, completePath: o.CompletePath}
}

func (e *editor) value() string { return e.ta.Value() }

func (e *editor) setWidth(w int) { e.ta.SetWidth(w) }

// setText replaces the text (an external editor's).
func (e *editor) setText(s string) {
	e.ta.SetValue(s)
}

// key handles a key the model did not take: undo, the completions (Tab,
// Up and Down), the history (Up on the first line, Down on the last), a
// new line (Alt+Enter) and typing. commands lists the slash commands
// there are to complete.
func (e *editor) key(k tea.KeyPressMsg, commands func() []string) tea.Cmd {
	switch k.String() {
	case "ctrl+z", "ctrl+_":
		e.undoEdit()
		return e.complete(commands)
	case "tab":
		if len(e.comps) > 0 {
			e.accept(e.comps[e.compSel])
			return e.complete(commands)
		}
		return nil
	case "alt+enter":
		before := e.snapshot()
		e.ta.InsertString("\n")
		e.keep(before)
		return nil
	case "up":
		if len(e.comps) > 0 {
			e.compSel = (e.compSel + len(e.comps) - 1) % len(e.comps)
			return nil
		}
		if e.onFirstRow() && e.browse(-1) {
			return nil
		}
	case "down":
		if len(e.comps) > 0 {
			e.compSel = (e.compSel + 1) % len(e.comps)
			return nil
		}
		if e.onLastRow() && e.browse(1) {
			return nil
		}
	}
	before := e.snapshot()
	var cmd tea.Cmd
	e.ta, cmd = e.ta.Update(k)
	e.keep(before)
	return tea.Batch(cmd, e.complete(commands))
}

// update passes on what is neither a key nor a paste (the cursor's
// blink).
func (e *editor) update(msg tea.Msg) tea.Cmd {
	var cmd tea.Cmd
	e.ta, cmd = e.ta.Update(msg)
	return cmd
}

// clear empties the editor (Ctrl+C); undo brings the text back.
func (e *editor) clear() {
	before := e.snapshot()
	e.ta.Reset()
	e.keep(before)
}

// take empties the editor and returns its text to send, the paste
// markers expanded; "" when there is nothing to send (the editor is left
// as it is). The history keeps the text sent, pastes and all: a marker
// means nothing once the editor has let go of its paste.
func (e *editor) take() string {
	raw := e.ta.Value()
	text := strings.TrimSpace(e.expandPastes(raw))
	if text == "" {
		return ""
	}
	e.ta.Reset()
	e.pastes = nil
	e.remember(text)
	return text
}

// view draws the text area.
func (e *editor) view() string { return e.ta.View() }

// cursor is where the terminal's cursor goes, relative to the text area.
func (e *editor) cursor() *tea.Cursor { return e.ta.Cursor() }

// pasteFold is the size (lines) from which a paste becomes a marker.
const pasteFold = 10

var pasteMarker = regexp.MustCompile(`\[paste #(\d+): \d+ lines\]`)

// paste inserts pasted text; a long paste becomes a marker that stands
// for it (sent unchanged; Ctrl+O in the editor shows it).
func (e *editor) paste(text string) {
	defer e.keep(e.snapshot())
	text = strings.ReplaceAll(text, "\r\n", "\n")
	text = strings.ReplaceAll(text, "\r", "\n")
	if n := strings.Count(strings.TrimRight(text, "\n"), "\n") + 1; n > pasteFold {
		e.pastes = append(e.pastes, text)
		e.ta.InsertString(fmt.Sprintf("[paste #%d: %d lines]", len(e.pastes), n))
	} else {
		e.ta.InsertString(text)
	}
}

// expandPastes puts the pasted texts back in place of their markers.
func (e *editor) expandPastes(s string) string {
	return pasteMarker.ReplaceAllStringFunc(s, func(marker string) string {
		var n int
		fmt.Sscanf(pasteMarker.FindStringSubmatch(marker)[1], "%d", &n)
		if n >= 1 && n <= len(e.pastes) {
			return e.pastes[n-1]
		}
		return marker
	})
}

// showPastes puts what the paste markers stand for in the editor (Ctrl+O);
// false when there are none.
func (e *editor) showPastes() bool {
	if len(e.pastes) == 0 || !pasteMarker.MatchString(e.ta.Value()) {
		return false
	}
	before := e.snapshot()
	e.ta.SetValue(e.expandPastes(e.ta.Value()))
	e.keep(before)
	return true
}

// edit is the editor's text and cursor at one moment, for undo.
type edit struct {
	value    string
	row, col int
}

// undoDepth bounds the edits kept for undo.
const undoDepth = 200

func (e *editor) snapshot() edit {
	return edit{e.ta.Value(), e.ta.Line(), e.ta.Column()}
}

// keep remembers before as an edit to go back to, if the text changed
// since.
func (e *editor) keep(before edit) {
	if before.value == e.ta.Value() {
		return
	}
	if len(e.undo) == undoDepth {
		e.undo = e.undo[1:]
	}
	e.undo = append(e.undo, before)
}

// undoEdit puts the editor back as it was before the last change.
func (e *editor) undoEdit() {
	if len(e.undo) == 0 {
		return
	}
	u := e.undo[len(e.undo)-1]
	e.undo = e.undo[:len(e.undo)-1]
	e.ta.SetValue(u.value)
	e.ta.MoveToBegin()
	for e.ta.Line() < u.row {
		e.ta.CursorDown()
	}
	e.ta.SetCursorColumn(u.col)
}

// browse moves through the prompt history; false when there is nowhere
// to go.
func (e *editor) browse(step int) bool {
	next := e.histPos + step
	if next < 0 || next > len(e.history) || len(e.history) == 0 {
		return false
	}
	if e.histPos == len(e.history) {
		e.draft = e.ta.Value()
	}
	e.histPos = next
	if next == len(e.history) {
		e.ta.SetValue(e.draft)
	} else {
		e.ta.SetValue(e.history[next])
	}
	return true
}

// remember adds a prompt to the history (and its file).
func (e *editor) remember(text string) {
	if n := len(e.history); n == 0 || e.history[n-1] != text {
		e.history = append(e.history, text)
		if e.saveHistory != nil {
			e.saveHistory(text)
		}
	}
	e.histPos = len(e.history)
	e.draft = ""
}

// onFirstRow says whether the cursor is on the text's first row as shown
// (a long line wraps onto several): Up goes to the history from there.
func (e *editor) onFirstRow() bool {
	return e.ta.Line() == 0 && e.ta.LineInfo().RowOffset == 0
}

// onLastRow says whether the cursor is on the text's last row as shown:
// Down goes to the history from there.
func (e *editor) onLastRow() bool {
	li := e.ta.LineInfo()
	return e.ta.Line() == e.ta.LineCount()-1 && li.RowOffset >= li.Height-1
}

// editorMaxHeight is the most rows the editor takes; longer text scrolls.
const editorMaxHeight = 10

// external opens $VISUAL or $EDITOR on the editor's text (Ctrl+G); the
// text comes back as an editedMsg. The error says why it cannot.
func (e *editor) external() (tea.Cmd, error) {
	program := os.Getenv("VISUAL")
	if program == "" {
		program = os.Getenv("EDITOR")
	}
	if program == "" {
		return nil, errors.New("set $VISUAL or $EDITOR to edit the prompt there")
	}
	f, err := os.CreateTemp("", "pi-remote-prompt-*.md")
	if err != nil {
		return nil, err
	}
	f.WriteString(e.expandPastes(e.ta.Value()))
	f.Close()
	c := exec.Command("sh", "-c", program+` "$1"`, "sh", f.Name())
	cmd := tea.ExecProcess(c, func(err error) tea.Msg {
		defer os.Remove(f.Name())
		if err != nil {
			return noticeMsg{text: "editor: " + err.Error()}
		}
		b, err := os.ReadFile(f.Name())
		if err != nil {
			return noticeMsg{text: err.Error()}
		}
		return editedMsg{strings.TrimRight(string(b), "\n")}
	})
	return cmd, nil
}
