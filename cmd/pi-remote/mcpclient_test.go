package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// selfServer is settings naming this test binary, as `pi-remote mcp`
// over dir, as the MCP server "self": pi-remote's own tools (read and
// ls, or those named), served to pi-remote as MCP tools.
func selfServer(t *testing.T, dir string, tools ...string) string {
	if tools == nil {
		tools = []string{"read", "ls"}
	}
	b, err := json.Marshal(map[string]any{"mcpServers": map[string]any{"self": map[string]any{
		"command": os.Args[0], "args": []string{"--cwd", dir, "mcp", "--tools", strings.Join(tools, ",")}, "env": map[string]string{asMain: "1"},
	}}})
	require.NoError(t, err)
	return string(b)
}

// check lists the servers with their state and tools; a project's
// .mcp.json is not started while the project is untrusted, and check says
// why.
func TestCheckListsMCPServers(t *testing.T) {
	home, project := t.TempDir(), t.TempDir()
	t.Setenv("HOME", home)
	t.Chdir(project)
	writeJSON(t, filepath.Join(home, ".pi-remote", "settings.json"), selfServer(t, project))
	marker := filepath.Join(t.TempDir(), "ran")
	writeJSON(t, filepath.Join(project, ".mcp.json"), `{"mcpServers": {"repo": {"command": "sh", "args": ["-c", "touch `+marker+`"]}}}`)

	code, out, stderr := runCLI(t, "", "check")
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, out, "MCP servers:\nself  running\n  stdio, this machine (pi-remote dev)\n")
	assert.Contains(t, out, "tools: mcp__self__ls, mcp__self__read")
	assert.Contains(t, out, "repo  not started: configured by the project "+project)
	assert.Contains(t, stderr, "not starting the MCP servers in "+filepath.Join(project, ".mcp.json")+" (repo)")
	assert.NoFileExists(t, marker, "an untrusted project's server never ran")

	code, out, stderr = runCLI(t, "", "check", "--json")
	require.Equal(t, 0, code, stderr)
	var report struct {
		MCPServers []struct{ Name, State string } `json:"mcpServers"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &report))
	require.Len(t, report.MCPServers, 2)
	assert.Equal(t, "self", report.MCPServers[0].Name)
	assert.Equal(t, "running", report.MCPServers[0].State)

	// Trusted, the project's server starts (here: exits at once, a
	// failure told once).
	code, out, stderr = runCLI(t, "", "--trust-project", "check")
	require.Equal(t, 0, code, stderr)
	assert.FileExists(t, marker)
	assert.Contains(t, out, "repo  failed: ")
}

// A run gets the MCP tools by default; --tools picks among them.
func TestRunCallsAnMCPTool(t *testing.T) {
	home, project := t.TempDir(), t.TempDir()
	t.Setenv("HOME", home)
	t.Chdir(project)
	require.NoError(t, os.WriteFile(filepath.Join(project, "notes.txt"), []byte("from the MCP side\n"), 0o644))
	writeJSON(t, filepath.Join(home, ".pi-remote", "settings.json"), selfServer(t, project))
	script := writeScript(t, `{"turns":[
		{"toolCalls":[{"id":"c1","name":"mcp__self__read","arguments":{"path":"notes.txt"}}]},
		{"text":"done"}]}`)
	code, out, stderr := runCLI(t, "", "run", "--model", "scripted/"+script, "--mode", "json", "go")
	require.Equal(t, 0, code, stderr)
	var end struct {
		Result struct {
			Content []struct{ Text string }
		}
		IsError bool
	}
	for _, line := range strings.Split(out, "\n") {
		if strings.Contains(line, `"type":"tool_execution_end"`) {
			require.NoError(t, json.Unmarshal([]byte(line), &end))
		}
	}
	require.NotEmpty(t, end.Result.Content, out)
	assert.False(t, end.IsError)
	assert.Equal(t, "from the MCP side\n", end.Result.Content[0].Text)

	// Named tools only: the MCP tool is not among them.
	code, out, _ = runCLI(t, "", "run", "--model", "scripted/"+script, "--mode", "json", "--tools", "read", "go")
	require.Equal(t, 0, code)
	assert.Contains(t, out, `Tool \"mcp__self__read\" not found`)
	// ... unless named, by server.
	code, out, stderr = runCLI(t, "", "run", "--model", "scripted/"+script, "--mode", "json", "--tools", "read,mcp__self", "go")
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, out, "from the MCP side")
}

// An MCP tool's progress streams into its box in the terminal UI while
// it runs, as bash output does: here pi-remote's own MCP server (this
// binary as `pi-remote mcp`), whose bash sends its output as progress.
func TestInteractiveMCPProgress(t *testing.T) {
	home, dir := t.TempDir(), t.TempDir()
	writeJSON(t, filepath.Join(home, ".pi-remote", "settings.json"), selfServer(t, dir, "bash"))
	gate := filepath.Join(dir, "gate")
	scriptDir, err := os.MkdirTemp("", "mcp")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(scriptDir) })
	script := filepath.Join(scriptDir, "s.json")
	// (The output's words are not in the command, which the box shows too.)
	command := `printf 'first-%s\n' tick; while [ ! -f ` + gate + ` ]; do sleep 0.05; done; printf 'second-%s\n' tick`
	b, err := json.Marshal(map[string]any{"turns": []any{
		map[string]any{"toolCalls": []any{map[string]any{"id": "c1", "name": "mcp__self__bash", "arguments": map[string]string{"command": command}}}},
		map[string]any{"text": "All ticked."},
	}})
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(script, b, 0o644))
	tm := startTerminal(t, 120, 30, []string{"HOME=" + home, "PI_REMOTE_MODEL="}, "--cwd", dir, "run", "--model", "scripted/"+script)
	tm.WaitFor("scripted/")
	tm.Type("tick")
	tm.Keys("Enter")
	tm.WaitFor("progress 1: first-tick")
	screen := tm.Screen()
	assert.Contains(t, screen, "mcp__self__bash")
	assert.Contains(t, screen, "working —", "the call still runs while its progress shows")
	require.NoError(t, os.WriteFile(gate, nil, 0o644))
	tm.WaitFor("All ticked.")
	assert.Contains(t, tm.Scrollback(), "second-tick")
}
