package integration

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pi-remote/pi-remote/integration/sshd"
)

// The MCP SDK's own client starts `pi-remote mcp` against real sshd: it
// lists the seven tools with their schemas, calls each, gets bash output as
// progress, gets tool failures as isError results, and cancels a long bash
// (the remote process goes).
func TestMCPServer(t *testing.T) {
	t.Parallel()
	srv := sshd.Start(t, sshd.Options{})
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("alpha\nTODO beta\n"), 0o644))

	var progressMu sync.Mutex
	var progress []string
	client := mcp.NewClient(&mcp.Implementation{Name: "pi-remote-test", Version: "1"}, &mcp.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
			progressMu.Lock()
			progress = append(progress, req.Params.Message)
			progressMu.Unlock()
		},
	})
	args := append(srv.Flags(), "--cwd", dir, "mcp", "--tools", "read,bash,edit,write,grep,find,ls")
	cs, err := client.Connect(t.Context(), &mcp.CommandTransport{Command: exec.Command(binary, args...)}, nil)
	require.NoError(t, err)
	t.Cleanup(func() { cs.Close() })

	list, err := cs.ListTools(t.Context(), nil)
	require.NoError(t, err)
	var names []string
	for _, tl := range list.Tools {
		names = append(names, tl.Name)
		assert.NotNil(t, tl.InputSchema, tl.Name)
		assert.NotEmpty(t, tl.Description, tl.Name)
	}
	assert.ElementsMatch(t, []string{"read", "bash", "edit", "write", "grep", "find", "ls"}, names)

	call := func(name string, arguments map[string]any) *mcp.CallToolResult {
		t.Helper()
		res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: name, Arguments: arguments})
		require.NoError(t, err, "a tool call is never a protocol error")
		return res
	}
	text := mcpText
	assert.Equal(t, "alpha\nTODO beta\n", text(call("read", map[string]any{"path": "notes.txt"})))
	assert.False(t, call("write", map[string]any{"path": "out/new.txt", "content": "x\n"}).IsError)
	assert.False(t, call("edit", map[string]any{"path": "out/new.txt", "edits": []map[string]string{{"oldText": "x", "newText": "y"}}}).IsError)
	assert.Equal(t, "y\n", readFile(t, filepath.Join(dir, "out", "new.txt")))
	assert.Contains(t, text(call("grep", map[string]any{"pattern": "TODO"})), "notes.txt:2: TODO beta")
	assert.Contains(t, text(call("find", map[string]any{"pattern": "*.txt"})), "out/new.txt")
	assert.Contains(t, text(call("ls", map[string]any{})), "notes.txt")
	failed := call("read", map[string]any{"path": "missing.txt"})
	assert.True(t, failed.IsError)
	assert.Contains(t, text(failed), "not found")

	params := &mcp.CallToolParams{Name: "bash", Arguments: map[string]any{"command": "for i in 1 2 3; do echo tick $i; sleep 0.4; done"}}
	params.SetProgressToken("p1")
	res, err := cs.CallTool(t.Context(), params)
	require.NoError(t, err)
	assert.Equal(t, "tick 1\ntick 2\ntick 3\n", text(res))
	progressMu.Lock()
	assert.NotEmpty(t, progress, "bash output arrived as progress notifications")
	progressMu.Unlock()

	marker := fmt.Sprintf("300.%d", time.Now().UnixNano()%1000000007)
	t.Cleanup(func() { exec.Command("pkill", "-f", "sleep "+marker).Run() })
	ctx, cancel := context.WithCancel(t.Context())
	errc := make(chan error, 1)
	go func() {
		_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "bash", Arguments: map[string]any{"command": "sleep " + marker}})
		errc <- err
	}()
	require.Eventually(t, func() bool { return len(psMatching(t, "sleep "+marker)) > 0 }, 10*time.Second, 20*time.Millisecond)
	cancel()
	require.Error(t, <-errc)
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		assert.Empty(c, psMatching(t, "sleep "+marker), "cancellation killed the remote command")
	}, 10*time.Second, 100*time.Millisecond)
	assert.Equal(t, "still here\n", text(call("bash", map[string]any{"command": "echo still here"})))
}

// mcpText is the text of a tool result.
func mcpText(res *mcp.CallToolResult) string {
	var s string
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			s += tc.Text
		}
	}
	return s
}
