package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"regexp"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/pi-remote/pi-remote/internal/termtext"
	"github.com/pi-remote/pi-remote/loop"
)

// Hooks are the settings' PreToolUse and PostToolUse hooks, ready to run.
// A hook is a local command, run with sh -c on the machine running
// pi-remote (never on a host), in pi-remote's own working directory and
// environment. It reads the call as JSON on stdin, with Claude Code's
// field names where the two overlap, so that existing hook scripts work:
//
//	{"session_id": "…", "cwd": "/home/alice/src", "hook_event_name": "PreToolUse",
//	 "tool_name": "bash", "tool_input": {"command": "rm -rf build"},
//	 "tool_use_id": "call_1", "host": "devbox"}
//
// cwd is the working directory on the call's host, host that host's name
// (always given; tool_input has a "host" argument when the session has
// several hosts), tool_name pi-remote's name of the tool (bash, write,
// edit, read, …). PostToolUse hooks also get "tool_response":
// {"content": "…the result's text…", "isError": false}.
//
// Its exit status decides:
//
//   - 0 lets the call through. Its stdout, when it is a JSON object, may
//     say more in Claude Code's shape: {"hookSpecificOutput":
//     {"permissionDecision": "deny", "permissionDecisionReason": "…",
//     "updatedInput": {…}, "additionalContext": "…"}}, or the older
//     {"decision": "block", "reason": "…"}. "deny", "block" and
//     {"continue": false, "stopReason": "…"} block the call with that
//     reason; updatedInput replaces the arguments (PreToolUse only);
//     additionalContext is added for the model; "systemMessage" is shown
//     to the user. "allow" and "ask" change nothing: whether a call may
//     run is the permission policy's to say (the host owner's modes and
//     rules), and a hook can only take away from it. Other stdout is
//     ignored.
//   - 2 blocks the call, its stderr the reason the model reads.
//   - any other status, a hook that cannot be run (sh's 126: not
//     executable, 127: not found), and one that runs past its timeout
//     (killed with its whole process group) are failures: told to the
//     user and noted in the result, and the call goes on.
//
// A call's hooks run one after another in the settings' order (the user's
// file, then the project's); each PreToolUse hook sees the arguments as
// the previous one left them, and the first that blocks ends the round.
// What a hook prints is read up to 1 MiB per stream, and what of it
// reaches a person or the model is stripped of terminal control
// sequences.
//
// Hooks are safe for concurrent use; a nil *Hooks has none.
type Hooks struct {
	byEvent map[string][]hook
}

// DefaultHookTimeout is how long a hook may run when its settings say
// nothing.
const DefaultHookTimeout = 60 * time.Second

// hookOutputCap is how much of a hook's stdout, and of its stderr, is
// kept; the rest is read and dropped.
const hookOutputCap = 1 << 20

// hookWaitDelay bounds the wait for a hook's output after it exited or
// was killed (a child it left in the background may hold the pipes).
const hookWaitDelay = 2 * time.Second

type hook struct {
	event   string
	match   *regexp.Regexp
	command string
	timeout time.Duration
}

// NewHooks readies the settings' hooks (Settings.Hooks); nil when there
// are none.
func NewHooks(settings map[string][]HookMatcher) (*Hooks, error) {
	if _, err := (Settings{Hooks: settings}).validatePolicy(); err != nil {
		return nil, err
	}
	h := &Hooks{byEvent: map[string][]hook{}}
	for event, ms := range settings {
		for _, m := range ms {
			re, err := hookPattern(m.Matcher)
			if err != nil {
				return nil, err
			}
			add := func(command string, seconds float64) {
				d := DefaultHookTimeout
				if seconds > 0 {
					d = time.Duration(seconds * float64(time.Second))
				}
				h.byEvent[event] = append(h.byEvent[event], hook{event: event, match: re, command: command, timeout: d})
			}
			if m.Command != "" {
				add(m.Command, m.Timeout)
			}
			for _, c := range m.Hooks {
				seconds := c.Timeout
				if seconds == 0 {
					seconds = m.Timeout
				}
				add(c.Command, seconds)
			}
		}
	}
	if len(h.byEvent) == 0 {
		return nil, nil
	}
	return h, nil
}

// Match says whether any hook of event is for tool.
func (h *Hooks) Match(event, tool string) bool {
	return len(h.matching(event, tool)) > 0
}

func (h *Hooks) matching(event, tool string) []hook {
	if h == nil {
		return nil
	}
	var out []hook
	for _, k := range h.byEvent[event] {
		if k.match.MatchString(tool) {
			out = append(out, k)
		}
	}
	return out
}

// HookCall is a tool call as its hooks are told of it.
type HookCall struct {
	SessionID string          // "" when the session has no file
	Host      string          // the name of the host the call acts on
	Cwd       string          // that host's working directory
	ToolUseID string          // the call's id
	Tool      string          // the tool's name: bash, write, …
	Input     json.RawMessage // the arguments
}

// HookOutcome is what the hooks of one call said. Every text in it is
// stripped of terminal control sequences.
type HookOutcome struct {
	// Block says a hook refused the call (PreToolUse) or objected to its
	// result (PostToolUse, whose call has run). Reason is what the model
	// reads of a refusal instead of a result; an objection is in Context.
	Block  bool
	Reason string
	// Input, when not nil, are the arguments as PreToolUse hooks rewrote
	// them (updatedInput); the tool validates them again.
	Input json.RawMessage
	// Context is what hooks added for the model (additionalContext).
	Context []string
	// Failures are the hooks that failed without blocking (bad exit
	// status, not runnable, timed out, unreadable JSON), one line each, for
	// the user and the record.
	Failures []string
	// Messages are what hooks asked to show the user (systemMessage).
	Messages []string
}

// PreToolUse runs c's PreToolUse hooks, in order, until one blocks.
func (h *Hooks) PreToolUse(ctx context.Context, c HookCall) HookOutcome {
	var out HookOutcome
	for _, k := range h.matching("PreToolUse", c.Tool) {
		v := k.judge(k.run(ctx, k.input(c, nil)))
		out.add(v)
		if v.block {
			out.Block, out.Reason = true, "Blocked by a PreToolUse hook: "+v.reason
			return out
		}
		if v.input != nil {
			c.Input, out.Input = v.input, v.input
		}
	}
	return out
}

// PostToolUse runs c's PostToolUse hooks, in order, with the call's
// result. A hook that blocks does not stop the others: the call has run,
// and each one's say is added to the result.
func (h *Hooks) PostToolUse(ctx context.Context, c HookCall, res loop.Result) HookOutcome {
	var out HookOutcome
	resp := &hookResponse{Content: res.Content.Text(), IsError: res.IsError}
	for _, k := range h.matching("PostToolUse", c.Tool) {
		v := k.judge(k.run(ctx, k.input(c, resp)))
		out.add(v)
		if v.block {
			out.Block = true
			out.Context = append(out.Context, "A PostToolUse hook objects: "+v.reason)
		}
	}
	return out
}

func (o *HookOutcome) add(v verdict) {
	if v.context != "" {
		o.Context = append(o.Context, v.context)
	}
	o.Failures = append(o.Failures, v.failures...)
	o.Messages = append(o.Messages, v.messages...)
}

// hookInput is what a hook reads on stdin.
type hookInput struct {
	SessionID     string          `json:"session_id"`
	Cwd           string          `json:"cwd"`
	HookEventName string          `json:"hook_event_name"`
	ToolName      string          `json:"tool_name"`
	ToolInput     json.RawMessage `json:"tool_input"`
	ToolUseID     string          `json:"tool_use_id,omitempty"`
	Host          string          `json:"host"`
	ToolResponse  *hookResponse   `json:"tool_response,omitempty"`
}

type hookResponse struct {
	Content string `json:"content"`
	IsError bool   `json:"isError"`
}

func (k hook) input(c HookCall, resp *hookResponse) hookInput {
	in := c.Input
	if len(in) == 0 {
		in = json.RawMessage("{}")
	}
	return hookInput{SessionID: c.SessionID, Cwd: c.Cwd, HookEventName: k.event, ToolName: c.Tool, ToolInput: in, ToolUseID: c.ToolUseID, Host: c.Host, ToolResponse: resp}
}

// hookOutput is what a hook may print on stdout, in Claude Code's shape.
type hookOutput struct {
	Continue      *bool  `json:"continue"`
	StopReason    string `json:"stopReason"`
	SystemMessage string `json:"systemMessage"`
	Decision      string `json:"decision"` // "block" (older form)
	Reason        string `json:"reason"`
	Specific      *struct {
		PermissionDecision       string          `json:"permissionDecision"`
		PermissionDecisionReason string          `json:"permissionDecisionReason"`
		UpdatedInput             json.RawMessage `json:"updatedInput"`
		AdditionalContext        string          `json:"additionalContext"`
	} `json:"hookSpecificOutput"`
}

// ran is how a hook's process ended.
type ran struct {
	stdout, stderr []byte
	cut            bool  // an output passed hookOutputCap
	code           int   // the exit status, when err is nil
	err            error // it did not exit by itself: not started, timed out, aborted, killed
}

// run runs the hook with in on its stdin, killing its process group at
// its timeout or when ctx ends.
func (k hook) run(ctx context.Context, in hookInput) ran {
	data, err := json.Marshal(in)
	if err != nil {
		return ran{err: err}
	}
	tctx, cancel := context.WithTimeout(ctx, k.timeout)
	defer cancel()
	cmd := exec.CommandContext(tctx, "sh", "-c", k.command)
	ownGroup(cmd)
	cmd.WaitDelay = hookWaitDelay
	cmd.Stdin = bytes.NewReader(append(data, '\n')) // one line: read works
	var stdout, stderr cappedBuffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err = cmd.Run()
	r := ran{stdout: stdout.b, stderr: stderr.b, cut: stdout.cut || stderr.cut}
	switch {
	case ctx.Err() != nil:
		r.err = errStopped
	case tctx.Err() != nil:
		r.err = fmt.Errorf("timed out after %s and was killed", k.timeout)
	case cmd.ProcessState == nil:
		r.err = err
	case cmd.ProcessState.Exited():
		r.code = cmd.ProcessState.ExitCode()
	default:
		r.err = fmt.Errorf("ended by %s", cmd.ProcessState)
	}
	return r
}

// errStopped is a hook killed because its call was stopped (ctx ended).
var errStopped = errors.New("stopped with its call")

// verdict is what one hook said.
type verdict struct {
	block    bool
	reason   string
	input    json.RawMessage
	context  string
	failures []string
	messages []string
}

// judge reads a hook's exit status and output.
func (k hook) judge(r ran) verdict {
	var v verdict
	name := fmt.Sprintf("%s hook %q", k.event, k.command)
	fail := func(format string, a ...any) verdict {
		v.failures = append(v.failures, termtext.String(name+" "+fmt.Sprintf(format, a...)))
		return v
	}
	switch {
	case r.err == errStopped:
		return v // the call is stopped too: nothing to say
	case r.err != nil:
		return fail("%v; the call went on", r.err)
	}
	if r.cut {
		v.failures = append(v.failures, termtext.String(name+" printed more than 1 MiB; the rest was dropped"))
	}
	switch r.code {
	case 0:
	case 2:
		v.block, v.reason = true, clean(r.stderr)
		if v.reason == "" {
			v.reason = "(" + termtext.String(name) + " gave no reason)"
		}
		return v
	case 126:
		return fail("could not be run: not executable (exit status 126)%s; the call went on", said(r.stderr))
	case 127:
		return fail("could not be run: command not found (exit status 127)%s; the call went on", said(r.stderr))
	default:
		return fail("failed with exit status %d%s; the call went on", r.code, said(r.stderr))
	}
	out := bytes.TrimSpace(r.stdout)
	if len(out) == 0 || out[0] != '{' {
		return v // plain text: not for anyone
	}
	var o hookOutput
	if err := json.Unmarshal(out, &o); err != nil {
		return fail("printed JSON that could not be read (%v); the call went on", err)
	}
	if o.SystemMessage != "" {
		v.messages = append(v.messages, termtext.String(o.SystemMessage))
	}
	reason := func(rs ...string) string {
		for _, r := range rs {
			if r = strings.TrimSpace(termtext.String(r)); r != "" {
				return r
			}
		}
		return "(" + termtext.String(name) + " gave no reason)"
	}
	if s := o.Specific; s != nil {
		v.context = strings.TrimSpace(termtext.String(s.AdditionalContext))
		if s.PermissionDecision == "deny" {
			v.block, v.reason = true, reason(s.PermissionDecisionReason, o.Reason)
			return v
		}
		if k.event == "PreToolUse" && len(s.UpdatedInput) > 0 && string(s.UpdatedInput) != "null" {
			v.input = s.UpdatedInput
		}
	}
	switch {
	case o.Decision == "block":
		v.block, v.reason = true, reason(o.Reason)
	case o.Continue != nil && !*o.Continue:
		v.block, v.reason = true, reason(o.StopReason, o.Reason)
	}
	return v
}

// clean is a hook's output as text for a person or the model.
func clean(b []byte) string {
	return strings.TrimSpace(termtext.String(string(b)))
}

// said is the start of what a hook wrote on stderr, for a failure's line.
func said(stderr []byte) string {
	s := clean(stderr)
	if s == "" {
		return ""
	}
	s, _, cut := strings.Cut(s, "\n")
	if len(s) > 300 {
		n := 300
		for !utf8.RuneStart(s[n]) {
			n--
		}
		s, cut = s[:n], true
	}
	if cut {
		s += " …"
	}
	return ": " + s
}

// cappedBuffer keeps the first hookOutputCap bytes written to it and
// drops the rest, so a hook never blocks on a full pipe.
type cappedBuffer struct {
	b   []byte
	cut bool
}

func (c *cappedBuffer) Write(p []byte) (int, error) {
	room := hookOutputCap - len(c.b)
	if len(p) > room {
		c.b = append(c.b, p[:max(room, 0)]...)
		c.cut = true
		return len(p), nil
	}
	c.b = append(c.b, p...)
	return len(p), nil
}
