package tui

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"sort"
	"strings"
	"time"

	"charm.land/bubbles/v2/key"
	"charm.land/bubbles/v2/textarea"
	tea "charm.land/bubbletea/v2"
	"charm.land/lipgloss/v2"

	"github.com/charmbracelet/x/ansi"
	"github.com/pi-remote/pi-remote/agent"
	"github.com/pi-remote/pi-remote/internal/termtext"
	"github.com/pi-remote/pi-remote/loop"
)

// Messages from the agent's goroutines to the program.
type (
	eventMsg struct{ e loop.Event }
	doneMsg  struct {
		err error
		// compact: the end of a /compact, not of a run
		compact bool
	}
	tickMsg   struct{}
	branchMsg struct{ branch string }
	compMsg   struct {
		token string
		items []string
	}
	editedMsg struct{ text string }
	noticeMsg struct {
		text  string
		print bool // to the scrollback, not the status line
	}
	linkMsg struct {
		host string
		up   bool
	}
)

// model is the terminal UI's state. Finished messages go to the
// terminal's scrollback (tea.Println); the view is only the live part:
// the answer being written, running tools, queued messages, the editor
// and the footer.
type model struct {
	o      options
	th     theme
	width  int
	height int

	editor  textarea.Model
	history []string
	histPos int    // len(history) when not browsing
	draft   string // the editor's text before browsing history
	pastes  []string

	running      bool
	cancel       context.CancelFunc
	stream       string // the answer being written
	streamed     int    // how much of stream is in the scrollback
	thought      int    // lines of thinking in the answer being written
	thoughtShown bool
	thinking     bool       // the model is thinking (no text yet)
	boxes        []*toolBox // running tools, in call order
	queued       []string   // steering and follow-up messages not delivered yet
	expanded     bool       // Ctrl+O: tool output in full
	spin         int

	picker *picker
	undo   []edit

	lastBoxes     []*toolBox // the last batch of tools, finished
	lastBatchDone bool
	comps         []string // completions offered for token
	compSel       int
	token         string

	footer     footerState
	lastAnswer string
	notice     string
	lastCtrlC  time.Time
	quitting   bool
}

// options are Options with the agent.
type options struct {
	Options
	Agent Agent
}

func newModel(o Options, th theme) *model {
	ed := textarea.New()
	ed.Prompt = "› "
	ed.ShowLineNumbers = false
	ed.SetHeight(1)
	ed.CharLimit = 0
	ed.MaxHeight = 0
	// Enter sends; a new line is Shift+Enter where the terminal tells it
	// apart, Ctrl+J everywhere (tmux too), Alt+Enter when idle.
	ed.KeyMap.InsertNewline = key.NewBinding(key.WithKeys("shift+enter", "ctrl+j"))
	// The editor is text on the terminal's own background; the prompt
	// marks it.
	st := textarea.DefaultDarkStyles()
	for _, s := range []*textarea.StyleState{&st.Focused, &st.Blurred} {
		s.Base, s.Text, s.CursorLine, s.EndOfBuffer = lipgloss.NewStyle(), lipgloss.NewStyle(), lipgloss.NewStyle(), lipgloss.NewStyle()
		s.Prompt = th.user
		s.Placeholder = th.dim
	}
	ed.SetStyles(st)
	ed.SetVirtualCursor(false)
	ed.Placeholder = "Ask, or / for commands (Ctrl+D quits)"
	ed.Focus()
	m := &model{o: options{Options: o}, th: th, width: 80, height: 24, editor: ed, history: o.History}
	m.histPos = len(m.history)
	return m
}

func (m *model) Init() tea.Cmd {
	if m.o.Branch == nil {
		return tick()
	}
	return tea.Batch(tick(), func() tea.Msg {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		return branchMsg{m.o.Branch(ctx)}
	})
}

func tick() tea.Cmd {
	return tea.Tick(100*time.Millisecond, func(time.Time) tea.Msg { return tickMsg{} })
}

var spinner = []string{"⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"}

func (m *model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		m.width, m.height = msg.Width, msg.Height
		m.editor.SetWidth(m.cols())
		return m, nil
	case tickMsg:
		m.spin++
		return m, tick()
	case branchMsg:
		m.footer.branch = msg.branch
		return m, nil
	case compMsg:
		if msg.token == m.token {
			m.comps, m.compSel = msg.items, 0
		}
		return m, nil
	case eventMsg:
		return m, m.event(msg.e)
	case doneMsg:
		return m, m.done(msg)
	case noticeMsg:
		if msg.print {
			return m, m.print(m.th.warn.Render("⟳ " + termtext.String(msg.text)))
		}
		m.notice = msg.text
		return m, nil
	case linkMsg:
		for i := range m.footer.hosts {
			if m.footer.hosts[i].name == msg.host {
				m.footer.hosts[i].up = msg.up
			}
		}
		return m, nil
	case editedMsg:
		m.editor.SetValue(msg.text)
		m.fitEditor()
		return m, nil
	case tea.PasteMsg:
		return m, tea.Batch(m.paste(msg.Content), m.complete())
	case tea.KeyPressMsg:
		return m, m.key(msg)
	}
	var cmd tea.Cmd
	m.editor, cmd = m.editor.Update(msg)
	return m, cmd
}

// maxCompletions is how many completions are shown at once.
const maxCompletions = 8

// pasteFold is the size (lines) from which a paste becomes a marker.
const pasteFold = 10

var pasteMarker = regexp.MustCompile(`\[paste #(\d+): \d+ lines\]`)

// paste inserts pasted text; a long paste becomes a marker that stands
// for it (sent unchanged; Ctrl+O in the editor shows it).
func (m *model) paste(text string) tea.Cmd {
	defer m.keep(m.snapshot())
	text = strings.ReplaceAll(text, "\r\n", "\n")
	text = strings.ReplaceAll(text, "\r", "\n")
	if n := strings.Count(strings.TrimRight(text, "\n"), "\n") + 1; n > pasteFold {
		m.pastes = append(m.pastes, text)
		m.editor.InsertString(fmt.Sprintf("[paste #%d: %d lines]", len(m.pastes), n))
	} else {
		m.editor.InsertString(text)
	}
	m.fitEditor()
	return nil
}

// expandPastes puts the pasted texts back in place of their markers.
func (m *model) expandPastes(s string) string {
	return pasteMarker.ReplaceAllStringFunc(s, func(marker string) string {
		var n int
		fmt.Sscanf(pasteMarker.FindStringSubmatch(marker)[1], "%d", &n)
		if n >= 1 && n <= len(m.pastes) {
			return m.pastes[n-1]
		}
		return marker
	})
}

func (m *model) key(k tea.KeyPressMsg) tea.Cmd {
	if m.picker != nil {
		return m.pickerKey(k)
	}
	if s := k.String(); s != "ctrl+c" {
		m.lastCtrlC = time.Time{}
		if m.notice == ctrlCHint {
			m.notice = ""
		}
	}
	switch k.String() {
	case "ctrl+c":
		if m.editor.Value() != "" {
			before := m.snapshot()
			m.editor.Reset()
			m.keep(before)
			m.fitEditor()
			return nil
		}
		if !m.lastCtrlC.IsZero() && time.Since(m.lastCtrlC) < 2*time.Second {
			return m.quit()
		}
		m.lastCtrlC = time.Now()
		m.notice = ctrlCHint
		return nil
	case "ctrl+d":
		if m.editor.Value() == "" {
			return m.quit()
		}
	case "esc":
		if m.running && m.cancel != nil {
			m.cancel()
			m.notice = "aborting…"
			return nil
		}
	case "ctrl+o":
		if len(m.pastes) > 0 && pasteMarker.MatchString(m.editor.Value()) {
			// Show what the paste markers stand for, in the editor.
			before := m.snapshot()
			m.editor.SetValue(m.expandPastes(m.editor.Value()))
			m.keep(before)
			m.fitEditor()
			return nil
		}
		m.expanded = !m.expanded
		if m.expanded && len(m.boxes) == 0 && len(m.lastBoxes) > 0 {
			// The scrollback cannot change: the last tools' output goes
			// there again, in full.
			var cmds []tea.Cmd
			for _, b := range m.lastBoxes {
				cmds = append(cmds, m.print(m.box(b)))
			}
			m.expanded = false
			return tea.Sequence(cmds...)
		}
		return nil
	case "ctrl+g":
		return m.externalEditor()
	case "ctrl+z", "ctrl+_":
		m.undoEdit()
		return m.complete()
	case "tab":
		if len(m.comps) > 0 {
			m.accept(m.comps[m.compSel])
			return m.complete()
		}
		return nil
	case "enter":
		if len(m.comps) > 0 && strings.HasPrefix(m.token, "/") {
			// Enter on a half-typed command runs the one offered.
			m.accept(m.comps[m.compSel])
		}
		m.comps, m.token = nil, ""
		return m.submit(false)
	case "alt+enter":
		if m.running {
			return m.submit(true)
		}
		before := m.snapshot()
		m.editor.InsertString("\n")
		m.keep(before)
		m.fitEditor()
		return nil
	case "up":
		if len(m.comps) > 0 {
			m.compSel = (m.compSel + len(m.comps) - 1) % len(m.comps)
			return nil
		}
		if m.editor.Line() == 0 && m.browse(-1) {
			return nil
		}
	case "down":
		if len(m.comps) > 0 {
			m.compSel = (m.compSel + 1) % len(m.comps)
			return nil
		}
		if m.editor.Line() == m.editor.LineCount()-1 && m.browse(1) {
			return nil
		}
	}
	before := m.snapshot()
	var cmd tea.Cmd
	m.editor, cmd = m.editor.Update(k)
	m.keep(before)
	m.fitEditor()
	return tea.Batch(cmd, m.complete())
}

// edit is the editor's text and cursor at one moment, for undo.
type edit struct {
	value    string
	row, col int
}

// undoDepth bounds the edits kept for undo.
const undoDepth = 200

func (m *model) snapshot() edit {
	return edit{m.editor.Value(), m.editor.Line(), m.editor.Column()}
}

// keep remembers before as an edit to go back to, if the text changed
// since.
func (m *model) keep(before edit) {
	if before.value == m.editor.Value() {
		return
	}
	if len(m.undo) == undoDepth {
		m.undo = m.undo[1:]
	}
	m.undo = append(m.undo, before)
}

// undoEdit puts the editor back as it was before the last change.
func (m *model) undoEdit() {
	if len(m.undo) == 0 {
		return
	}
	e := m.undo[len(m.undo)-1]
	m.undo = m.undo[:len(m.undo)-1]
	m.editor.SetValue(e.value)
	m.fitEditor()
	m.editor.MoveToBegin()
	for m.editor.Line() < e.row {
		m.editor.CursorDown()
	}
	m.editor.SetCursorColumn(e.col)
}

// complete offers completions for what is being typed at the end of the
// editor: a slash command, or an @path on the host (asked in the
// background).
func (m *model) complete() tea.Cmd {
	value := m.editor.Value()
	token := value[strings.LastIndexAny(value, " \n")+1:]
	if token == m.token {
		return nil
	}
	m.token, m.comps, m.compSel = token, nil, 0
	switch {
	case strings.HasPrefix(token, "/") && token == value:
		for name, c := range m.commands() {
			if c.usage != "" && strings.HasPrefix("/"+name, token) {
				m.comps = append(m.comps, "/"+name)
			}
		}
		sort.Strings(m.comps)
	case strings.HasPrefix(token, "@") && m.o.CompletePath != nil:
		prefix := strings.TrimPrefix(token, "@")
		return func() tea.Msg {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			items := m.o.CompletePath(ctx, prefix)
			for i, it := range items {
				items[i] = "@" + it
			}
			return compMsg{token: token, items: items}
		}
	}
	return nil
}

// accept puts a completion in place of the token it completes.
func (m *model) accept(c string) {
	defer m.keep(m.snapshot())
	value := m.editor.Value()
	value = value[:len(value)-len(m.token)] + c
	if !strings.HasSuffix(c, "/") {
		value += " "
	}
	m.editor.SetValue(value)
	m.editor.CursorEnd()
	m.fitEditor()
}

const ctrlCHint = "Ctrl+C again to quit"

// browse moves through the prompt history; false when there is nowhere
// to go.
func (m *model) browse(step int) bool {
	next := m.histPos + step
	if next < 0 || next > len(m.history) || len(m.history) == 0 {
		return false
	}
	if m.histPos == len(m.history) {
		m.draft = m.editor.Value()
	}
	m.histPos = next
	if next == len(m.history) {
		m.editor.SetValue(m.draft)
	} else {
		m.editor.SetValue(m.history[next])
	}
	m.fitEditor()
	return true
}

// editorMaxHeight is the most lines the editor takes; longer text scrolls.
const editorMaxHeight = 10

// fitEditor grows the editor with its text, up to editorMaxHeight lines.
// Text that fits is shown from its first line (the textarea keeps its
// scroll position when it grows).
func (m *model) fitEditor() {
	h := min(max(m.editor.LineCount(), 1), editorMaxHeight)
	if h == m.editor.Height() {
		return
	}
	m.editor.SetHeight(h)
	if m.editor.LineCount() <= editorMaxHeight {
		row, col := m.editor.Line(), m.editor.Column()
		m.editor.MoveToBegin()
		for m.editor.Line() < row {
			m.editor.CursorDown()
		}
		m.editor.SetCursorColumn(col)
	}
}

func (m *model) quit() tea.Cmd {
	m.quitting = true
	if m.cancel != nil {
		m.cancel()
	}
	return tea.Quit
}

// submit sends the editor's text: a slash command, a prompt, or, while a
// run goes on, a steering message (followUp: a follow-up).
func (m *model) submit(followUp bool) tea.Cmd {
	raw := m.editor.Value()
	text := strings.TrimSpace(m.expandPastes(raw))
	if text == "" {
		return nil
	}
	m.editor.Reset()
	m.fitEditor()
	m.pastes = nil
	m.remember(raw)
	if strings.HasPrefix(text, "/") && !strings.HasPrefix(text, "//") {
		return m.command(text)
	}
	msg := loop.NewUserText(text)
	if m.running {
		if followUp {
			m.o.Agent.FollowUp(msg)
		} else {
			m.o.Agent.Steer(msg)
		}
		m.queued = append(m.queued, text)
		return nil
	}
	return m.start(func(ctx context.Context) doneMsg {
		_, err := m.o.Agent.Prompt(ctx, msg)
		return doneMsg{err: err}
	})
}

// remember adds a prompt to the history (and its file).
func (m *model) remember(text string) {
	if n := len(m.history); n == 0 || m.history[n-1] != text {
		m.history = append(m.history, text)
		if m.o.SaveHistory != nil {
			m.o.SaveHistory(text)
		}
	}
	m.histPos = len(m.history)
	m.draft = ""
}

// start runs work (a prompt, a compaction) in the background.
func (m *model) start(work func(context.Context) doneMsg) tea.Cmd {
	ctx, cancel := context.WithCancel(context.Background())
	m.running, m.cancel, m.notice = true, cancel, ""
	return func() tea.Msg {
		defer cancel()
		return work(ctx)
	}
}

func (m *model) done(d doneMsg) tea.Cmd {
	m.running, m.cancel = false, nil
	m.notice = ""
	var cmds []tea.Cmd
	// Tools still shown live (an abort) go to the scrollback as they are.
	for _, b := range m.boxes {
		if b.state == toolRunning || b.state == toolPending {
			b.state = toolFailed
			b.result = loop.TextResult("interrupted")
		}
		cmds = append(cmds, m.print(m.box(b)))
	}
	m.boxes = nil
	if rest := m.stream[m.streamed:]; strings.TrimSpace(rest) != "" {
		cmds = append(cmds, m.print(markdown(rest, m.cols(), m.th)))
	}
	m.stream, m.streamed = "", 0
	for _, q := range m.queued {
		cmds = append(cmds, m.print(m.th.dim.Render("(not delivered) ")+renderUser(q, m.cols(), m.th)))
	}
	m.queued = nil
	switch {
	case d.err == nil:
	case errors.Is(d.err, context.Canceled):
		cmds = append(cmds, m.print(m.th.warn.Render("aborted")))
	default:
		cmds = append(cmds, m.print(m.th.bad.Render("error: "+termtext.String(d.err.Error()))))
	}
	m.refreshUsage()
	return tea.Sequence(cmds...)
}

func (m *model) refreshUsage() {
	m.footer.usage = m.o.Agent.Usage()
	m.footer.context = m.o.Agent.ContextTokens()
	m.footer.window = m.o.Agent.Model().Window
}

func (m *model) box(b *toolBox) string {
	return renderToolBox(b, m.o.Tools[b.name], m.cols(), m.expanded, spinner[m.spin%len(spinner)], m.th)
}

// event shows one of the agent's events.
func (m *model) event(e loop.Event) tea.Cmd {
	switch e := e.(type) {
	case loop.MessageStart:
		if _, ok := e.Message.(*loop.AssistantMessage); ok {
			m.thinking = true
			m.stream, m.streamed, m.thought, m.thoughtShown = "", 0, 0, false
		}
	case loop.MessageUpdate:
		switch d := e.Delta.(type) {
		case *loop.ThinkingDelta:
			m.thought += strings.Count(d.Delta, "\n")
			if m.thought == 0 && d.Delta != "" {
				m.thought = 1
			}
		case *loop.TextDelta:
			m.thinking = false
			var cmds []tea.Cmd
			if m.thought > 0 && !m.thoughtShown {
				cmds = append(cmds, m.print(m.thinkingNote()))
				m.thoughtShown = true
			}
			m.stream += d.Delta
			// Blocks that can no longer change go to the scrollback
			// rendered; the live part is only the one being written.
			if cut := stableCut(m.stream[m.streamed:]); cut > 0 {
				cmds = append(cmds, m.print(markdown(m.stream[m.streamed:m.streamed+cut], m.cols(), m.th)))
				m.streamed += cut
			}
			return tea.Sequence(cmds...)
		}
	case loop.MessageEnd:
		switch msg := e.Message.(type) {
		case *loop.UserMessage:
			text := msg.Content.Text()
			for i, q := range m.queued {
				if q == text {
					m.queued = append(m.queued[:i], m.queued[i+1:]...)
					break
				}
			}
			return m.print(renderUser(text, m.cols(), m.th))
		case *loop.AssistantMessage:
			m.thinking = false
			var out, texts []string
			for _, c := range msg.Content {
				switch c := c.(type) {
				case *loop.Text:
					texts = append(texts, c.Text)
				case *loop.Thinking:
					if m.thought == 0 && strings.TrimSpace(c.Thinking) != "" {
						m.thought = strings.Count(strings.TrimSpace(c.Thinking), "\n") + 1
					}
				}
			}
			if m.thought > 0 && !m.thoughtShown {
				out = append(out, m.thinkingNote())
			}
			// The calls it asks for wait until they start.
			for _, c := range msg.ToolCalls() {
				if m.findBox(c.ID) == nil && msg.StopReason != loop.StopLength {
					m.boxes = append(m.boxes, &toolBox{id: c.ID, name: c.Name, args: c.Arguments, state: toolPending})
				}
			}
			rest := m.stream[m.streamed:]
			if m.stream == "" {
				rest = strings.Join(texts, "") // not streamed
			}
			if strings.TrimSpace(rest) != "" {
				out = append(out, markdown(rest, m.cols(), m.th))
			}
			// (/copy copies the answer as it was shown: controls as
			// text, so that pasting it cannot end a bracketed paste.)
			if all := strings.Join(texts, ""); strings.TrimSpace(all) != "" {
				m.lastAnswer = termtext.String(all)
			}
			m.stream, m.streamed = "", 0
			if msg.ErrorMessage != "" && msg.StopReason != loop.StopAborted {
				out = append(out, m.th.bad.Render("error: "+termtext.String(msg.ErrorMessage)))
			}
			if len(out) > 0 {
				return m.print(strings.Join(out, "\n"))
			}
		}
	case loop.ToolExecutionStart:
		if b := m.findBox(e.ToolCallID); b != nil {
			b.state, b.args = toolRunning, e.Args
		} else {
			m.boxes = append(m.boxes, &toolBox{id: e.ToolCallID, name: e.ToolName, args: e.Args, state: toolRunning})
		}
	case loop.ToolExecutionUpdate:
		if b := m.findBox(e.ToolCallID); b != nil {
			b.output = e.PartialResult.Content.Text()
		}
	case loop.ToolExecutionEnd:
		if b := m.findBox(e.ToolCallID); b != nil {
			b.result, b.state = e.Result, toolDone
			if e.IsError {
				b.state = toolFailed
			}
			m.removeBox(b)
			m.finished(b)
			return m.print(m.box(b))
		}
	case agent.UsageUpdate:
		m.footer.usage = e.Session
		m.footer.context, m.footer.window = e.ContextTokens, e.ContextWindow
	case agent.CompactionStart:
		m.notice = "compacting the context…"
	case agent.CompactionEnd:
		m.notice = ""
		m.refreshUsage()
		if e.Error != "" {
			return m.print(m.th.bad.Render("compaction failed: " + termtext.String(e.Error)))
		}
		return m.print(m.th.dim.Render(fmt.Sprintf("── context compacted: %s → %s tokens ──", short(e.TokensBefore), short(e.TokensAfter))))
	}
	return nil
}

// finished keeps b among the last batch's tools (for Ctrl+O): the batch
// ends when no tool runs any more.
func (m *model) finished(b *toolBox) {
	if m.lastBatchDone {
		m.lastBoxes = nil
	}
	m.lastBoxes = append(m.lastBoxes, b)
	m.lastBatchDone = len(m.boxes) == 0
}

func (m *model) findBox(id string) *toolBox {
	for _, b := range m.boxes {
		if b.id == id {
			return b
		}
	}
	return nil
}

func (m *model) removeBox(b *toolBox) {
	for i, x := range m.boxes {
		if x == b {
			m.boxes = append(m.boxes[:i], m.boxes[i+1:]...)
			return
		}
	}
}

// externalEditor opens $VISUAL or $EDITOR on the editor's text.
func (m *model) externalEditor() tea.Cmd {
	editor := os.Getenv("VISUAL")
	if editor == "" {
		editor = os.Getenv("EDITOR")
	}
	if editor == "" {
		m.notice = "set $VISUAL or $EDITOR to edit the prompt there"
		return nil
	}
	f, err := os.CreateTemp("", "pi-remote-prompt-*.md")
	if err != nil {
		m.notice = err.Error()
		return nil
	}
	f.WriteString(m.expandPastes(m.editor.Value()))
	f.Close()
	c := exec.Command("sh", "-c", editor+` "$1"`, "sh", f.Name())
	return tea.ExecProcess(c, func(err error) tea.Msg {
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
}

// View draws the live part.
func (m *model) View() tea.View {
	if m.quitting {
		return tea.NewView("")
	}
	var parts []string
	if live := m.stream[m.streamed:]; strings.TrimSpace(live) != "" {
		parts = append(parts, termtext.LastLines(termtext.String(live), 12))
	} else if m.thinking && m.running {
		parts = append(parts, m.th.dim.Render(spinner[m.spin%len(spinner)]+" thinking…"))
	}
	for _, b := range m.boxes {
		parts = append(parts, m.box(b))
	}
	for _, q := range m.queued {
		parts = append(parts, m.th.dim.Render("queued: ")+termtext.String(firstLine(q)))
	}
	if m.notice != "" {
		parts = append(parts, m.th.warn.Render(termtext.String(m.notice)))
	} else if m.running {
		parts = append(parts, m.th.dim.Render(spinner[m.spin%len(spinner)]+" working — Esc aborts, Enter steers, Alt+Enter queues a follow-up"))
	}
	if m.picker != nil {
		parts = append(parts, m.pickerView()...)
	}
	for i, c := range m.comps {
		c = termtext.String(c) // a file name on the host
		if i == maxCompletions {
			parts = append(parts, m.th.dim.Render(fmt.Sprintf("  … %d more", len(m.comps)-i)))
			break
		}
		if i == m.compSel {
			parts = append(parts, m.th.accent.Render("▸ "+c)+m.th.dim.Render("  (Tab)"))
		} else {
			parts = append(parts, m.th.dim.Render("  "+c))
		}
	}
	// (Nothing above the editor may wrap: the cursor's row counts on it.)
	above := strings.Join(parts, "\n")
	if above != "" {
		var lines []string
		for _, l := range strings.Split(above, "\n") {
			lines = append(lines, ansi.Truncate(l, m.cols(), "…"))
		}
		above = strings.Join(lines, "\n") + "\n"
	}
	v := tea.NewView(above + m.editor.View() + "\n" + renderFooter(m.footer, m.cols(), m.th))
	// The terminal's own cursor, in the editor: it blinks as the user
	// set it, and input methods and screen readers follow it.
	if c := m.editor.Cursor(); c != nil {
		c.Y += strings.Count(above, "\n")
		v.Cursor = c
	}
	return v
}

// cols is the width everything is drawn to: one column short of the
// terminal's, so that no line fills a row (the terminal would count it
// twice when lines are inserted above the live part).
func (m *model) cols() int { return max(m.width-1, 20) }

// print puts text in the scrollback, above the live part, in pieces
// that fit on the screen with it (a taller piece would push the live
// part itself into the scrollback).
func (m *model) print(text string) tea.Cmd {
	room := max(m.height-strings.Count(m.View().Content, "\n")-2, 4)
	lines := strings.Split(text, "\n")
	if len(lines) <= room {
		return tea.Println(text)
	}
	var cmds []tea.Cmd
	for len(lines) > 0 {
		n := min(room, len(lines))
		cmds = append(cmds, tea.Println(strings.Join(lines[:n], "\n")))
		lines = lines[n:]
	}
	return tea.Sequence(cmds...)
}

// thinkingNote stands for the model's thinking, folded.
func (m *model) thinkingNote() string {
	return m.th.dim.Render(fmt.Sprintf("(thought for %d lines — folded)", m.thought))
}

// stableCut is how much of streamed Markdown can no longer change: up to
// the last blank line outside a code fence (0: none yet).
func stableCut(s string) int {
	cut, fences, start := 0, 0, 0
	for i := 0; i < len(s); i++ {
		if s[i] != '\n' {
			continue
		}
		line := strings.TrimSpace(s[start:i])
		if strings.HasPrefix(line, "```") || strings.HasPrefix(line, "~~~") {
			fences++
		}
		if line == "" && fences%2 == 0 && i > 0 {
			cut = i + 1
		}
		start = i + 1
	}
	return cut
}
