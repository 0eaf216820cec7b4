// Package workspace opens what an agent session works on, the same way
// for every front end (print, json, interactive, rpc, mcp, tool, check,
// jobs): the hosts and their connections (OpenHosts: which host is the
// default, what an unreachable one means), the tools over them (the
// built-in ones and a program's own, Options.Tools), the system prompt (hosts described, project context files from the default
// host, the skills of every host listed), the slash commands of prompt
// templates and skills (Commands, Expand), the permission gate and the settings' hooks around each call,
// and the session identity that names a host's session files;
// and what a front end asks of the hosts themselves: a report of each
// (Check) and the jobs left on them (Jobs, JobHost).
//
// Its failures are typed: a *UsageError for options that cannot be, a
// *ConnectionError for a host that cannot be reached; front ends branch
// on them with errors.As (cmd/pi-remote maps them to exit codes).
package workspace

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/pi-remote/pi-remote/agent"
	"github.com/pi-remote/pi-remote/agent/permission"
	"github.com/pi-remote/pi-remote/env"
	"github.com/pi-remote/pi-remote/loop"
	"github.com/pi-remote/pi-remote/mcpclient"
	"github.com/pi-remote/pi-remote/prompts"
	"github.com/pi-remote/pi-remote/skills"
	"github.com/pi-remote/pi-remote/tools"
)

// Options say how a workspace's agent works.
type Options struct {
	// Model may be nil: an rpc front end serves tool calls without one.
	Model  loop.Model
	Active []string // the names of the active tools
	// ToolExecution loop.Sequential runs every batch of tool calls one
	// call at a time ("": in parallel).
	ToolExecution loop.ExecutionMode
	// MaxTurns bounds the model turns of one run (0: the loop's default).
	MaxTurns int
	// Intro replaces the opening of the system prompt ("": the default).
	Intro string
	// Warn hears of context files left out of the system prompt.
	Warn io.Writer
	// Gate, when set, decides every tool call by the permission policy,
	// in call order before the call runs, a path tool's on the canonical
	// path its host resolves; the system prompt then tells each host's
	// mode.
	Gate *permission.Gate
	// Hooks are the settings' hooks by event (Settings.Hooks): PreToolUse
	// hooks run before each call, ahead of the gate, PostToolUse hooks
	// after it (agent.Hooks says how). The front end tells them the
	// session (SetSessionID) and where their notices go (SetNotice).
	Hooks map[string][]agent.HookMatcher
	// Tools, when set, adds a program's own tools to the built-in ones
	// (tools.Define makes one). It is called once for each host whenever
	// the workspace builds its tools (Open, SetDefault), with that host's
	// environment, on which the tools it returns must act; it returns the
	// same tools, in the same order, every time. Nothing else changes for
	// them:
	// the system prompt lists the active ones, front ends render them
	// with their renderers, the permission gate and the hooks decide
	// their calls, and with several hosts each takes the "host" argument.
	// A tool named like another is a *UsageError.
	Tools func(e *env.ExecutionEnv) []tools.Definition
	// UserSkills are the user's own skills of this machine
	// (~/.pi-remote/skills: skills.Load); each host's project skills
	// are found when it is described. Templates are the prompt
	// templates (prompts.Resolve). Both become Commands.
	UserSkills []skills.Skill
	Templates  []prompts.Template
	// MCP, when not nil, are MCP servers (StartMCP) whose tools join
	// every host's, behind the same gate and hooks. The workspace owns
	// it: Close stops the servers, as does a failed Open. Active may name
	// their tools, their servers (mcp__SERVER) and globs (mcp__*).
	MCP *mcpclient.Manager
}

// Workspace is the hosts of a session with their tools and the loop
// configuration built over them. Not safe for concurrent use: a front end
// changes it (SetDefault) between runs. (SetSessionID and SetNotice may be
// called at any time.)
type Workspace struct {
	Hosts Hosts // the first is the default host
	// Defs are every tool's definition, the built-in tools' first, then
	// Options.Tools'; with several hosts each takes the "host" argument.
	// ByName holds them by name, for a front end's renderers.
	Defs   []tools.Definition
	ByName map[string]tools.Definition
	Infos  []tools.HostInfo // in Hosts' order
	// Gate is the permission gate of every call (nil: none).
	Gate *permission.Gate
	// Config is the agent's loop configuration: model, tools, system
	// prompt, and the hooks around each tool call (BeforeToolCall and
	// AfterToolCall, when there are hooks).
	Config loop.Config
	// Skills are the session's skills, one of each name, by name (see
	// resolveSkills).
	Skills []skills.Skill

	templates  []prompts.Template
	userSkills []skills.Skill
	hostSkills map[string][]skills.Skill // by host name
	hidden     []skills.Hidden

	files []tools.ContextFile
	now   time.Time
	intro string
	hooks *hookRunner
	extra func(*env.ExecutionEnv) []tools.Definition // Options.Tools
	mcp   *mcpclient.Manager
	// mcpTools are the MCP servers' tools, behind the gate.
	mcpTools []tools.Definition
}

// Open builds the workspace over hosts (from OpenHosts), which it then
// owns: Close closes them, as does a failed Open. Every host is described
// in the system prompt; project context comes from the default (first)
// host's working directory.
func Open(ctx context.Context, hosts Hosts, o Options) (*Workspace, error) {
	w := &Workspace{Hosts: hosts, intro: o.Intro, Gate: o.Gate, extra: o.Tools, templates: o.Templates, userSkills: o.UserSkills, hostSkills: map[string][]skills.Skill{}, mcp: o.MCP}
	fail := func(err error) (*Workspace, error) {
		w.Close()
		return nil, err
	}
	defs, err := hosts.definitions(o.Gate, o.Tools)
	if err != nil {
		return fail(&UsageError{Err: err})
	}
	w.mcpTools = mcpDefinitions(o.MCP.Tools(), o.Gate)
	defs = append(defs, w.mcpTools...)
	o.Active = expandActive(o.Active, defs, o.Warn)
	hooks, err := agent.NewHooks(o.Hooks)
	if err != nil {
		return fail(&UsageError{Err: err})
	}
	w.hooks = newHookRunner(hooks, hosts)
	if _, err := tools.Select(defs, o.Active); err != nil {
		return fail(usageErrorf("--tools: %v", err))
	}
	for i, h := range hosts {
		if h.Down != nil {
			w.Infos = append(w.Infos, tools.HostInfo{Name: h.Name, Host: h.Where(), Unreachable: h.Down.Error(), Permissions: w.permissionNote(h.Name)})
			continue
		}
		info, f, err := tools.Describe(ctx, h.Env)
		if err != nil {
			return fail(HostError(err))
		}
		info.Permissions = w.permissionNote(h.Name)
		w.hostSkills[h.Name] = hostSkills(o.Warn, h.Name, info.SkillFiles)
		info.SkillFiles = nil // parsed: the bodies are kept once, in w.Skills
		w.Infos = append(w.Infos, info)
		if i == 0 {
			w.files = f
			tellSkipped(o.Warn, h.Name, f)
		}
	}
	w.Skills = w.resolveSkills()
	tellHidden(o.Warn, w.hidden)
	w.now = time.Now()
	w.Config = loop.Config{
		Model:         o.Model,
		Active:        o.Active,
		ToolExecution: o.ToolExecution,
		MaxTurns:      o.MaxTurns,
	}
	if hooks != nil {
		w.Config.BeforeToolCall, w.Config.AfterToolCall = w.hooks.before, w.hooks.after
	}
	if err := w.build(); err != nil {
		return fail(&UsageError{Err: err})
	}
	return w, nil
}

// permissionNote is what the system prompt says of host's permission
// mode: nothing when no host has a mode other than auto.
func (w *Workspace) permissionNote(host string) string {
	if w.Gate == nil {
		return ""
	}
	p := w.Gate.Policy()
	quiet := true
	for _, h := range w.Hosts {
		quiet = quiet && p.HostMode(h.Name) == permission.Auto
	}
	if quiet {
		return ""
	}
	return modeNote(p.HostMode(host))
}

// Close stops the MCP servers and closes the hosts.
func (w *Workspace) Close() {
	w.mcp.Close()
	w.Hosts.Close()
}

// Cwd is the default host's working directory.
func (w *Workspace) Cwd() string { return w.Infos[0].Cwd }

// DefaultHost is the default host's name.
func (w *Workspace) DefaultHost() string { return w.Hosts[0].Name }

// HostNames are the hosts' names, the default first.
func (w *Workspace) HostNames() []string {
	var names []string
	for _, h := range w.Hosts {
		names = append(names, h.Name)
	}
	return names
}

// Where is the session identity of the workspace put into s: its hosts
// ("user@host:port", or NAME=… for each of several) and the default
// host's working directory, which name the sessions' directory.
func (w *Workspace) Where(s agent.Where) agent.Where {
	s.Host, s.Cwd = w.Hosts.where(), w.Cwd()
	return s
}

func (hs Hosts) where() string {
	if len(hs) == 1 {
		return hs[0].Where()
	}
	var hosts []string
	for _, h := range hs {
		hosts = append(hosts, h.Name+"="+h.Where())
	}
	return strings.Join(hosts, ",")
}

// build makes the tools and the system prompt for w's hosts (new values,
// never changing ones a running prompt may use).
func (w *Workspace) build() error {
	defs, err := w.Hosts.definitions(w.Gate, w.extra)
	if err != nil {
		return err
	}
	defs = append(defs, w.mcpTools...)
	byName := map[string]tools.Definition{}
	for _, d := range defs {
		byName[d.Name] = d
	}
	infos, files, now, intro, listed := w.Infos, w.files, w.now, w.intro, promptSkills(w.Skills)
	w.Defs, w.ByName = defs, byName
	w.Config.Tools = tools.WrapAll(defs)
	w.Config.SystemPrompt = func(active []loop.Tool) string {
		var ds []tools.Definition
		for _, a := range active {
			ds = append(ds, byName[a.Name])
		}
		return tools.BuildSystemPrompt(tools.PromptParts{Intro: intro, Active: ds, Hosts: infos, ContextFiles: files, Skills: listed, Date: now})
	}
	return nil
}

// SetDefault makes host name the default: the one tool calls that name no
// host act on, first in the system prompt, whose project files (AGENTS.md)
// the prompt carries. w.Config then has the new tools and system prompt.
func (w *Workspace) SetDefault(ctx context.Context, name string) error {
	i := slices.IndexFunc(w.Hosts, func(h *Host) bool { return h.Name == name })
	if i < 0 {
		return fmt.Errorf("no host %q (hosts: %s)", name, strings.Join(w.HostNames(), ", "))
	}
	if i == 0 {
		return nil
	}
	h := w.Hosts[i]
	files := w.files
	if h.Down == nil {
		info, f, err := tools.Describe(ctx, h.Env)
		if err != nil {
			return fmt.Errorf("%s: %v", name, err)
		}
		files = f
		w.hostSkills[name] = hostSkills(nil, name, info.SkillFiles)
	}
	w.Hosts = append(Hosts{h}, slices.Delete(slices.Clone(w.Hosts), i, i+1)...)
	infos := slices.Clone(w.Infos)
	info := infos[i]
	w.Infos = append([]tools.HostInfo{info}, slices.Delete(infos, i, i+1)...)
	w.files = files
	w.hooks.setDefault(name)
	// The default host's skills come first now.
	w.Skills = w.resolveSkills()
	return w.build()
}

// PermissionsChanged tells the system prompt of the hosts' permission
// modes again, after the gate's changed (Gate.SetHostMode): w.Config then
// has the new tools and system prompt, for the next run.
func (w *Workspace) PermissionsChanged() error {
	infos := slices.Clone(w.Infos)
	for i := range infos {
		infos[i].Permissions = w.permissionNote(infos[i].Name)
	}
	w.Infos = infos
	return w.build()
}

// tellSkipped says which context files of host were left out of the
// system prompt, and why.
func tellSkipped(w io.Writer, host string, files []tools.ContextFile) {
	if w == nil {
		return
	}
	for _, f := range files {
		if f.Skipped != "" {
			fmt.Fprintf(w, "pi-remote: not using %s on host %q as instructions: %s\n", f.Path, host, f.Skipped)
		}
	}
}
