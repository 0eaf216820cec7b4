package tools_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pi-remote/pi-remote/env"
	"github.com/pi-remote/pi-remote/loop"
	"github.com/pi-remote/pi-remote/loop/looptest"
	"github.com/pi-remote/pi-remote/ops/local"
	"github.com/pi-remote/pi-remote/tools"
)

// Two hosts (two directories standing in for two machines, same relative
// paths): the host argument picks one, the first is the default, and edits
// of the same path on both in one parallel batch land on their own host.
func TestToolsForSeveralHosts(t *testing.T) {
	var hosts []tools.Host
	roots := map[string]string{}
	for _, name := range []string{"dev", "db"} {
		root := t.TempDir()
		roots[name] = root
		require.NoError(t, os.WriteFile(filepath.Join(root, "f.txt"), []byte("value = 0\n"), 0o644))
		e := env.New(local.New(), env.Options{Name: name, Cwd: root, Home: root})
		hosts = append(hosts, tools.Host{Name: name, Defs: tools.Definitions(e, tools.Options{})})
	}
	single, err := tools.ForHosts(hosts[:1])
	require.NoError(t, err)
	assert.NotContains(t, string(single[0].Parameters), `"host"`, "one host: no host argument")

	defs, err := tools.ForHosts(hosts)
	require.NoError(t, err)
	var schema struct {
		Properties map[string]struct {
			Enum []string `json:"enum"`
		} `json:"properties"`
	}
	require.NoError(t, json.Unmarshal(defs[0].Parameters, &schema))
	assert.Equal(t, []string{"dev", "db"}, schema.Properties["host"].Enum)

	call := func(args string) *loop.ToolResultMessage {
		return loop.ExecuteTool(t.Context(), loop.Config{Tools: tools.WrapAll(defs)}, &loop.ToolCall{ID: "1", Name: "read", Arguments: json.RawMessage(args)}, nil)
	}
	require.NoError(t, os.WriteFile(filepath.Join(roots["db"], "only-db.txt"), []byte("on db\n"), 0o644))
	assert.Equal(t, "on db\n", call(`{"path":"only-db.txt","host":"db"}`).Content.Text())
	assert.True(t, call(`{"path":"only-db.txt"}`).IsError, "the default host is the first")
	m := call(`{"path":"f.txt","host":"staging"}`)
	assert.True(t, m.IsError)
	assert.Contains(t, m.Content.Text(), "staging")

	var calls []looptest.Call
	for i, h := range []string{"dev", "db", "dev", "db"} {
		from, to := "value = 0", "value = "+h+"1"
		if i >= 2 {
			from, to = "value = "+h+"1", "value = "+h+"2"
		}
		calls = append(calls, looptest.Call{ID: h + string(rune('0'+i)), Name: "edit", Args: map[string]any{"host": h, "path": "f.txt", "edits": []map[string]string{{"oldText": from, "newText": to}}}})
	}
	model := looptest.New(looptest.ToolCalls(calls...), looptest.Text("done"))
	msgs, err := loop.Run(t.Context(), loop.Config{Model: model, Tools: tools.WrapAll(defs), MaxParallel: 8}, nil, []loop.Message{loop.NewUserText("go")}, nil)
	require.NoError(t, err)
	for _, m := range msgs {
		if tr, ok := m.(*loop.ToolResultMessage); ok {
			require.False(t, tr.IsError, tr.Content.Text())
		}
	}
	for name, root := range roots {
		b, err := os.ReadFile(filepath.Join(root, "f.txt"))
		require.NoError(t, err)
		assert.Equal(t, "value = "+name+"2\n", string(b), "host %s got its own two edits, in order", name)
	}
	assert.Equal(t, "[db] read f.txt", tools.RenderCall(defs[0], json.RawMessage(`{"path":"f.txt","host":"db"}`)))
}
