// Package acp serves pi-remote's agent to editors over the Agent Client
// Protocol (ACP v1: JSON-RPC on stdio; Zed, JetBrains IDEs, Neovim's
// CodeCompanion and others are clients). docs/acp.md is its reference.
//
// Each ACP session is an agent session over its own workspace (its own
// connection to the hosts, opened by Options.Open for the directory the
// editor names) and its own session file, so session/load finds it again.
// A prompt's events become session/update notifications (translator); a
// call that needs a person's decision becomes session/request_permission;
// session/cancel cancels the run as Esc does in the terminal UI, which
// kills the run's remote commands. The protocol's types and transport are
// github.com/coder/acp-go-sdk's; what the SDK leaves to its logger (a
// line that is not JSON) is answered here (filter).
//
// The host's files stay on the host: the server never calls the editor's
// fs/* or terminal/* methods.
package acp

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"

	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/pi-remote/pi-remote/agent"
	"github.com/pi-remote/pi-remote/agent/permission"
	"github.com/pi-remote/pi-remote/internal/termtext"
	"github.com/pi-remote/pi-remote/loop"
	"github.com/pi-remote/pi-remote/session"
	"github.com/pi-remote/pi-remote/workspace"
)

// Command is a slash command the editor offers (available_commands_update).
type Command struct {
	Name        string // without the slash
	Description string
	// Hint describes the text after the name ("" for none).
	Hint string
	// Expand turns that text into the prompt the model gets: how prompt
	// templates and skills plug in. The built-in /compact has none.
	Expand func(ctx context.Context, input string) (string, error)
}

// Options are what a server needs beside its streams.
type Options struct {
	// Open opens the workspace of a session the editor opened in
	// editorCwd (an absolute path on the editor's machine; see HostCwd).
	// The server closes it when the session's connection ends.
	Open func(ctx context.Context, editorCwd string) (*workspace.Workspace, error)
	// Model is the spec of the workspaces' model ("provider/id"), for the
	// model table.
	Model string
	// Models and Compaction are the agent sessions' model table and
	// compaction settings.
	Models     agent.Models
	Compaction agent.CompactionSettings
	// Commands are slash commands beside the built-in /compact (prompt
	// templates, skills).
	Commands []Command
	// Version is pi-remote's, for initialize's agentInfo.
	Version string
	// Log hears the connection's diagnostics (stderr).
	Log io.Writer
}

// InvalidParams makes err the answer to a request whose parameters are at
// fault (-32602), such as a session directory that cannot be used; Open's
// other errors answer -32603.
func InvalidParams(err error) error {
	return acpsdk.NewInvalidParams(map[string]any{"error": err.Error()})
}

// Serve answers the client's messages from in on out until in ends, then
// cancels the runs still going, waits for them, and closes every
// session's file and workspace.
func Serve(ctx context.Context, in io.Reader, out io.Writer, o Options) error {
	s := &server{o: o, base: context.WithoutCancel(ctx), sessions: map[string]*conversation{}, loading: map[string]bool{}}
	if s.o.Log == nil {
		s.o.Log = io.Discard
	}
	s.out = newOutbox(out, s.task)
	pr, pw := io.Pipe()
	s.conn = acpsdk.NewAgentSideConnection(s, s.out, pr)
	s.conn.SetLogger(slog.New(slog.NewTextHandler(s.o.Log, &slog.HandlerOptions{Level: slog.LevelWarn})))
	// The SDK's reader reads its logger unlocked: nothing reaches it
	// before the logger is set. The filter ends with in, or when pr is
	// closed below.
	go filter(in, pw, s.out, s.o.Log)
	<-s.conn.Done()
	pr.Close()
	// The input has ended: the runs are cancelled, and the requests read
	// before the end are answered before Serve returns (the process
	// exits then).
	s.closeAll()
	s.out.drain()
	s.tasks.Wait()
	return nil
}

type server struct {
	o    Options
	base context.Context // Serve's, never cancelled: the sessions' sends
	conn *acpsdk.AgentSideConnection
	out  *outbox

	tasks sync.WaitGroup // sends that wait for an answer to be out

	mu       sync.Mutex
	sessions map[string]*conversation
	loading  map[string]bool // session IDs being opened (session/load) or closed
	closed   bool
}

var _ acpsdk.Agent = (*server)(nil)
var _ acpsdk.AgentLoader = (*server)(nil)

// conversation is one ACP session.
type conversation struct {
	id    string
	ws    *workspace.Workspace
	file  *session.Session
	agent *agent.Session
	tr    *translator
	srv   *server

	advertised sync.Once // the slash commands were sent
	// commands are the session's slash commands beside /compact: the
	// server's (Options.Commands), then its workspace's prompt templates
	// and skills.
	commands []Command

	// floor is the default host's mode as the user's settings and
	// command line set it: the editor may choose it or a stricter one.
	floor permission.Mode

	mu      sync.Mutex
	cancel  context.CancelFunc // the running prompt's, nil when idle
	running chan struct{}      // closed when it ends
	ended   bool               // closed: no prompt begins
}

func (s *server) Initialize(ctx context.Context, p acpsdk.InitializeRequest) (acpsdk.InitializeResponse, error) {
	return acpsdk.InitializeResponse{
		ProtocolVersion: acpsdk.ProtocolVersionNumber,
		AgentCapabilities: acpsdk.AgentCapabilities{
			LoadSession: true,
			// session/close frees a session's connections to its hosts:
			// each session holds its own until then.
			SessionCapabilities: acpsdk.SessionCapabilities{Close: &acpsdk.SessionCloseCapabilities{}},
			// Text and the text of embedded resources reach the model;
			// images and audio are not taken from the editor.
			PromptCapabilities: acpsdk.PromptCapabilities{EmbeddedContext: true},
		},
		AgentInfo:   &acpsdk.Implementation{Name: "pi-remote", Title: acpsdk.Ptr("pi-remote"), Version: s.o.Version},
		AuthMethods: []acpsdk.AuthMethod{},
	}, nil
}

func (s *server) Authenticate(ctx context.Context, p acpsdk.AuthenticateRequest) (acpsdk.AuthenticateResponse, error) {
	// No method is offered: model keys come from the environment.
	return acpsdk.AuthenticateResponse{}, acpsdk.NewInvalidParams(map[string]any{"error": "pi-remote offers no authentication methods"})
}

func (s *server) NewSession(ctx context.Context, p acpsdk.NewSessionRequest) (acpsdk.NewSessionResponse, error) {
	c, err := s.open(ctx, p.Cwd, agent.Where{})
	if err != nil {
		return acpsdk.NewSessionResponse{}, err
	}
	// Once the client knows the session, it hears its commands (at the
	// latest before the first prompt's updates).
	s.out.after(c.id, c.advertise)
	return acpsdk.NewSessionResponse{SessionId: acpsdk.SessionId(c.id), Modes: c.modes()}, nil
}

// LoadSession continues one of pi-remote's own sessions, by its ID: its
// conversation is replayed as session/update notifications first.
func (s *server) LoadSession(ctx context.Context, p acpsdk.LoadSessionRequest) (acpsdk.LoadSessionResponse, error) {
	id := string(p.SessionId)
	if id == "" {
		return acpsdk.LoadSessionResponse{}, acpsdk.NewInvalidParams(map[string]any{"error": "sessionId is empty"})
	}
	// The ID is taken from now on: a second load while this one opens
	// would make two conversations append to one file.
	s.mu.Lock()
	_, taken := s.sessions[id]
	taken = taken || s.loading[id]
	if !taken {
		s.loading[id] = true
	}
	s.mu.Unlock()
	if taken {
		return acpsdk.LoadSessionResponse{}, acpsdk.NewInvalidParams(map[string]any{"error": fmt.Sprintf("session %s is open already", id)})
	}
	defer func() {
		s.mu.Lock()
		delete(s.loading, id)
		s.mu.Unlock()
	}()
	c, err := s.open(ctx, p.Cwd, agent.Where{Resume: id})
	if err != nil {
		return acpsdk.LoadSessionResponse{}, err
	}
	for _, u := range c.tr.replay(c.agent.Messages()) {
		c.send(u)
	}
	c.advertise()
	return acpsdk.LoadSessionResponse{Modes: c.modes()}, nil
}

// open makes a conversation in the editor's directory: a new session
// file, or the one where names.
func (s *server) open(ctx context.Context, editorCwd string, where agent.Where) (*conversation, error) {
	if s.o.Open == nil {
		return nil, errors.New("no workspace")
	}
	ws, err := s.o.Open(ctx, editorCwd)
	if err != nil {
		return nil, err
	}
	opened, err := agent.Open(ws.Where(where), s.o.Models)
	if err != nil {
		ws.Close()
		return nil, acpsdk.NewInvalidParams(map[string]any{"error": "session: " + err.Error()})
	}
	id := opened.File.Header().ID
	if where.Resume != "" && id != where.Resume {
		// A prefix found another session: load takes exact IDs only.
		opened.File.Close()
		ws.Close()
		return nil, acpsdk.NewInvalidParams(map[string]any{"error": fmt.Sprintf("no session %q", where.Resume)})
	}
	c := &conversation{id: id, ws: ws, file: opened.File, srv: s, tr: newTranslator(dirsOf(ws), quietOf(ws))}
	c.commands = commandsOf(s.o.Commands, ws)
	if ws.Gate != nil {
		c.floor = ws.Gate.Policy().HostMode(ws.DefaultHost())
	}
	ws.SetSessionID(id)
	if ws.Gate != nil {
		ws.Gate.SetAsker(c.ask)
	}
	c.agent = agent.New(agent.Options{
		Config:      ws.Config,
		Model:       s.o.Models.Lookup(s.o.Model),
		Compaction:  s.o.Compaction,
		File:        opened.File,
		Context:     opened.Context,
		PriorUsage:  opened.Prior,
		DefaultHost: ws.DefaultHost(),
		Emit:        c.emit,
		SaveError: func(err error) {
			fmt.Fprintf(s.o.Log, "pi-remote: session %s: %v (the run goes on unsaved)\n", opened.File.Path(), err)
		},
	})
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		c.close()
		return nil, errors.New("the connection is closing")
	}
	s.sessions[id] = c
	return c, nil
}

// quietOf says, for ws, that no call of tool on host can wait for
// approval.
func quietOf(ws *workspace.Workspace) func(host, tool string) bool {
	readOnly := map[string]bool{}
	for _, d := range ws.Defs {
		readOnly[d.Name] = d.ReadOnly
	}
	gate := ws.Gate
	return func(host, tool string) bool { return gate.Quiet(host, tool, readOnly[tool]) }
}

// dirsOf is where ws's hosts work.
func dirsOf(ws *workspace.Workspace) hostDirs {
	d := hostDirs{defaultHost: ws.DefaultHost(), cwd: map[string]string{}, local: map[string]bool{}}
	for i, h := range ws.Hosts {
		d.local[h.Name] = h.SSH == nil
		if i < len(ws.Infos) {
			d.cwd[h.Name] = ws.Infos[i].Cwd
		}
	}
	return d
}

// task runs fn in a goroutine Serve waits for, unless Serve is closing.
func (s *server) task(fn func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.closed {
		s.tasks.Go(fn)
	}
}

func (s *server) session(id acpsdk.SessionId) (*conversation, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.sessions[string(id)]
	if !ok {
		return nil, acpsdk.NewInvalidParams(map[string]any{"error": fmt.Sprintf("no session %q", id)})
	}
	return c, nil
}

// Prompt runs the agent on the prompt, streaming its updates, and answers
// when the run has ended.
func (s *server) Prompt(ctx context.Context, p acpsdk.PromptRequest) (acpsdk.PromptResponse, error) {
	c, err := s.session(p.SessionId)
	if err != nil {
		return acpsdk.PromptResponse{}, err
	}
	text := promptText(p.Prompt)
	if strings.TrimSpace(text) == "" {
		return acpsdk.PromptResponse{}, acpsdk.NewInvalidParams(map[string]any{"error": "the prompt has no text"})
	}
	c.advertise()
	// The run ends with the request: a client gone, or $/cancel_request.
	runCtx, done, err := c.begin(ctx)
	if errors.Is(err, errSessionClosed) {
		return acpsdk.PromptResponse{}, acpsdk.NewInvalidParams(map[string]any{"error": fmt.Sprintf("no session %q", p.SessionId)})
	}
	if err != nil {
		// Cancelled while the prompt before it ended.
		return acpsdk.PromptResponse{StopReason: acpsdk.StopReasonCancelled}, nil
	}
	defer done()
	reason, err := c.run(runCtx, text)
	for _, u := range c.tr.unfinished() {
		c.send(u)
	}
	return acpsdk.PromptResponse{StopReason: reason}, err
}

var errSessionClosed = errors.New("the session is closed")

// begin marks c as running a prompt until done is called. A prompt
// still running is cancelled first, and begin waits for its end: a newer
// prompt supersedes it, as the SDK has it (it cancels the older request's
// context before this is called, so refusing the newer one would lose
// both).
func (c *conversation) begin(ctx context.Context) (context.Context, func(), error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for c.cancel != nil && !c.ended {
		cancel, running := c.cancel, c.running
		c.mu.Unlock()
		cancel()
		select {
		case <-running:
		case <-ctx.Done():
		}
		c.mu.Lock()
		if ctx.Err() != nil {
			return nil, nil, ctx.Err()
		}
	}
	if c.ended {
		return nil, nil, errSessionClosed
	}
	runCtx, cancel := context.WithCancel(ctx)
	running := make(chan struct{})
	c.cancel, c.running = cancel, running
	return runCtx, func() {
		c.mu.Lock()
		c.cancel, c.running = nil, nil
		c.mu.Unlock()
		cancel()
		close(running)
	}, nil
}

// run is one prompt: a slash command, or a run of the agent.
func (c *conversation) run(ctx context.Context, text string) (acpsdk.StopReason, error) {
	if name, input, ok := slashCommand(text); ok {
		switch cmd, found := c.command(name); {
		case name == "compact":
			return c.compact(ctx, input)
		case found && cmd.Expand != nil:
			expanded, err := cmd.Expand(ctx, input)
			if err != nil {
				return "", acpsdk.NewInvalidParams(map[string]any{"error": fmt.Sprintf("/%s: %v", name, err)})
			}
			text = expanded
		case !found:
			// As in the terminal and rpc: a mistyped command is more
			// likely than words for the model.
			return "", acpsdk.NewInvalidParams(map[string]any{"error": fmt.Sprintf(
				"unknown command /%s: nothing was sent (the editor's command list has the prompt templates and skills; a prompt that begins with // is sent as it is)",
				termtext.String(name))})
		}
	}
	_, err := c.agent.Prompt(ctx, loop.NewUserText(text))
	last := loop.LastAssistant(c.agent.Messages())
	switch {
	case ctx.Err() != nil:
		return acpsdk.StopReasonCancelled, nil
	case errors.Is(err, loop.ErrTurnLimit):
		return acpsdk.StopReasonMaxTurnRequests, nil
	case err != nil:
		// The model failed (or the context did not fit): the editor
		// shows the error.
		return "", acpsdk.NewInternalError(map[string]any{"error": err.Error()})
	case last != nil && last.StopReason == loop.StopLength:
		return acpsdk.StopReasonMaxTokens, nil
	case last != nil && last.StopReason == loop.StopError:
		return "", acpsdk.NewInternalError(map[string]any{"error": last.ErrorMessage})
	}
	return acpsdk.StopReasonEndTurn, nil
}

// compact is /compact [focus]: the conversation summarized now.
func (c *conversation) compact(ctx context.Context, focus string) (acpsdk.StopReason, error) {
	before := c.agent.ContextTokens()
	err := c.agent.Compact(ctx, strings.TrimSpace(focus))
	switch {
	case ctx.Err() != nil:
		return acpsdk.StopReasonCancelled, nil
	case errors.Is(err, agent.ErrNothingToCompact):
		c.send(acpsdk.UpdateAgentMessageText("Nothing to compact yet."))
	case err != nil:
		c.send(acpsdk.UpdateAgentMessageText("Compacting failed: " + err.Error()))
	default:
		c.send(acpsdk.UpdateAgentMessageText(fmt.Sprintf("Compacted the conversation: %d → %d tokens.", before, c.agent.ContextTokens())))
	}
	return acpsdk.StopReasonEndTurn, nil
}

// slashCommand splits "/name input" (a prompt that starts with a slash).
func slashCommand(text string) (name, input string, ok bool) {
	t := strings.TrimSpace(text)
	if !strings.HasPrefix(t, "/") {
		return "", "", false
	}
	name, input, _ = strings.Cut(t[1:], " ")
	if name == "" || strings.ContainsAny(name, "/\n\t") {
		return "", "", false
	}
	return name, strings.TrimSpace(input), true
}

func (c *conversation) command(name string) (Command, bool) {
	for _, x := range c.commands {
		if x.Name == name {
			return x, true
		}
	}
	return Command{}, false
}

// commandsOf are extra, then ws's prompt templates (/NAME) and skills
// (/skill:NAME), each name once (the first wins; /compact is the
// server's own). Descriptions come from files a repository or a host may
// have written: their controls are shown as text. A name the editor could
// not show as it is, or type, is left out.
func commandsOf(extra []Command, ws *workspace.Workspace) []Command {
	seen := map[string]bool{"compact": true}
	var out []Command
	add := func(x Command) {
		if seen[x.Name] || x.Name == "" || termtext.String(x.Name) != x.Name || strings.ContainsAny(x.Name, " \t\n/") {
			return
		}
		seen[x.Name] = true
		out = append(out, x)
	}
	for _, x := range extra {
		add(x)
	}
	for _, wc := range ws.Commands() {
		hint := "arguments for the template (optional)"
		if wc.Skill {
			hint = "what to do with the skill (optional)"
		}
		name := wc.Name
		add(Command{
			Name: name, Description: termtext.String(wc.Description), Hint: hint,
			Expand: func(_ context.Context, input string) (string, error) {
				text, ok := ws.Expand(name, input)
				if !ok {
					return "", errors.New("the command is gone")
				}
				return text, nil
			},
		})
	}
	return out
}

// advertise sends the slash commands, once.
func (c *conversation) advertise() {
	c.advertised.Do(func() { c.send(c.commandsUpdate()) })
}

// commandsUpdate advertises the slash commands.
func (c *conversation) commandsUpdate() acpsdk.SessionUpdate {
	cmds := []acpsdk.AvailableCommand{{
		Name:        "compact",
		Description: "Summarize the older part of the conversation now, to free context",
		Input:       &acpsdk.AvailableCommandInput{Unstructured: &acpsdk.UnstructuredCommandInput{Hint: "what the summary should keep most (optional)"}},
	}}
	for _, x := range c.commands {
		ac := acpsdk.AvailableCommand{Name: x.Name, Description: x.Description}
		if x.Hint != "" {
			ac.Input = &acpsdk.AvailableCommandInput{Unstructured: &acpsdk.UnstructuredCommandInput{Hint: x.Hint}}
		}
		cmds = append(cmds, ac)
	}
	return acpsdk.SessionUpdate{AvailableCommandsUpdate: &acpsdk.SessionAvailableCommandsUpdate{AvailableCommands: cmds}}
}

// promptText is what the model reads of the editor's prompt: its text,
// the text of embedded resources (files the user attached, as the editor
// has them), and links named by URI.
func promptText(blocks []acpsdk.ContentBlock) string {
	var parts []string
	for _, b := range blocks {
		switch {
		case b.Text != nil:
			parts = append(parts, b.Text.Text)
		case b.ResourceLink != nil:
			parts = append(parts, "@"+b.ResourceLink.Uri)
		case b.Resource != nil && b.Resource.Resource.TextResourceContents != nil:
			r := b.Resource.Resource.TextResourceContents
			parts = append(parts, fmt.Sprintf("<context uri=%q>\n%s\n</context>", r.Uri, r.Text))
		}
	}
	return strings.Join(parts, "\n")
}

// Cancel stops the session's running prompt: its model request and its
// tool calls, remote commands killed (the terminal UI's Esc).
func (s *server) Cancel(ctx context.Context, p acpsdk.CancelNotification) error {
	c, err := s.session(p.SessionId)
	if err != nil {
		return err
	}
	c.mu.Lock()
	cancel := c.cancel
	c.mu.Unlock()
	if cancel != nil {
		cancel()
	}
	return nil
}

// The permission modes, as the editor's mode selector offers them.
var sessionModes = []acpsdk.SessionMode{
	{Id: acpsdk.SessionModeId(permission.Auto), Name: "Auto", Description: acpsdk.Ptr("Every call runs")},
	{Id: acpsdk.SessionModeId(permission.Ask), Name: "Ask", Description: acpsdk.Ptr("write, edit and bash wait for your approval; reads run")},
	{Id: acpsdk.SessionModeId(permission.ReadOnly), Name: "Read-only", Description: acpsdk.Ptr("write and edit are refused; bash runs only what your allow rules name")},
}

// modes are the session's modes: the permission mode of its default
// host, and the others it may take (those at least as strict as floor).
func (c *conversation) modes() *acpsdk.SessionModeState {
	if c.ws.Gate == nil {
		return nil
	}
	var available []acpsdk.SessionMode
	for _, m := range sessionModes {
		if strictness(permission.Mode(m.Id)) >= strictness(c.floor) {
			available = append(available, m)
		}
	}
	return &acpsdk.SessionModeState{
		AvailableModes: available,
		CurrentModeId:  acpsdk.SessionModeId(c.ws.Gate.Policy().HostMode(c.ws.DefaultHost())),
	}
}

// strictness orders the modes: auto, ask, read-only.
func strictness(m permission.Mode) int {
	switch m {
	case permission.ReadOnly:
		return 2
	case permission.Ask:
		return 1
	}
	return 0
}

// SetSessionMode makes the mode the default host's permission mode, as
// --host-permissions would: calls decided from now on follow it (the
// running prompt's too), and the system prompt tells it from the next
// prompt on. Rules stay as they are: a deny rule still refuses. A mode
// less strict than the one the user's settings or command line set for
// the host is refused: the editor (or whatever speaks for it) may
// tighten the user's policy, never loosen it.
func (s *server) SetSessionMode(ctx context.Context, p acpsdk.SetSessionModeRequest) (acpsdk.SetSessionModeResponse, error) {
	c, err := s.session(p.SessionId)
	if err != nil {
		return acpsdk.SetSessionModeResponse{}, err
	}
	m, err := permission.ParseMode(string(p.ModeId))
	if err != nil || c.ws.Gate == nil {
		return acpsdk.SetSessionModeResponse{}, acpsdk.NewInvalidParams(map[string]any{"error": fmt.Sprintf("no mode %q (modes: auto, ask, read-only)", p.ModeId)})
	}
	if strictness(m) < strictness(c.floor) {
		return acpsdk.SetSessionModeResponse{}, acpsdk.NewInvalidParams(map[string]any{"error": fmt.Sprintf(
			"mode %s is less strict than %s, which your settings or command line set for host %s: the editor may choose only %s or a stricter mode",
			m, c.floor, c.ws.DefaultHost(), c.floor)})
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.ws.Gate.SetHostMode(c.ws.DefaultHost(), m, "the editor")
	if err := c.ws.PermissionsChanged(); err != nil {
		return acpsdk.SetSessionModeResponse{}, err
	}
	c.agent.SetTools(c.ws.Config.Tools, c.ws.Config.SystemPrompt)
	return acpsdk.SetSessionModeResponse{}, nil
}

func (s *server) SetSessionConfigOption(ctx context.Context, p acpsdk.SetSessionConfigOptionRequest) (acpsdk.SetSessionConfigOptionResponse, error) {
	return acpsdk.SetSessionConfigOptionResponse{}, acpsdk.NewMethodNotFound(acpsdk.AgentMethodSessionSetConfigOption)
}

func (s *server) ListSessions(ctx context.Context, p acpsdk.ListSessionsRequest) (acpsdk.ListSessionsResponse, error) {
	return acpsdk.ListSessionsResponse{}, acpsdk.NewMethodNotFound(acpsdk.AgentMethodSessionList)
}

// CloseSession ends a session: its running prompt is cancelled, and once
// it has ended the session file and the connections to the hosts are
// closed. session/load opens it again.
func (s *server) CloseSession(ctx context.Context, p acpsdk.CloseSessionRequest) (acpsdk.CloseSessionResponse, error) {
	id := string(p.SessionId)
	s.mu.Lock()
	c, ok := s.sessions[id]
	if ok {
		// Taken until its file is closed: a session/load meanwhile
		// would append to it beside the run ending.
		delete(s.sessions, id)
		s.loading[id] = true
	}
	s.mu.Unlock()
	if !ok {
		return acpsdk.CloseSessionResponse{}, acpsdk.NewInvalidParams(map[string]any{"error": fmt.Sprintf("no session %q", id)})
	}
	c.end()
	s.mu.Lock()
	delete(s.loading, id)
	s.mu.Unlock()
	return acpsdk.CloseSessionResponse{}, nil
}

func (s *server) ResumeSession(ctx context.Context, p acpsdk.ResumeSessionRequest) (acpsdk.ResumeSessionResponse, error) {
	return acpsdk.ResumeSessionResponse{}, acpsdk.NewMethodNotFound(acpsdk.AgentMethodSessionResume)
}

// emit sends the updates of one event of the session's run.
func (c *conversation) emit(e loop.Event) {
	for _, u := range c.tr.event(e) {
		c.send(u)
	}
}

func (c *conversation) send(u acpsdk.SessionUpdate) {
	if err := c.srv.conn.SessionUpdate(c.srv.base, acpsdk.SessionNotification{SessionId: acpsdk.SessionId(c.id), Update: u}); err != nil {
		fmt.Fprintf(c.srv.o.Log, "pi-remote: session/update: %v\n", err)
	}
}

// Permission options, as the editor offers them.
const (
	optionOnce   = "allow_once"
	optionAlways = "allow_always"
	optionReject = "reject_once"
)

// ask is the gate's Asker: the call waits for the editor's
// session/request_permission answer (allow once, allow always in this
// session, reject), or for the run's end.
func (c *conversation) ask(ctx context.Context, r permission.Request) (permission.Answer, error) {
	// The call was announced (tool_call); a call the loop did not make
	// (none today) is named here.
	tc := acpsdk.ToolCallUpdate{ToolCallId: acpsdk.ToolCallId(r.CallID)}
	if r.CallID == "" {
		tc.ToolCallId, tc.Title = acpsdk.ToolCallId(r.ID), acpsdk.Ptr(termtext.String(r.Tool+": "+r.Reason))
	}
	resp, err := c.srv.conn.RequestPermission(ctx, acpsdk.RequestPermissionRequest{
		SessionId: acpsdk.SessionId(c.id),
		ToolCall:  tc,
		Options: []acpsdk.PermissionOption{
			{OptionId: optionOnce, Name: "Allow once", Kind: acpsdk.PermissionOptionKindAllowOnce},
			{OptionId: optionAlways, Name: "Allow always (this session)", Kind: acpsdk.PermissionOptionKindAllowAlways},
			{OptionId: optionReject, Name: "Reject", Kind: acpsdk.PermissionOptionKindRejectOnce},
		},
	})
	if err != nil {
		if ctx.Err() != nil {
			return permission.Answer{}, ctx.Err()
		}
		return permission.Answer{}, err
	}
	a, err := answer(resp.Outcome)
	if err == nil && a.Decision != permission.Deny && r.CallID != "" {
		// Allowed: the call runs now.
		c.send(acpsdk.UpdateToolCall(acpsdk.ToolCallId(r.CallID), acpsdk.WithUpdateStatus(acpsdk.ToolCallStatusInProgress)))
	}
	return a, err
}

// answer is the gate's reading of the editor's choice.
func answer(o acpsdk.RequestPermissionOutcome) (permission.Answer, error) {
	switch {
	case o.Cancelled != nil:
		return permission.Answer{}, context.Canceled
	case o.Selected == nil:
		return permission.Answer{}, errors.New("the editor chose no option")
	}
	switch o.Selected.OptionId {
	case optionOnce:
		return permission.Answer{Decision: permission.Once}, nil
	case optionAlways:
		return permission.Answer{Decision: permission.Session}, nil
	case optionReject:
		return permission.Answer{Decision: permission.Deny}, nil
	}
	return permission.Answer{}, fmt.Errorf("the editor chose an option pi-remote did not offer: %q", o.Selected.OptionId)
}

// closeAll cancels the runs still going, waits for their end and closes
// every session.
func (s *server) closeAll() {
	s.mu.Lock()
	s.closed = true
	sessions := s.sessions
	s.sessions = map[string]*conversation{}
	s.mu.Unlock()
	for _, c := range sessions {
		c.end()
	}
}

// end cancels c's running prompt, waits for its end, and closes c: no
// prompt begins after it.
func (c *conversation) end() {
	c.mu.Lock()
	c.ended = true
	cancel, running := c.cancel, c.running
	c.mu.Unlock()
	if cancel != nil {
		cancel()
		<-running
	}
	c.close()
}

func (c *conversation) close() {
	c.agent.Close()
	c.file.Close()
	c.ws.Close()
}
