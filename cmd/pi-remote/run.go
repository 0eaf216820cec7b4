package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/pi-remote/pi-remote/agent"
	"github.com/pi-remote/pi-remote/internal/termtext"
	"github.com/pi-remote/pi-remote/llm"
	"github.com/pi-remote/pi-remote/loop"
	"github.com/pi-remote/pi-remote/mcpclient"
	"github.com/pi-remote/pi-remote/ops/ssh"
	"github.com/pi-remote/pi-remote/printer"
	"github.com/pi-remote/pi-remote/session"
	"github.com/pi-remote/pi-remote/tools"
	"github.com/pi-remote/pi-remote/tui"
	"github.com/pi-remote/pi-remote/workspace"
)

type runOptions struct {
	model         string
	baseURL       string
	thinking      string
	tools         string
	toolExecution string
	maxTurns      int
	systemPrompt  string
	mode          string
	session       string
	cont          bool
	resume        string
	fork          string
	// models is the scoped list the terminal's Ctrl+P cycles through
	// (--models: patterns, comma-separated).
	models string
	// toolsGiven says that --tools (or the settings' "tools") chose the
	// tools: MCP tools are then active only when named.
	toolsGiven bool
}

func newRunCmd(ios iostreams, g *globalOptions) *cobra.Command {
	o := &runOptions{}
	cmd := &cobra.Command{
		Use:   "run [PROMPT...]",
		Short: "Run the agent on the host",
		Long: `Run the agent with PROMPT (or the prompt read from stdin when it is not a
terminal) against the chosen host, and print the assistant's answer. With no
prompt and a terminal on stdin, run interactively: a prompt loop in one
session, where Ctrl-C aborts the current run and a second Ctrl-C exits.

--model is PROVIDER/ID: openai/ID for OpenAI or any OpenAI-compatible server
(--base-url for vLLM, llama.cpp, Ollama, OpenRouter...; key in OPENAI_API_KEY),
anthropic/ID for the Anthropic Messages API (key in ANTHROPIC_API_KEY), or
scripted/FILE to replay assistant turns from a JSON file.

--mode print streams the assistant's text to stdout and tool activity to
stderr, control characters in them shown as text (ESC as ^[); --mode json
prints every loop event as one JSON line.

Every message is appended to a session file as it happens (JSONL, a tree of
entries): --continue resumes the last session for this host and directory,
--session FILE continues or creates that file.

Exit status: 0 the run finished, 1 it ended in an error (or was aborted),
2 usage error (including a missing key or model), 3 connection failure.`,
		Example: `  pi-remote run --host devbox --model openai/gpt-4o-mini "make the failing test pass"
  pi-remote run --model openai/qwen3-coder --base-url http://127.0.0.1:8000/v1 "explain main.go"
  pi-remote run --model scripted/demo.json --mode json "go"`,
		RunE: func(cmd *cobra.Command, args []string) error {
			o.toolsGiven = cmd.Flags().Changed("tools")
			return runRun(cmd.Context(), ios, g, o, args)
		},
	}
	f := cmd.Flags()
	registerAgentFlags(f, o)
	f.StringVar(&o.mode, "mode", "print", "print|json")
	f.StringVar(&o.session, "session", "", "session file to continue (or create); default a new file under ~/.pi-remote/sessions")
	f.BoolVar(&o.cont, "continue", false, "continue the last session for this host and working directory")
	f.StringVar(&o.resume, "resume", "", "continue the session with this ID (a prefix is enough; pi-remote sessions lists them)")
	f.StringVar(&o.models, "models", "", "the models Ctrl+P cycles through in the terminal, comma-separated: PROVIDER/ID or ID, * for any characters (e.g. 'anthropic/*,gpt-4o')")
	f.StringVar(&o.fork, "fork", "", "start a new session from this entry of another (with --session or --resume naming it; otherwise any session's)")
	return cmd
}

// registerAgentFlags are the flags run and rpc share.
func registerAgentFlags(f *pflag.FlagSet, o *runOptions) {
	f.StringVar(&o.model, "model", os.Getenv("PI_REMOTE_MODEL"), "PROVIDER/ID: openai/ID, anthropic/ID or scripted/FILE (default $PI_REMOTE_MODEL)")
	f.StringVar(&o.baseURL, "base-url", "", "URL of an OpenAI- or Anthropic-compatible API (e.g. http://127.0.0.1:8000/v1)")
	f.StringVar(&o.thinking, "thinking", "off", "reasoning level: "+strings.Join(agent.ThinkingLevels, "|")+" (OpenAI reasoning_effort, Anthropic extended thinking)")
	f.StringVar(&o.tools, "tools", strings.Join(tools.DefaultActive, ","), "active tools, comma-separated: "+strings.Join(tools.AllNames, ",")+"; MCP servers' tools as mcp__SERVER__TOOL, mcp__SERVER (all of a server's) or a glob (mcp__*); unless given, every MCP tool is active too")
	f.StringVar(&o.toolExecution, "tool-execution", "parallel", "parallel|sequential")
	f.IntVar(&o.maxTurns, "max-turns", 50, "most model turns in one run")
	f.StringVar(&o.systemPrompt, "system-prompt", "", "replace the opening of the system prompt (tools, hosts and project context are still added)")
}

// newModel builds the model spec names at a thinking level, with the
// flags' base URL; onRetry hears of its retried requests. Problems are
// usage errors that say what to do, and where spec came from: from
// ("--model", "/model", or the settings file that set it).
func newModel(spec, thinking, from string, o *runOptions, onRetry func(attempt int, why string)) (loop.Model, error) {
	if spec == "" {
		return nil, usageErrorf("no model: pass --model PROVIDER/ID (openai/ID, anthropic/ID or scripted/FILE), or set PI_REMOTE_MODEL")
	}
	if !slices.Contains(agent.ThinkingLevels, thinking) {
		return nil, usageErrorf("--thinking %q: want %s", thinking, strings.Join(agent.ThinkingLevels, ", "))
	}
	m, err := llm.New(spec, llm.Options{BaseURL: o.baseURL, Thinking: thinking, OnRetry: onRetry})
	var ke *llm.KeyError
	var se *llm.SpecError
	switch {
	case errors.As(err, &ke):
		return nil, usageErrorf("%s: export it, or point --base-url at an %s-compatible server that needs no key", ke, ke.API)
	case errors.As(err, &se):
		return nil, usageErrorf("%s %q: %s", from, se.Spec, se.Why)
	case err != nil:
		return nil, usageErrorf("%v", err)
	}
	return m, nil
}

func readPrompt(ios iostreams, args []string) (string, error) {
	if len(args) > 0 {
		return strings.Join(args, " "), nil
	}
	if f, ok := ios.in.(*os.File); ok {
		if fi, err := f.Stat(); err == nil && fi.Mode()&os.ModeCharDevice != 0 {
			return "", nil // a terminal and no prompt: interactive mode
		}
	}
	b, err := io.ReadAll(io.LimitReader(ios.in, maxArgsInput))
	if err != nil {
		return "", usageErrorf("read prompt from stdin: %v", err)
	}
	p := strings.TrimSpace(string(b))
	if p == "" {
		return "", usageErrorf("no prompt: pass it as arguments or on stdin")
	}
	return p, nil
}

func runRun(ctx context.Context, ios iostreams, g *globalOptions, o *runOptions, args []string) error {
	if o.mode != "print" && o.mode != "json" {
		return usageErrorf("--mode %q: want print or json", o.mode)
	}
	prompt, err := readPrompt(ios, args)
	if err != nil {
		return err
	}
	if prompt == "" && o.mode != "print" {
		return usageErrorf("interactive mode needs --mode print; pass a prompt for --mode json")
	}
	// The terminal says when a host's connection is lost and back.
	news := &relay{}
	var onLink workspace.LinkFunc
	if o.mode == "print" {
		onLink = news.onLink
	}
	w, err := openWorkspace(ctx, g, o, true, onLink, news.onRetry)
	if err != nil {
		return err
	}
	defer w.Close()
	if (o.session != "" && o.cont) || (o.session != "" && o.resume != "") || (o.cont && o.resume != "") {
		return usageErrorf("give one of --session, --continue and --resume")
	}
	opened, err := agent.Open(w.Where(agent.Where{Path: o.session, Continue: o.cont, Resume: o.resume, Fork: o.fork}), g.settings.ModelTable())
	if err != nil {
		return usageErrorf("session: %v", err)
	}
	// A terminal that can redraw gets the terminal UI; a dumb one (an
	// editor's shell buffer) the line prompt.
	a := &runAgent{errw: ios.err, print: o.mode == "print"}
	defer a.close()
	var ui *tui.UI
	switch {
	case prompt == "" && os.Getenv("TERM") != "dumb":
		ui = newTUI(ios, g, o, w, a, news.onRetry)
		news.set(func(host string, s ssh.LinkState, _ time.Duration, _ error) {
			ui.LinkState(host, s != ssh.LinkReconnecting)
		}, func(n int, why string) { ui.Notice(retryNote(n, why)) })
		w.SetNotice(ui.Notice)
		a.out = tuiEvents{ui}
	case o.mode == "json":
		a.out = printer.NewJSON(ios.out)
		w.SetNotice(func(s string) { fmt.Fprintln(g.warn, s) })
	default:
		pw := printer.New(ios.out, ios.err, w.ByName, isTerminal(ios.err), useColor(ios.err))
		news.set(pw.LinkState, func(n int, why string) { pw.Note(retryNote(n, why)) })
		w.SetNotice(pw.Note)
		a.out = pw
	}
	// (The terminal UI switches sessions: /new, /resume, /fork.)
	a.start = func(opened agent.Opened) {
		a.close()
		sess := opened.File
		a.file, a.path, a.id = sess, sess.Path(), sess.Header().ID
		w.SetSessionID(sess.Header().ID)
		if w.Gate != nil {
			w.Gate.NewSession() // "always for this session" was the last one's
		}
		a.s = agent.New(agent.Options{
			Config:      w.Config,
			Model:       g.settings.ModelTable().Lookup(o.model),
			Compaction:  g.settings.compaction(),
			File:        sess,
			Context:     opened.Context,
			PriorUsage:  opened.Prior,
			DefaultHost: w.DefaultHost(),
			Emit:        a.out.Emit,
			SaveError: func(err error) {
				fmt.Fprintf(ios.err, "pi-remote: session %s: %v (the run goes on unsaved)\n", sess.Path(), err)
			},
		})
	}
	a.start(opened)
	if ui != nil {
		err := ui.Run(a.s)
		// (So that a person can come back to it.)
		root, _ := session.Root()
		fmt.Fprintf(ios.err, "session: %s\nto go on: %s\n", a.path, termtext.String(resumeCommand(g.host.Hosts, g.host.Cwd, a.id, a.path, root)))
		return err
	}
	if prompt == "" {
		sigs := make(chan os.Signal, 2)
		signal.Notify(sigs, os.Interrupt)
		defer signal.Stop(sigs)
		// Ctrl-C is ours now: the root context's own cancellation on the
		// first interrupt must not end the whole session.
		cmds := lineCommands(a, tuiCommands(g, o, w, a, news.onRetry), o)
		return a.interactive(context.WithoutCancel(ctx), ios, sigs, cmds)
	}
	err = a.turn(ctx, prompt)
	if errors.Is(err, agent.ErrOverflow) {
		// The events showed the refusals; what to do is ours to say
		// (the prompt loop says it for each of its runs).
		fmt.Fprintln(ios.err, "pi-remote:", termtext.String(err.Error()))
	}
	if o.mode == "print" {
		fmt.Fprintf(ios.err, "session: %s\n", a.path)
	}
	return err
}

// openWorkspace opens the hosts the flags choose and the workspace over
// them, for run and rpc; onLink and onRetry hear of lost connections and
// retried model requests. Without requireModel an empty --model leaves the
// model unset (rpc serves tool commands without one).
func openWorkspace(ctx context.Context, g *globalOptions, o *runOptions, requireModel bool, onLink workspace.LinkFunc, onRetry func(int, string)) (*workspace.Workspace, error) {
	var execMode loop.ExecutionMode
	switch o.toolExecution {
	case "parallel":
	case "sequential":
		execMode = loop.Sequential
	default:
		return nil, usageErrorf("--tool-execution %q: want parallel or sequential", o.toolExecution)
	}
	if o.maxTurns <= 0 {
		return nil, usageErrorf("--max-turns must be positive")
	}
	var model loop.Model
	if o.model != "" || requireModel {
		m, err := newModel(o.model, o.thinking, g.modelFrom(), o, onRetry)
		if err != nil {
			return nil, err
		}
		model = m
	}
	if _, err := g.policy(); err != nil {
		return nil, err // before connecting
	}
	hosts, err := workspace.OpenHosts(ctx, g.host, workspace.Session, onLink, g.warn)
	if err != nil {
		return nil, err
	}
	gate, err := g.gate(hosts.Names())
	if err != nil {
		hosts.Close()
		return nil, err
	}
	userSkills, templates := loadSkillsAndTemplates(g.settings, g.warn)
	active := splitList(o.tools)
	if !o.toolsGiven {
		active = append(active, "mcp__*") // every MCP tool, unless the tools are named
	}
	mcp := g.startMCP(ctx, hosts)
	for _, f := range mcp.Failures() {
		fmt.Fprintln(g.warn, "pi-remote:", f)
	}
	return workspace.Open(ctx, hosts, workspace.Options{
		Model: model, Active: active, ToolExecution: execMode, MaxTurns: o.maxTurns, Intro: o.systemPrompt, Warn: g.warn, Gate: gate,
		Hooks:      g.settings.Hooks,
		UserSkills: userSkills, Templates: templates,
		MCP: mcp,
	})
}

// startMCP starts the MCP servers the settings configure (nil when there
// are none); the servers a project configured, and the user does not
// trust, are listed as not started.
func (g *globalOptions) startMCP(ctx context.Context, hosts workspace.Hosts) *mcpclient.Manager {
	l := g.settings.loaded
	cfgs := l.MCPServers()
	if len(cfgs) == 0 && len(l.MCPUntrusted) == 0 {
		return nil
	}
	m := workspace.StartMCP(ctx, hosts, cfgs)
	m.Skip(l.MCPUntrusted, "configured by the project "+l.ProjectDir+", which you have not trusted (trustedProjects, or --trust-project)")
	return m
}

// runAgent is run's conversation: the agent session and how its runs are
// shown.
type runAgent struct {
	s     *agent.Session
	file  *session.Session
	path  string
	id    string             // the session's ID
	start func(agent.Opened) // makes s from an opened session file
	out   eventWriter
	errw  io.Writer
	print bool // print mode: the usage line after each run
}

// close closes the session file once the runs under way (cancelled by a
// front end that quit mid-run) have saved their end.
func (a *runAgent) close() {
	if a.s != nil {
		a.s.Close()
	}
	if a.file != nil {
		a.file.Close()
		a.file = nil
	}
}

// turn runs the agent on one prompt.
func (a *runAgent) turn(ctx context.Context, prompt string) error {
	run, runErr := a.s.Prompt(ctx, loop.NewUserText(prompt))
	a.out.Finish()
	if a.print && run.Calls > 0 {
		fmt.Fprintf(a.errw, "usage: %s (session %s)\n", run, a.s.Usage())
	}
	switch {
	case ctx.Err() != nil:
		return &failure{err: errors.New("aborted")}
	case runErr != nil:
		return &failure{err: runErr}
	}
	if last := loop.LastAssistant(a.s.Messages()); last != nil && (last.StopReason == loop.StopError || last.StopReason == loop.StopAborted) {
		return &failure{err: fmt.Errorf("the run ended in an error: %s", last.ErrorMessage)}
	}
	return nil
}

// compact compacts the conversation now (interactive /compact [focus]).
func (a *runAgent) compact(ctx context.Context, focus string) error {
	if err := a.s.Compact(ctx, focus); err != nil {
		return &failure{err: fmt.Errorf("compact: %w", err)}
	}
	return nil
}

// interactive is the prompt loop of a terminal that cannot redraw
// (printer.LinePrompt): each line is a run in the same session, or a
// slash command (lineCommands over cmds).
func (a *runAgent) interactive(ctx context.Context, ios iostreams, sigs <-chan os.Signal, cmds map[string]printer.LineCommand) error {
	intro := fmt.Sprintf("session: %s\nType a prompt, or /help for the commands; Ctrl-C aborts a run, Ctrl-C again, /quit or Ctrl-D exits.\n", a.path)
	err := printer.LinePrompt(ctx, ios.in, a.errw, sigs, intro, maxArgsInput, a.turn, cmds)
	if errors.Is(err, printer.ErrAborted) {
		return &failure{err: err}
	}
	return err
}

// retryNote says that a model request is tried again.
func retryNote(attempt int, why string) string {
	if why == "" {
		return fmt.Sprintf("retrying the model request (retry %d)", attempt)
	}
	return fmt.Sprintf("retrying the model request (retry %d): %s", attempt, why)
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// eventWriter shows a run's events (printer.Print, printer.JSON, the
// terminal UI).
type eventWriter interface {
	Emit(loop.Event)
	Finish()
}
