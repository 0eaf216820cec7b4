package tui

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/charmbracelet/x/ansi"
	"github.com/pi-remote/pi-remote/agent"
	"github.com/pi-remote/pi-remote/internal/termtext"
	"github.com/pi-remote/pi-remote/loop"
	"github.com/pi-remote/pi-remote/tools"
)

// Messages from the agent's goroutines to the program.
type (
	eventMsg struct{ e loop.Event }
	doneMsg  struct {
		err error
		// compact: the end of a /compact, not of a run
		compact bool
		// shell: the output of a !command to go with the next prompt
		shell string
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
// the transcript's (the answer being written, running tools, queued
// messages), the status line, a picker, the editor and the footer. It
// owns Update: it routes each message to the component it is for.
type model struct {
	o      options
	th     theme
	width  int
	height int
	spin   int

	// sized says width and height are the terminal's, not the defaults;
	// resizes counts its size changes; staleRows are the rows the last
	// one left above the live part, to blank (resize.go).
	sized              bool
	resizes, staleRows int
	// waitSize: nothing is drawn until the terminal's size is known. The
	// program sends it as it starts, racing the first frame; a frame drawn
	// at the defaults and then redrawn at the real size could leave a copy
	// of itself in the scrollback.
	waitSize bool

	// outbox holds the pieces print has not sent yet, and printing says
	// a flush of them is on its way. Bubble Tea runs the command of each
	// Update on a goroutine of its own, so two prints from two updates
	// (an answer's blocks, then the next event's) could reach the
	// scrollback in either order; one flush at a time keeps them in order.
	outbox   []string
	printing bool

	transcript transcript
	editor     editor
	footer     footer
	picker     *picker
	// approvals wait for the person's decision, the first one shown.
	approvals []*approval

	running   bool
	cancel    context.CancelFunc
	lastCtrlC time.Time
	lastEsc   time.Time // an Esc on an empty editor: a second one soon opens /tree
	// shellOutputs are the outputs of !commands that go with the next
	// prompt.
	shellOutputs []string
	inShell      bool // a !command runs (not the agent)
	quitting     bool
}

// options are Options with the agent.
type options struct {
	Options
	Agent Agent
}

func newModel(o Options, th theme) *model {
	m := &model{
		o: options{Options: o}, th: th, width: 80, height: 24,
		transcript: transcript{tools: o.Tools},
		editor:     newEditor(o, th),
	}
	m.editor.describe = m.describeCommand
	return m
}

// Init starts the spinner's clock and asks for the branch. It prints an
// empty line first: in a fresh terminal the live part would start on its
// first row, and a terminal may move the whole screen to its scrollback
// when the live part is cleared from there to redraw it (tmux's
// scroll-on-clear), which would leave a copy of it behind.
func (m *model) Init() tea.Cmd {
	cmds := []tea.Cmd{tick()}
	if m.o.Branch != nil {
		cmds = append(cmds, m.branch)
	}
	if m.th.color && (m.o.Theme == "" || m.o.Theme == "auto") {
		// (The answer's style follows the background: see
		// BackgroundColorMsg.)
		cmds = append(cmds, func() tea.Msg { return tea.RequestBackgroundColor() })
	}
	return tea.Sequence(tea.Println(" "), m.replay(), tea.Batch(cmds...)) // (an empty line would not be printed)
}

// branch asks for the branch of the working directory.
func (m *model) branch() tea.Msg {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return branchMsg{m.o.Branch(ctx)}
}

func tick() tea.Cmd {
	return tea.Tick(100*time.Millisecond, func(time.Time) tea.Msg { return tickMsg{} })
}

var spinner = []string{"⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"}

func (m *model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		return m, m.resized(msg)
	case staleRowsMsg:
		return m, m.eraseStale(msg)
	case tea.CursorPositionMsg:
		return m, m.blankStale(msg)
	case tickMsg:
		m.spin++
		return m, tick()
	case branchMsg:
		m.footer.branch = msg.branch
		return m, nil
	case compMsg:
		m.editor.offered(msg)
		return m, nil
	case eventMsg:
		return m, m.event(msg.e)
	case doneMsg:
		return m, m.done(msg)
	case printedMsg:
		return m, m.printed()
	case noticeMsg:
		if msg.print {
			return m, m.print(m.th.warn.Render("⟳ " + termtext.String(msg.text)))
		}
		m.footer.notice = msg.text
		return m, nil
	case linkMsg:
		m.footer.setLink(msg.host, msg.up)
		return m, nil
	case editedMsg:
		m.editor.setText(msg.text)
		return m, nil
	case askMsg:
		m.approvals = append(m.approvals, msg.a)
		return m, nil
	case withdrawMsg:
		m.withdraw(msg.a)
		return m, nil
	case tea.PasteMsg:
		if len(m.approvals) > 0 {
			m.approvals[0].pasteReason(msg.Content)
			return m, nil
		}
		m.editor.paste(msg.Content)
		return m, m.editor.complete(m.commandNames)
	case tea.KeyPressMsg:
		return m, m.key(msg)
	case tea.BackgroundColorMsg:
		if m.o.Theme == "" || m.o.Theme == "auto" {
			m.th.light = !msg.IsDark()
		}
		return m, nil
	case quitWindowMsg:
		// The window for a second Ctrl+C is over: so is its hint.
		if m.lastCtrlC.Equal(time.Time(msg)) {
			m.lastCtrlC = time.Time{}
			if m.footer.notice == ctrlCHint {
				m.footer.notice = ""
			}
		}
		return m, nil
	}
	return m, m.editor.update(msg)
}

const ctrlCHint = "Ctrl+C again to quit"

// quitWindow is how long a second Ctrl+C quits; quitWindowMsg ends the
// window opened at that time.
const quitWindow = 2 * time.Second

type quitWindowMsg time.Time

// What the status line says after Ctrl+O and Ctrl+T, until the next key.
const (
	foldedNote         = "tool output folded (Ctrl+O shows all of it)"
	expandedNote       = "tool output in full (Ctrl+O folds it)"
	thinkingShownNote  = "thinking shown (Ctrl+T folds it)"
	thinkingFoldedNote = "thinking folded (Ctrl+T shows it)"
)

// nextThinking is Shift+Tab: the next thinking level (off, low, medium,
// high, then off), as /thinking LEVEL sets it.
func (m *model) nextThinking() tea.Cmd {
	c, ok := m.commands()["thinking"]
	if !ok {
		return nil
	}
	if m.running {
		m.footer.notice = "Shift+Tab waits until the run ends (Esc aborts it)"
		return nil
	}
	levels := agent.ThinkingLevels
	i := slices.Index(levels, m.footer.thinking) // (none set: off, the first)
	return c.run(m, levels[(max(i, 0)+1)%len(levels)])
}

// cycleModel is Ctrl+P (step 1) and Shift+Ctrl+P (step -1): the next or
// previous model of the scoped list that can be used, switched to as
// /model does; from a model not in the list, its first (or last).
func (m *model) cycleModel(step int) tea.Cmd {
	if m.running {
		m.footer.notice = "Ctrl+P waits until the run ends (Esc aborts it)"
		return nil
	}
	scope := m.o.Commands.ScopedModels()
	skipped := ""
	if len(scope.Skipped) > 0 {
		skipped = "; skipped: " + strings.Join(scope.Skipped, ", ")
	}
	switch {
	case !scope.Set:
		m.footer.notice = `no models to cycle through: list them with --models or "enabledModels" in settings`
		return nil
	case len(scope.Models) == 0:
		m.footer.notice = "no model of the scoped list can be used" + skipped
		return nil
	case len(scope.Models) == 1 && scope.Models[0] == m.footer.model:
		m.footer.notice = "only " + scope.Models[0] + " of the scoped list can be used" + skipped
		return nil
	}
	n := len(scope.Models)
	i := slices.Index(scope.Models, m.footer.model)
	switch {
	case i >= 0:
		i = (i + step + n) % n
	case step > 0:
		i = 0
	default:
		i = n - 1
	}
	return m.setModel(scope.Models[i])
}

// key routes a key: to the approval shown, while one waits; to the
// picker while one is open; to the model for the keys that act on the
// run or the program (quit, abort, send) and Ctrl+O, which the editor
// and the transcript share; to the editor for the rest.
func (m *model) key(k tea.KeyPressMsg) tea.Cmd {
	if len(m.approvals) > 0 {
		return m.approvalKey(k)
	}
	if m.picker != nil {
		return m.pickerKey(k)
	}
	if k.String() != "esc" && k.String() != "alt+esc" {
		m.lastEsc = time.Time{}
	}
	if k.String() != "ctrl+c" {
		m.lastCtrlC = time.Time{}
		if m.footer.notice == ctrlCHint {
			m.footer.notice = ""
		}
	}
	if k.String() != "ctrl+o" && (m.footer.notice == foldedNote || m.footer.notice == expandedNote) {
		m.footer.notice = ""
	}
	if k.String() != "ctrl+t" && (m.footer.notice == thinkingShownNote || m.footer.notice == thinkingFoldedNote) {
		m.footer.notice = ""
	}
	switch k.String() {
	case "ctrl+c":
		return m.interrupt()
	case "ctrl+d":
		if m.editor.value() == "" {
			return m.quit()
		}
	case "esc", "alt+esc":
		// (Two Esc that reach the program in one read are one key,
		// Alt+Esc: over ssh, or typed fast.)
		if m.running && m.cancel != nil {
			m.cancel()
			m.footer.notice = "aborting…"
			return nil
		}
		if !m.running && m.editor.value() == "" {
			if k.String() == "alt+esc" {
				m.lastEsc = time.Now()
			}
			if cmd := m.escTree(); cmd != nil || m.picker != nil {
				return cmd
			}
		}
	case "ctrl+o":
		if m.editor.showPastes() {
			return nil
		}
		m.transcript.toggleExpanded()
		m.footer.notice = foldedNote
		if m.transcript.expanded {
			m.footer.notice = expandedNote
		}
		return nil
	case "ctrl+t":
		m.transcript.showThinking = !m.transcript.showThinking
		m.footer.notice = thinkingFoldedNote
		if m.transcript.showThinking {
			m.footer.notice = thinkingShownNote
		}
		return nil
	case "ctrl+l":
		// (The model picker, as /model with no argument.)
		c, ok := m.commands()["model"]
		switch {
		case !ok:
			return nil
		case m.running:
			m.footer.notice = "Ctrl+L waits until the run ends (Esc aborts it)"
			return nil
		}
		return c.run(m, "")
	case "ctrl+p", "ctrl+shift+p":
		if m.o.Commands.SetModel == nil || m.o.Commands.ScopedModels == nil {
			break
		}
		if k.String() == "ctrl+p" {
			return m.cycleModel(1)
		}
		return m.cycleModel(-1)
	case "shift+tab":
		return m.nextThinking()
	case "ctrl+g":
		cmd, err := m.editor.external()
		if err != nil {
			m.footer.notice = err.Error()
		}
		return cmd
	case "enter":
		m.editor.endCompletion()
		return m.submit(false)
	case "alt+enter":
		if m.running {
			return m.submit(true)
		}
	}
	return m.editor.key(k, m.commandNames)
}

// interrupt is Ctrl+C: it clears the editor; on an empty one it warns,
// and a second one within two seconds quits.
func (m *model) interrupt() tea.Cmd {
	if m.editor.value() != "" {
		m.editor.clear()
		return nil
	}
	if !m.lastCtrlC.IsZero() && time.Since(m.lastCtrlC) < quitWindow {
		return m.quit()
	}
	at := time.Now()
	m.lastCtrlC = at
	m.footer.notice = ctrlCHint
	return tea.Tick(quitWindow, func(time.Time) tea.Msg { return quitWindowMsg(at) })
}

func (m *model) quit() tea.Cmd {
	m.quitting = true
	if m.cancel != nil {
		m.cancel()
	}
	if m.printing || len(m.outbox) > 0 {
		return m.flush() // (printed quits)
	}
	return tea.Quit
}

// submit sends the editor's text: a slash command, a prompt, or, while a
// run goes on, a steering message (followUp: a follow-up).
func (m *model) submit(followUp bool) tea.Cmd {
	text := m.editor.take()
	if text == "" {
		return nil
	}
	if strings.HasPrefix(text, "/") && !strings.HasPrefix(text, "//") {
		return m.command(text, followUp)
	}
	if strings.HasPrefix(text, "!") {
		return m.shell(text)
	}
	return m.send(text, followUp)
}

// send sends text as the person's message: a prompt, or, while a run goes
// on, a steering message (followUp: a follow-up).
func (m *model) send(text string, followUp bool) tea.Cmd {
	if m.inShell {
		m.editor.setText(text)
		return m.fail(errors.New("the !command runs: wait for it, or Esc to kill it"))
	}
	if len(m.shellOutputs) > 0 && !m.running {
		// (The !commands' outputs go with the prompt, the model's
		// context from then on, as the person's own words would.)
		text = strings.Join(m.shellOutputs, "\n\n") + "\n\n" + text
		m.shellOutputs = nil
	}
	msg := loop.NewUserText(text)
	if m.running {
		if followUp {
			m.o.Agent.FollowUp(msg)
		} else {
			m.o.Agent.Steer(msg)
		}
		m.transcript.queued = append(m.transcript.queued, text)
		return nil
	}
	return m.start(func(ctx context.Context) doneMsg {
		_, err := m.o.Agent.Prompt(ctx, msg)
		return doneMsg{err: err}
	})
}

// start runs work (a prompt, a compaction) in the background.
func (m *model) start(work func(context.Context) doneMsg) tea.Cmd {
	ctx, cancel := context.WithCancel(context.Background())
	m.running, m.cancel, m.footer.notice = true, cancel, ""
	return func() tea.Msg {
		defer cancel()
		return work(ctx)
	}
}

// done ends a run: what was live goes to the scrollback, then how it
// ended.
func (m *model) done(d doneMsg) tea.Cmd {
	m.running, m.cancel, m.inShell = false, nil, false
	m.footer.notice = ""
	if d.shell != "" && d.err == nil {
		m.shellOutputs = append(m.shellOutputs, d.shell)
		m.footer.notice = tools.Count(len(m.shellOutputs), "command's output goes", "commands' outputs go") + " with your next prompt"
	}
	cmds := m.transcript.endRun(m.frame())
	switch {
	case d.err == nil:
	case errors.Is(d.err, context.Canceled):
		cmds = append(cmds, m.print(m.th.warn.Render("aborted")))
	case agent.Shown(d.err):
		// The failed answer or the compaction's line said it.
	default:
		cmds = append(cmds, m.print(m.th.bad.Render("error: "+termtext.String(d.err.Error()))))
	}
	m.refreshUsage()
	return tea.Sequence(cmds...)
}

func (m *model) refreshUsage() {
	m.footer.setUsage(m.o.Agent.Usage(), m.o.Agent.ContextTokens(), m.o.Agent.Model().Window)
}

// event routes one of the agent's events: usage to the footer,
// compaction to the status line and the scrollback, the loop's messages
// and tool calls to the transcript.
func (m *model) event(e loop.Event) tea.Cmd {
	switch e := e.(type) {
	case agent.UsageUpdate:
		m.footer.setUsage(e.Session, e.ContextTokens, e.ContextWindow)
	case agent.CompactionStart:
		m.footer.notice = "compacting the context…"
	case agent.CompactionEnd:
		m.footer.notice = ""
		m.refreshUsage()
		if e.Error != "" {
			return m.print(m.th.bad.Render("compaction failed: " + termtext.String(e.Error)))
		}
		return m.print(m.th.dim.Render(fmt.Sprintf("── context compacted: %s → %s tokens ──", short(e.TokensBefore), short(e.TokensAfter))))
	default:
		return m.transcript.event(e, m.frame())
	}
	return nil
}

// frame is how the transcript is drawn now.
func (m *model) frame() frame {
	return frame{cols: m.cols(), th: m.th, spin: spinner[m.spin%len(spinner)], print: m.print}
}

// View draws the live part: the transcript's, the status line, a picker,
// the completions, the editor and the footer; while an approval waits,
// the transcript's, the approval and the footer (approvalScreen).
func (m *model) View() tea.View {
	if m.quitting || m.waitSize {
		return tea.NewView("")
	}
	f := m.frame()
	if len(m.approvals) > 0 {
		return m.approvalScreen(f)
	}
	var below []string // between the transcript's and the editor
	if s := m.footer.status(m.running, f.spin, m.th); s != "" {
		below = append(below, s)
	}
	if m.picker != nil {
		below = append(below, m.pickerView()...)
	}
	below = append(below, m.editor.completionView(m.th, m.cols())...)
	editor, footer := m.editor.view(), m.footer.view(m.cols(), m.th)
	// The whole of it fits on the screen, with rows to spare (print).
	used := m.printRows() + lineCount(editor) + lineCount(footer)
	for _, p := range below {
		used += lineCount(p)
	}
	parts := append(m.transcript.view(m.running, f, m.height-used), below...)
	// (Nothing above the editor may wrap: the cursor's row counts on it.)
	above := strings.Join(parts, "\n")
	if above != "" {
		var lines []string
		for _, l := range strings.Split(above, "\n") {
			lines = append(lines, ansi.Truncate(l, m.cols(), "…"))
		}
		above = strings.Join(lines, "\n") + "\n"
	}
	v := tea.NewView(above + editor + "\n" + footer)
	// The terminal's own cursor, in the editor: it blinks as the user
	// set it, and input methods and screen readers follow it.
	if c := m.editor.cursor(); c != nil {
		c.Y += strings.Count(above, "\n")
		v.Cursor = c
	}
	return v
}

func lineCount(s string) int { return strings.Count(s, "\n") + 1 }

// cols is the width everything is drawn to: one column short of the
// terminal's, so that no line fills a row (the terminal would count it
// twice when lines are inserted above the live part).
func (m *model) cols() int { return max(m.width-1, 20) }

// printRows is how many rows the live part leaves free on the screen:
// a piece of text printed to the scrollback may be that tall.
func (m *model) printRows() int { return min(max(m.height/8, 1), 3) }

// print puts text in the scrollback, above the live part, in pieces
// that fit on the screen with it. (The terminal scrolls a piece in below
// the live part, then inserts it above: with a taller piece the top of
// the live part would scroll into the scrollback, a copy left behind.
// The live part may change before the piece goes out, but it never takes
// the last printRows rows.)
//
// Pieces go out in the order print was called: see outbox.
func (m *model) print(text string) tea.Cmd {
	room := max(min(m.height-lineCount(m.View().Content), m.printRows()), 1)
	lines := strings.Split(text, "\n")
	for len(lines) > 0 {
		n := min(room, len(lines))
		m.outbox = append(m.outbox, strings.Join(lines[:n], "\n"))
		lines = lines[n:]
	}
	return m.flush()
}

// printedMsg says the pieces of the last flush are in the scrollback.
type printedMsg struct{}

// flush sends what waits in the outbox to the scrollback, unless pieces
// are on their way already (their printedMsg flushes again).
func (m *model) flush() tea.Cmd {
	if m.printing || len(m.outbox) == 0 {
		return nil
	}
	m.printing = true
	var cmds []tea.Cmd
	for _, piece := range m.outbox {
		cmds = append(cmds, tea.Println(piece))
	}
	m.outbox = nil
	// (A sequence sends its messages one after the other: the program
	// has printed the pieces when printedMsg reaches Update.)
	return tea.Sequence(append(cmds, func() tea.Msg { return printedMsg{} })...)
}

// printed is a flush's end: the next, or the quit that waited for it.
func (m *model) printed() tea.Cmd {
	m.printing = false
	if len(m.outbox) > 0 {
		return m.flush()
	}
	if m.quitting {
		return tea.Quit
	}
	return nil
}
