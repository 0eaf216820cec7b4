package integration

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pi-remote/pi-remote/loop"
	"github.com/pi-remote/pi-remote/mcpclient"
)

// mcpServerScript is the entry point of a reference MCP server installed
// by scripts/node-deps.sh under integration/node/mcp, run with node.
// Outside CI a missing node or package skips the test, saying how to get
// it; in CI it fails.
func mcpServerScript(t *testing.T, pkg string) (node, script string) {
	t.Helper()
	missing := func(what string) {
		if os.Getenv("CI") != "" {
			t.Fatalf("%s is missing (CI installs it: bash scripts/node-deps.sh)", what)
		}
		t.Skipf("%s is missing: run bash scripts/node-deps.sh (needs node and npm)", what)
	}
	node, err := exec.LookPath("node")
	if err != nil {
		missing("node")
	}
	script, err = filepath.Abs(filepath.Join("node", "mcp", "node_modules", "@modelcontextprotocol", pkg, "dist", "index.js"))
	require.NoError(t, err)
	if _, err := os.Stat(script); err != nil {
		missing("@modelcontextprotocol/" + pkg)
	}
	return node, script
}

// toolEnd is a tool_execution_end event of a JSON run.
type toolEnd struct {
	ToolName string      `json:"toolName"`
	Result   loop.Result `json:"result"`
	IsError  bool        `json:"isError"`
}

// A scripted model calls the tools of the reference servers, nobody
// here wrote them: results (text, an image), the server's own error
// (isError), our check of its schema, progress streamed as updates;
// a project's .mcp.json is not started while the project is untrusted.
func TestMCPClientReferenceServers(t *testing.T) {
	t.Parallel()
	node, everything := mcpServerScript(t, "server-everything")
	_, filesystem := mcpServerScript(t, "server-filesystem")
	home, project := t.TempDir(), t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(project, "notes.txt"), []byte("alpha\n"), 0o644))
	settings, err := json.Marshal(map[string]any{"mcpServers": map[string]any{
		"everything": map[string]any{"command": node, "args": []string{everything, "stdio"}},
		"fs":         map[string]any{"command": node, "args": []string{filesystem, project}},
	}})
	require.NoError(t, err)
	require.NoError(t, os.MkdirAll(filepath.Join(home, ".pi-remote"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(home, ".pi-remote", "settings.json"), settings, 0o644))
	marker := filepath.Join(t.TempDir(), "ran")
	require.NoError(t, os.WriteFile(filepath.Join(project, ".mcp.json"), []byte(`{"mcpServers":{"repo":{"command":"touch","args":["`+marker+`"]}}}`), 0o644))

	script := filepath.Join(t.TempDir(), "script.json")
	call := func(id, name, args string) string {
		return `{"id":"` + id + `","name":"` + name + `","arguments":` + args + `}`
	}
	require.NoError(t, os.WriteFile(script, []byte(`{"turns":[
		{"toolCalls":[`+strings.Join([]string{
		call("c1", "mcp__everything__echo", `{"message":"hi"}`),
		call("c2", "mcp__everything__get-tiny-image", `{}`),
		call("c3", "mcp__fs__list_directory", `{"path":"`+project+`"}`),
		call("c4", "mcp__fs__read_text_file", `{"path":"/etc/hostname"}`),
		call("c5", "mcp__everything__echo", `{}`),
	}, ",")+`]},
		{"toolCalls":[`+call("c6", "mcp__everything__trigger-long-running-operation", `{"duration":1.5,"steps":3}`)+`]},
		{"text":"done"}]}`), 0o644))

	cmd := exec.Command(binary, "run", "--model", "scripted/"+script, "--mode", "json", "go")
	cmd.Dir = project
	cmd.Env = append(os.Environ(), "HOME="+home, "PI_REMOTE_MODEL=")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, stderr.String())

	ends := map[string]toolEnd{}
	var updates []string
	for _, line := range strings.Split(string(out), "\n") {
		var ev struct {
			Type          string      `json:"type"`
			ToolCallID    string      `json:"toolCallId"`
			PartialResult loop.Result `json:"partialResult"`
		}
		if json.Unmarshal([]byte(line), &ev) != nil {
			continue
		}
		switch ev.Type {
		case "tool_execution_end":
			var e toolEnd
			require.NoError(t, json.Unmarshal([]byte(line), &e))
			ends[ev.ToolCallID] = e
		case "tool_execution_update":
			updates = append(updates, ev.PartialResult.Content.Text())
		}
	}
	require.Len(t, ends, 6, "%s\n%s", out, stderr.String())
	assert.Equal(t, "Echo: hi", ends["c1"].Result.Content.Text())
	assert.False(t, ends["c1"].IsError)
	var image *loop.Image
	for _, c := range ends["c2"].Result.Content {
		if i, ok := c.(*loop.Image); ok {
			image = i
		}
	}
	require.NotNil(t, image, "the image is image content: %+v", ends["c2"].Result)
	assert.Equal(t, "image/png", image.MimeType)
	assert.Contains(t, ends["c3"].Result.Content.Text(), "[FILE] notes.txt")
	assert.True(t, ends["c4"].IsError, "the server's own error is an error result")
	assert.Contains(t, ends["c4"].Result.Content.Text(), "outside allowed directories")
	assert.True(t, ends["c5"].IsError, "arguments are checked against the server's schema")
	assert.Contains(t, ends["c5"].Result.Content.Text(), "message")
	assert.Equal(t, "Long running operation completed. Duration: 1.5 seconds, Steps: 3.", ends["c6"].Result.Content.Text())
	// (The last notification may be handled after the result, and an
	// update after the result is dropped.)
	require.NotEmpty(t, updates, "progress arrives as tool_execution_update")
	assert.Equal(t, "progress 1/3", updates[0])
	assert.Contains(t, stderr.String(), "not starting the MCP servers in "+filepath.Join(project, ".mcp.json"))
	assert.NoFileExists(t, marker, "the untrusted project's server never ran")
}

// A reference server killed in the middle of a call: the call says so
// clearly, the next call starts the server again and says that its
// state is lost, and closing leaves no server process behind.
func TestMCPClientServerDiesMidCall(t *testing.T) {
	t.Parallel()
	node, everything := mcpServerScript(t, "server-everything")
	pidFile := filepath.Join(t.TempDir(), "pid")
	cfg := mcpclient.Config{Name: "everything", Command: "sh", Args: []string{"-c", `echo $$ > "$0"; exec "$1" "$2" stdio`, pidFile, node, everything}}
	m := mcpclient.Start(t.Context(), []mcpclient.Config{cfg}, mcpclient.Options{})
	t.Cleanup(m.Close)
	require.Empty(t, m.Failures())
	tools := map[string]mcpclient.Tool{}
	for _, tl := range m.Tools() {
		tools[tl.Def.Name] = tl
	}
	pid := func() int {
		b, err := os.ReadFile(pidFile)
		require.NoError(t, err)
		n, err := strconv.Atoi(strings.TrimSpace(string(b)))
		require.NoError(t, err)
		return n
	}
	first := pid()
	var once sync.Once
	progressed := make(chan struct{})
	long := tools["mcp__everything__trigger-long-running-operation"]
	require.NotNil(t, long.Def.Execute)
	done := make(chan loop.Result, 1)
	go func() {
		res, _ := long.Def.Execute(t.Context(), "c1", json.RawMessage(`{"duration":600,"steps":600}`), func(loop.Result) {
			once.Do(func() { close(progressed) })
		})
		done <- res
	}()
	select {
	case <-progressed:
	case <-time.After(60 * time.Second):
		t.Fatal("no progress from the server")
	}
	server, err := os.FindProcess(first)
	require.NoError(t, err)
	require.NoError(t, server.Kill())
	var res loop.Result
	select {
	case res = <-done:
	case <-time.After(60 * time.Second):
		t.Fatal("the call never ended after its server died")
	}
	assert.True(t, res.IsError)
	assert.Contains(t, res.Content.Text(), "MCP server everything stopped during the call")

	echo := tools["mcp__everything__echo"]
	res, err = echo.Def.Execute(t.Context(), "c2", json.RawMessage(`{"message":"again"}`), nil)
	require.NoError(t, err)
	require.False(t, res.IsError, res.Content.Text())
	assert.Contains(t, res.Content.Text(), "was started again before this call")
	assert.Contains(t, res.Content.Text(), "Echo: again")
	second := pid()
	assert.NotEqual(t, first, second)

	m.Close()
	require.Eventually(t, func() bool { return processGone(second) }, 30*time.Second, 20*time.Millisecond, "the server outlived Close")
}

// processGone says whether pid has ended (a zombie has).
func processGone(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || s[i+2] == 'Z' || s[i+2] == 'X'
}
