//go:build unix

package agent

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pi-remote/pi-remote/loop"
)

func preHooks(t *testing.T, ms ...HookMatcher) *Hooks {
	t.Helper()
	h, err := NewHooks(map[string][]HookMatcher{"PreToolUse": ms})
	require.NoError(t, err)
	return h
}

func bashCall(command string) HookCall {
	in, _ := json.Marshal(map[string]string{"command": command})
	return HookCall{SessionID: "s1", Host: "devbox", Cwd: "/src", ToolUseID: "call_1", Tool: "bash", Input: in}
}

// What a hook prints on stdout, in each of Claude Code's shapes, and its
// exit status decide the call.
func TestPreToolUseDecisions(t *testing.T) {
	for _, tc := range []struct {
		name, command string
		block         bool
		reason        string // the end of the reason, when blocked
		input         string // updatedInput
		context       []string
		failure       string // part of the one failure
		message       string
	}{
		{name: "exit 0, no output", command: "true"},
		{name: "plain stdout is ignored", command: "echo hello"},
		{name: "exit 2 blocks with stderr", command: "echo 'no rm here' >&2; exit 2", block: true, reason: "no rm here"},
		{name: "exit 2 without a reason", command: "exit 2", block: true, reason: "gave no reason)"},
		{name: "deny", command: `echo '{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"deny","permissionDecisionReason":"not on prod"}}'`, block: true, reason: "not on prod"},
		{name: "older block", command: `echo '{"decision":"block","reason":"use make"}'`, block: true, reason: "use make"},
		{name: "continue false", command: `echo '{"continue":false,"stopReason":"stop here"}'`, block: true, reason: "stop here"},
		{name: "allow lets the policy decide", command: `echo '{"hookSpecificOutput":{"permissionDecision":"allow","permissionDecisionReason":"fine"}}'`},
		{name: "ask lets the policy decide", command: `echo '{"hookSpecificOutput":{"permissionDecision":"ask"}}'`},
		{name: "updatedInput and context", command: `echo '{"hookSpecificOutput":{"updatedInput":{"command":"ls"},"additionalContext":"ran ls instead"}}'`, input: `{"command":"ls"}`, context: []string{"ran ls instead"}},
		{name: "systemMessage", command: `echo '{"systemMessage":"checked by the linter"}'`, message: "checked by the linter"},
		{name: "exit 1 is a failure, not a block", command: "echo oops >&2; exit 1", failure: `PreToolUse hook "echo oops >&2; exit 1" failed with exit status 1: oops; the call went on`},
		{name: "unreadable JSON", command: "echo '{nope'", failure: "printed JSON that could not be read"},
		{name: "not found", command: "/no/such/hook", failure: `PreToolUse hook "/no/such/hook" could not be run: command not found (exit status 127)`},
		{name: "control sequences are stripped", command: `printf 'bad\033]52;c;aGk=\007 thing' >&2; exit 2`, block: true, reason: "bad^[]52;c;aGk=^G thing"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := preHooks(t, HookMatcher{Matcher: "bash", Command: tc.command}).PreToolUse(t.Context(), bashCall("rm -rf /"))
			assert.Equal(t, tc.block, o.Block)
			if tc.block {
				assert.True(t, strings.HasPrefix(o.Reason, "Blocked by a PreToolUse hook: "), o.Reason)
				assert.True(t, strings.HasSuffix(o.Reason, tc.reason), "%q does not end with %q", o.Reason, tc.reason)
			}
			if tc.input == "" {
				assert.Nil(t, o.Input)
			} else {
				assert.JSONEq(t, tc.input, string(o.Input))
			}
			assert.Equal(t, tc.context, o.Context)
			if tc.failure == "" {
				assert.Empty(t, o.Failures)
			} else if assert.Len(t, o.Failures, 1) {
				assert.Contains(t, o.Failures[0], tc.failure)
			}
			if tc.message != "" {
				assert.Equal(t, []string{tc.message}, o.Messages)
			}
		})
	}
}

// A hook reads the call on stdin with Claude Code's field names; a second
// hook sees the arguments as the first rewrote them; the first to block
// ends the round.
func TestPreToolUseInputAndOrder(t *testing.T) {
	dir := t.TempDir()
	first, second := filepath.Join(dir, "first.json"), filepath.Join(dir, "second.json")
	h := preHooks(t,
		HookMatcher{Matcher: "*", Command: `cat > '` + first + `'; echo '{"hookSpecificOutput":{"updatedInput":{"command":"ls"}}}'`},
		HookMatcher{Hooks: []HookCommand{{Type: "command", Command: `cat > '` + second + `'; exit 2`}, {Command: "echo never >&2; exit 1"}}},
	)
	o := h.PreToolUse(t.Context(), bashCall("rm -rf /"))
	assert.True(t, o.Block)
	assert.Empty(t, o.Failures, "the hook after the block did not run")

	b, err := os.ReadFile(first)
	require.NoError(t, err)
	assert.JSONEq(t, `{"session_id":"s1","cwd":"/src","hook_event_name":"PreToolUse","tool_name":"bash","tool_input":{"command":"rm -rf /"},"tool_use_id":"call_1","host":"devbox"}`, string(b))
	b, err = os.ReadFile(second)
	require.NoError(t, err)
	var in struct {
		ToolInput json.RawMessage `json:"tool_input"`
	}
	require.NoError(t, json.Unmarshal(b, &in))
	assert.JSONEq(t, `{"command":"ls"}`, string(in.ToolInput))
}

// PostToolUse hooks get the result; what they add, and their objections,
// are for the model; each of them runs.
func TestPostToolUse(t *testing.T) {
	dir := t.TempDir()
	got := filepath.Join(dir, "post.json")
	h, err := NewHooks(map[string][]HookMatcher{"PostToolUse": {
		{Matcher: "Bash|write", Command: `cat > '` + got + `'; echo '{"hookSpecificOutput":{"hookEventName":"PostToolUse","additionalContext":"run the tests next"}}'`},
		{Command: `echo '{"decision":"block","reason":"the output mentions a password"}'`},
	}})
	require.NoError(t, err)
	o := h.PostToolUse(t.Context(), bashCall("cat notes"), loop.Result{Content: loop.ContentList{&loop.Text{Text: "password=hunter2"}}})
	assert.True(t, o.Block)
	assert.Equal(t, []string{"run the tests next", "A PostToolUse hook objects: the output mentions a password"}, o.Context)
	b, err := os.ReadFile(got)
	require.NoError(t, err)
	assert.JSONEq(t, `{"session_id":"s1","cwd":"/src","hook_event_name":"PostToolUse","tool_name":"bash","tool_input":{"command":"cat notes"},"tool_use_id":"call_1","host":"devbox","tool_response":{"content":"password=hunter2","isError":false}}`, string(b))
	assert.Nil(t, o.Input, "PostToolUse cannot rewrite the arguments")
}

// A matcher is a regular expression on the whole tool name, in any case;
// "" and "*" are every tool.
func TestHookMatcher(t *testing.T) {
	h := preHooks(t, HookMatcher{Matcher: "Bash|write", Command: "true"})
	assert.True(t, h.Match("PreToolUse", "bash"))
	assert.True(t, h.Match("PreToolUse", "write"))
	assert.False(t, h.Match("PreToolUse", "read"))
	assert.False(t, h.Match("PreToolUse", "bashful"), "anchored")
	assert.False(t, h.Match("PostToolUse", "bash"))
	for _, m := range []string{"", "*"} {
		assert.True(t, preHooks(t, HookMatcher{Matcher: m, Command: "true"}).Match("PreToolUse", "grep"), m)
	}
	var none *Hooks
	assert.False(t, none.Match("PreToolUse", "bash"))
	h, err := NewHooks(nil)
	require.NoError(t, err)
	assert.Nil(t, h)
	_, err = NewHooks(map[string][]HookMatcher{"Stop": {{Command: "true"}}})
	assert.Error(t, err)
}

// What a hook prints is kept up to 1 MiB; the hook is not blocked by a
// full pipe, and the cut is a failure the user hears of.
func TestHookOutputIsCapped(t *testing.T) {
	o := preHooks(t, HookMatcher{Command: "head -c 3000000 /dev/zero | tr '\\0' x >&2; exit 2"}).PreToolUse(t.Context(), bashCall("ls"))
	assert.True(t, o.Block)
	assert.LessOrEqual(t, len(o.Reason), hookOutputCap+100)
	if assert.Len(t, o.Failures, 1) {
		assert.Contains(t, o.Failures[0], "printed more than 1 MiB")
	}
}

// A hook whose call is stopped says nothing: the call ends anyway.
func TestHookStoppedWithItsCall(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	o := preHooks(t, HookMatcher{Command: "sleep 100"}).PreToolUse(ctx, bashCall("ls"))
	assert.False(t, o.Block)
	assert.Empty(t, o.Failures)
}
