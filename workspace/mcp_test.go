package workspace

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pi-remote/pi-remote/agent/permission"
	"github.com/pi-remote/pi-remote/loop"
	"github.com/pi-remote/pi-remote/mcpclient"
	"github.com/pi-remote/pi-remote/tools"
)

// memServers are MCP servers in this process, one per config, each with
// a read-only-hinted tool "look" and a tool "change".
func memServers(t *testing.T, cfgs ...mcpclient.Config) *mcpclient.Manager {
	t.Helper()
	connect := func(context.Context, mcpclient.Config) (mcp.Transport, error) {
		s := mcp.NewServer(&mcp.Implementation{Name: "mem", Version: "1"}, nil)
		reply := func(text string) mcp.ToolHandler {
			return func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}}, nil
			}
		}
		obj := map[string]any{"type": "object"}
		s.AddTool(&mcp.Tool{Name: "look", InputSchema: obj, Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}}, reply("looked"))
		s.AddTool(&mcp.Tool{Name: "change", InputSchema: obj}, reply("changed"))
		ct, st := mcp.NewInMemoryTransports()
		go s.Run(t.Context(), st)
		return ct, nil
	}
	return mcpclient.Start(t.Context(), cfgs, mcpclient.Options{Connect: connect})
}

// MCP tools join the hosts' tools behind the gate: in ask mode with
// nobody to ask, a tool that may change things is refused, one a server
// of the user's marks read-only runs, and the same mark from a project's
// server is not taken.
func TestMCPToolsBehindTheGate(t *testing.T) {
	m := memServers(t, mcpclient.Config{Name: "mine", Command: "x"}, mcpclient.Config{Name: "repo", Command: "x", Project: true})
	hs, err := OpenHosts(t.Context(), HostOptions{Cwd: t.TempDir()}, OneShot, nil, nil)
	require.NoError(t, err)
	var warn bytes.Buffer
	w, err := Open(t.Context(), hs, Options{
		Gate: permission.NewGate(permission.Policy{Mode: permission.Ask}), MCP: m, Warn: &warn,
		Active: []string{"read", "mcp__mine", "mcp__repo__*", "mcp__gone__x"},
	})
	require.NoError(t, err)
	t.Cleanup(w.Close)
	assert.Equal(t, []string{"read", "mcp__mine__change", "mcp__mine__look", "mcp__repo__change", "mcp__repo__look"}, w.Config.Active)
	assert.Contains(t, warn.String(), "no MCP tool mcp__gone__x")
	call := func(name string) string {
		r := tools.Call(t.Context(), w.Config, name, json.RawMessage(`{}`), nil)
		return text(r)
	}
	assert.Equal(t, "looked", call("mcp__mine__look"))
	assert.Contains(t, call("mcp__mine__change"), "Permission needed: the session asks before mcp__mine__change")
	assert.Contains(t, call("mcp__repo__look"), "Permission needed", "a project's read-only hint is not taken")
	assert.Contains(t, w.Config.SystemPrompt(w.Config.Tools), "mcp__mine__look")

	st := w.MCPStatus()
	require.Len(t, st, 2)
	assert.Equal(t, mcpclient.Running, st[0].State)
	w.Close()
	assert.Equal(t, mcpclient.Stopped, w.MCPStatus()[0].State, "Close stops the servers")
}

// A server on a host that is not the session's says so; one on a host of
// the session is started there (a missing program is that host's
// complaint).
func TestMCPServerOnAnUnknownHost(t *testing.T) {
	hs, err := OpenHosts(t.Context(), HostOptions{Cwd: t.TempDir()}, OneShot, nil, nil)
	require.NoError(t, err)
	t.Cleanup(hs.Close)
	m := StartMCP(t.Context(), hs, []mcpclient.Config{{Name: "far", Command: "x", Host: "devbox"}, {Name: "near", Command: "pi-remote-no-such-program", Host: "local"}})
	t.Cleanup(m.Close)
	f := m.Failures()
	require.Len(t, f, 2)
	assert.Contains(t, f[0], `host "devbox" is not one of this session's hosts (local)`)
	assert.Contains(t, f[1], "MCP server near (host local) did not start")
	assert.Contains(t, f[1], "pi-remote-no-such-program")
}

// Hooks hear of an MCP call on the default host, whatever "host" the
// server's own arguments carry, and a hook's rewrite keeps no "host" of
// the session's.
func TestHooksTakeNoHostFromAnMCPCall(t *testing.T) {
	hs, err := OpenHosts(t.Context(), HostOptions{Cwd: t.TempDir(), Hosts: []string{"a=local", "b=local"}}, OneShot, nil, nil)
	require.NoError(t, err)
	t.Cleanup(hs.Close)
	r := newHookRunner(nil, hs)
	args := json.RawMessage(`{"host":"b","sql":"select 1"}`)
	assert.Equal(t, "a", r.call(t.Context(), &loop.ToolCall{ID: "1", Name: "mcp__db__query"}, args).Host)
	assert.Equal(t, "b", r.call(t.Context(), &loop.ToolCall{ID: "2", Name: "read"}, args).Host)
}
