// Package tui is pi-remote's interactive terminal: an inline Bubble Tea
// program, not a full-screen one. Finished messages go to the terminal's
// own scrollback, where copying and scrolling work as in any program; only
// the live part — the answer being written, running tools, queued
// messages, the editor and the footer — is redrawn.
//
// One model (model.go) owns Update and routes each message to the
// component it is for. The components are plain structs, each with its
// own update methods and view: the editor (editor.go, completion.go: the
// prompt being written, its history, paste markers, undo, completions),
// the transcript (transcript.go: the answer being written and the live
// tool calls; render.go draws messages and tool boxes), and the footer
// (footer.go: the status line and the info line with hosts, model,
// tokens and cost). The slash commands are in commands.go, the picker
// they open in picker.go (tree.go lays out /tree, the session's
// branches); a tool call waiting for the person's decision (UI.Ask) is
// shown by approval.go, in the editor's place.
package tui

import (
	"context"
	"io"

	tea "charm.land/bubbletea/v2"

	"github.com/pi-remote/pi-remote/agent"
	"github.com/pi-remote/pi-remote/agent/permission"
	"github.com/pi-remote/pi-remote/loop"
	"github.com/pi-remote/pi-remote/session"
	"github.com/pi-remote/pi-remote/tools"
)

// Agent is what the terminal drives (an *agent.Session).
type Agent interface {
	Prompt(ctx context.Context, prompts ...loop.Message) (agent.Totals, error)
	Steer(m ...loop.Message)
	FollowUp(m ...loop.Message)
	Compact(ctx context.Context, focus string) error
	Usage() agent.Totals
	ContextTokens() int
	Model() agent.ModelInfo
	// Messages are the conversation so far, as the model sees it (a
	// resumed session's too: the terminal shows it again).
	Messages() []loop.Message
}

// Options configure the terminal.
type Options struct {
	// Tools render calls and results.
	Tools map[string]tools.Definition
	// Hosts, Cwd, Model and Thinking are shown in the footer; AutoCompact
	// says whether compaction is automatic.
	Hosts       []string
	Cwd         string
	Model       string
	Thinking    string
	AutoCompact bool
	// History is the prompts of earlier sessions (oldest first), as
	// sent (pastes whole, not their markers); SaveHistory keeps a new one.
	History     []string
	SaveHistory func(string)
	// Commands are the slash commands that reach outside the terminal.
	Commands Commands
	// CompletePath lists the directories (ending in "/") and files on the
	// host that prefix may stand for, best first, none when none match
	// (for @path completion); Branch says the git branch of the working
	// directory ("" when none). Both run in the background.
	CompletePath func(ctx context.Context, prefix string) []string
	Branch       func(ctx context.Context) string
	// Current is the content of the file at path on host that a write
	// waiting for approval would replace; false when there is none, or
	// it is not text to show (too large, binary). nil: the prompt shows
	// a write's new content only.
	Current func(ctx context.Context, host, path string) (string, bool)
	// Color turns colour on (off for NO_COLOR and dumb terminals).
	Color bool
	// Theme is "dark", "light", or "auto" (or ""): the terminal's
	// background asked for, dark when it does not say.
	Theme string
	// In and Out are the terminal (default stdin and stdout).
	In  io.Reader
	Out io.Writer
	// Width is the terminal's width until it reports one (tests).
	Width int
}

// Commands carry out the slash commands that change the session; nil
// ones are not offered.
type Commands struct {
	// SetModel switches to PROVIDER/ID; SetThinking to a level.
	SetModel    func(name string) error
	SetThinking func(level string) error
	// Session describes the session (file, size, cost).
	Session func() string
	// Export writes the transcript to path ("" for its default place)
	// and says where.
	Export func(path string) (string, error)
	// Hosts describes every host's connection; SetDefaultHost makes one
	// the default for tool calls.
	Hosts          func() string
	SetDefaultHost func(name string) error
	// Models lists the models /model offers (Value: PROVIDER/ID; Label
	// says when one cannot be used as things are).
	Models func() []Choice
	// ScopedModels are the models Ctrl+P cycles through (--models, the
	// settings' enabledModels).
	ScopedModels func() ModelScope
	// Sessions lists the sessions /resume offers (Value: an ID);
	// ForkPoints the user messages of this session /fork offers (Value:
	// an entry ID).
	Sessions   func() []Choice
	ForkPoints func() []Choice
	// Resume, Fork and New switch the terminal to another session: one
	// resumed by ID, a new one from an entry of this one, a new empty
	// one. They return it and what to print about it.
	Resume func(id string) (Agent, string, error)
	Fork   func(entry string) (Agent, string, error)
	New    func() (Agent, string, error)
	// Tree is every entry of the session's file, on every branch
	// (session.Tree's: in the order written), and the current branch's
	// last one; Navigate makes the current branch end at an entry (""
	// before the first), the agent's context that branch's (/tree).
	Tree     func() ([]session.Entry, string, error)
	Navigate func(entry string) error
	// Jobs lists the remote jobs (durable commands) of the hosts.
	Jobs func(width int) string
	// Prompts are the prompt templates ("review") and skills
	// ("skill:pdf") offered as /NAME; Expand is the message /NAME ARGS
	// sends (false when there is none by that name). A name a built-in
	// command has (BuiltinCommands) is not offered.
	Prompts func() []PromptCommand
	Expand  func(name, args string) (string, bool)
	// MCP describes the MCP servers: their state and tools (/mcp).
	MCP func() string
	// Shell runs the person's own command (!cmd) with bash on the
	// default host, no permission asked, its tool events shown as a
	// call's; it returns the output and whether it failed. ctx ends it
	// (Esc), killing the command.
	Shell func(ctx context.Context, command string) (output string, failed bool)
}

// PromptCommand is a prompt template or a skill, as /NAME offers it.
type PromptCommand struct {
	Name        string // without the slash
	Description string
}

// ModelScope is the scoped list of models as things are.
type ModelScope struct {
	// Set says that a list was given.
	Set bool
	// Models are the models of the list that can be used, in its order
	// (PROVIDER/ID); Skipped those that cannot, each with why
	// ("anthropic/claude-haiku-4-5 — needs ANTHROPIC_API_KEY").
	Models, Skipped []string
}

// UI is a running terminal.
type UI struct {
	p *tea.Program
	m *model
	// closed is closed when Run returns: nobody answers any more.
	closed chan struct{}
	// current is Options.Current (Ask runs outside the program).
	current func(ctx context.Context, host, path string) (string, bool)
}

// New prepares the terminal; Emit may be used as soon as it exists (the
// events wait for Run).
func New(o Options) *UI {
	th := newTheme(o.Color)
	th.light = o.Theme == "light"
	m := newModel(o, th)
	if o.Width > 0 {
		m.width = o.Width
		m.editor.setWidth(o.Width)
	} else {
		m.waitSize = true
	}
	for _, h := range o.Hosts {
		m.footer.hosts = append(m.footer.hosts, hostState{name: h, up: true})
	}
	m.footer.cwd, m.footer.model, m.footer.thinking, m.footer.auto = o.Cwd, o.Model, o.Thinking, o.AutoCompact
	var opts []tea.ProgramOption
	if o.In != nil {
		opts = append(opts, tea.WithInput(o.In))
	}
	if o.Out != nil {
		opts = append(opts, tea.WithOutput(o.Out))
	}
	return &UI{p: tea.NewProgram(m, opts...), m: m, closed: make(chan struct{}), current: o.Current}
}

// Emit shows one of the agent's events.
func (u *UI) Emit(e loop.Event) { u.p.Send(eventMsg{e}) }

// LinkState shows a host's connection lost (up false) or back.
func (u *UI) LinkState(host string, up bool) { u.p.Send(linkMsg{host, up}) }

// Notice shows a passing notice (a retried model request) in the
// scrollback.
func (u *UI) Notice(text string) { u.p.Send(noticeMsg{text, true}) }

// Ask asks the person whether a tool call may run (a permission.Asker:
// install it with Gate.SetAsker). The call waits in the live area, after
// any that wait already, until the person answers; when ctx ends first
// (the run is aborted) it goes away, and Ask returns ctx's error. Safe
// for concurrent use.
func (u *UI) Ask(ctx context.Context, r permission.Request) (permission.Answer, error) {
	return ask(ctx, u.p.Send, u.closed, prepare(ctx, r, u.current))
}

// Run runs the terminal with a until the user quits.
func (u *UI) Run(a Agent) error {
	defer close(u.closed)
	u.m.o.Agent = a
	u.m.refreshUsage()
	_, err := u.p.Run()
	return err
}
