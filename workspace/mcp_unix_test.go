//go:build unix

package workspace

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pi-remote/pi-remote/agent"
	"github.com/pi-remote/pi-remote/loop"
)

// A hook that rewrites an MCP call's arguments without the server's own
// "host" leaves it out: that "host" is no host of the session's to keep.
func TestHookRewriteOfAnMCPCallKeepsNoHost(t *testing.T) {
	hs, err := OpenHosts(t.Context(), HostOptions{Cwd: t.TempDir(), Hosts: []string{"a=local", "b=local"}}, OneShot, nil, nil)
	require.NoError(t, err)
	t.Cleanup(hs.Close)
	hooks, err := agent.NewHooks(map[string][]agent.HookMatcher{"PreToolUse": {{Command: `echo '{"hookSpecificOutput":{"updatedInput":{"sql":"select 2"}}}'`}}})
	require.NoError(t, err)
	r := newHookRunner(hooks, hs)
	args := json.RawMessage(`{"host":"b","sql":"select 1"}`)
	res, err := r.before(t.Context(), loop.BeforeToolCallContext{Call: &loop.ToolCall{ID: "1", Name: "mcp__db__query", Arguments: args}, Args: args})
	require.NoError(t, err)
	assert.JSONEq(t, `{"sql":"select 2"}`, string(res.Args))
	res, err = r.before(t.Context(), loop.BeforeToolCallContext{Call: &loop.ToolCall{ID: "2", Name: "read", Arguments: args}, Args: args})
	require.NoError(t, err)
	assert.JSONEq(t, `{"host":"b","sql":"select 2"}`, string(res.Args), "a built-in tool keeps its host")
}
