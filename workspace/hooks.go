package workspace

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"sync"

	"github.com/pi-remote/pi-remote/agent"
	"github.com/pi-remote/pi-remote/loop"
)

// hookRunner runs the settings' hooks around the agent's tool calls: the
// loop's BeforeToolCall (PreToolUse) and AfterToolCall (PostToolUse).
// PreToolUse hooks run in the prepare stage before the permission gate
// (which is at Admit), so arguments a hook rewrites are what the policy
// decides on, and a hook's "allow" never lets a call past the policy.
// Safe for concurrent use.
type hookRunner struct {
	hooks *agent.Hooks
	hosts map[string]*Host // by name; the set never changes

	mu        sync.Mutex
	def       string // the default host's name
	sessionID string
	notice    func(string)
}

func newHookRunner(hooks *agent.Hooks, hosts Hosts) *hookRunner {
	r := &hookRunner{hooks: hooks, hosts: map[string]*Host{}, def: hosts[0].Name}
	for _, h := range hosts {
		r.hosts[h.Name] = h
	}
	return r
}

// SetSessionID gives hooks the session's id (their "session_id"); a front
// end calls it when it opens or switches the session file.
func (w *Workspace) SetSessionID(id string) {
	w.hooks.mu.Lock()
	defer w.hooks.mu.Unlock()
	w.hooks.sessionID = id
}

// SetNotice says where hooks' failures and messages for the user go (one
// line each, safe for a terminal): the front end's notices. Until it is
// set, they are only noted in the call's result.
func (w *Workspace) SetNotice(f func(string)) {
	w.hooks.mu.Lock()
	defer w.hooks.mu.Unlock()
	w.hooks.notice = f
}

func (r *hookRunner) setDefault(name string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.def = name
}

// before runs the PreToolUse hooks of a call.
func (r *hookRunner) before(ctx context.Context, c loop.BeforeToolCallContext) (*loop.BeforeToolCallResult, error) {
	if !r.hooks.Match("PreToolUse", c.Call.Name) {
		return nil, nil
	}
	o := r.hooks.PreToolUse(ctx, r.call(ctx, c.Call, c.Args))
	r.tell(o)
	res := &loop.BeforeToolCallResult{Block: o.Block, Reason: o.Reason, Note: note(o)}
	if o.Input != nil {
		// (An MCP tool's "host", if it has one, is the server's business.)
		res.Args = keepHost(o.Input, c.Args, len(r.hosts) > 1 && !mcpTool(c.Call.Name))
	}
	return res, nil
}

// after runs the PostToolUse hooks of a call, adding what they say to its
// result.
func (r *hookRunner) after(ctx context.Context, c loop.AfterToolCallContext) (*loop.AfterToolCallResult, error) {
	if !r.hooks.Match("PostToolUse", c.Call.Name) {
		return nil, nil
	}
	o := r.hooks.PostToolUse(ctx, r.call(ctx, c.Call, c.Args), c.Result)
	r.tell(o)
	n := note(o)
	if n == "" {
		return nil, nil
	}
	return &loop.AfterToolCallResult{Content: append(slices.Clip(c.Result.Content), &loop.Text{Text: n})}, nil
}

// mcpTool says whether a tool is an MCP server's: its arguments are the
// server's, none of them a host of the session's.
func mcpTool(name string) bool { return strings.HasPrefix(name, "mcp__") }

// call is a tool call as hooks are told of it: on the host its "host"
// argument names, else the default host (an MCP tool's: the default
// host, whatever its arguments say).
func (r *hookRunner) call(ctx context.Context, call *loop.ToolCall, args json.RawMessage) agent.HookCall {
	r.mu.Lock()
	host, id := r.def, r.sessionID
	r.mu.Unlock()
	var in struct {
		Host string `json:"host"`
	}
	if !mcpTool(call.Name) && json.Unmarshal(args, &in) == nil && in.Host != "" {
		host = in.Host
	}
	cwd := ""
	if h := r.hosts[host]; h != nil && h.Env != nil {
		cwd, _ = h.Env.Cwd(ctx) // "" for a host that cannot say
	}
	return agent.HookCall{SessionID: id, Host: host, Cwd: cwd, ToolUseID: call.ID, Tool: call.Name, Input: args}
}

// tell gives the user the hooks' failures and messages.
func (r *hookRunner) tell(o agent.HookOutcome) {
	r.mu.Lock()
	notice := r.notice
	r.mu.Unlock()
	if notice == nil {
		return
	}
	for _, m := range slices.Concat(o.Failures, o.Messages) {
		notice(m)
	}
}

// note is what the model reads of the hooks after a call's result: what
// they added for it, and which of them failed.
func note(o agent.HookOutcome) string {
	lines := slices.Clone(o.Context)
	for _, f := range o.Failures {
		lines = append(lines, "(Note: "+f+".)")
	}
	return strings.Join(lines, "\n")
}

// keepHost puts the call's "host" argument into arguments a hook rewrote
// without one: a hook written for one host (or for Claude Code) must not
// move a call to the default host by leaving the argument out.
func keepHost(updated, orig json.RawMessage, multi bool) json.RawMessage {
	if !multi {
		return updated
	}
	var was struct {
		Host *string `json:"host"`
	}
	var now map[string]json.RawMessage
	if json.Unmarshal(orig, &was) != nil || was.Host == nil || json.Unmarshal(updated, &now) != nil || now == nil {
		return updated // not an object: the tool's validation says so
	}
	if _, ok := now["host"]; ok {
		return updated
	}
	with := map[string]any{"host": *was.Host}
	for k, v := range now {
		with[k] = v
	}
	b, err := json.Marshal(with)
	if err != nil {
		return updated
	}
	return b
}
