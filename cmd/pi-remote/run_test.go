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

func writeScript(t *testing.T, script string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "script.json")
	require.NoError(t, os.WriteFile(p, []byte(script), 0o644))
	return p
}

const writeThenAnswer = `{"turns":[
	{"text":"Writing it.","toolCalls":[{"id":"c1","name":"write","arguments":{"path":"notes/hello.txt","content":"hi\n"}}]},
	{"toolCalls":[{"id":"c2","name":"bash","arguments":{"command":"cat notes/hello.txt"}}]},
	{"text":"Done: notes/hello.txt says hi."}
]}`

func TestRunPrintMode(t *testing.T) {
	t.Setenv("HOME", t.TempDir()) // sessions go under $HOME
	dir := t.TempDir()
	script := writeScript(t, writeThenAnswer)
	code, out, stderr := runCLI(t, "", "run", "--cwd", dir, "--model", "scripted/"+script, "write a greeting")
	require.Equal(t, 0, code, stderr)
	assert.Equal(t, "Writing it.\nDone: notes/hello.txt says hi.\n", out, "the assistant's text on stdout")
	assert.Contains(t, stderr, "→ write notes/hello.txt")
	assert.Contains(t, stderr, "→ $ cat notes/hello.txt")
	assert.Contains(t, stderr, "  ✓ bash\n    hi\n", "result folded under its call")
	assert.NotContains(t, stderr, "\x1b[", "no escape codes when not on a terminal")
	b, err := os.ReadFile(filepath.Join(dir, "notes/hello.txt"))
	require.NoError(t, err)
	assert.Equal(t, "hi\n", string(b))
}

func TestRunJSONMode(t *testing.T) {
	t.Setenv("HOME", t.TempDir()) // sessions go under $HOME
	dir := t.TempDir()
	script := writeScript(t, writeThenAnswer)
	code, out, stderr := runCLI(t, "prompt from stdin", "run", "--cwd", dir, "--model", "scripted/"+script, "--mode", "json")
	require.Equal(t, 0, code, stderr)
	var types []string
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var ev map[string]any
		require.NoError(t, json.Unmarshal([]byte(line), &ev), "line %q", line)
		types = append(types, ev["type"].(string))
	}
	assert.Equal(t, "agent_start", types[0])
	assert.Equal(t, "agent_end", types[len(types)-1])
	for _, want := range []string{"turn_start", "message_start", "message_update", "message_end", "tool_execution_start", "tool_execution_end", "turn_end"} {
		assert.Contains(t, types, want)
	}
	assert.Contains(t, out, `"text":"prompt from stdin"`, "the prompt came from stdin")
}

func TestRunErrors(t *testing.T) {
	t.Setenv("HOME", t.TempDir()) // sessions go under $HOME
	t.Setenv("OPENAI_API_KEY", "")
	t.Setenv("ANTHROPIC_API_KEY", "")
	t.Setenv("PI_REMOTE_MODEL", "")
	dir := t.TempDir()
	for _, tc := range []struct {
		name string
		args []string
		code int
		want []string
	}{
		{"no model", []string{"run", "hi"}, 2, []string{"--model PROVIDER/ID"}},
		{"no key", []string{"run", "--model", "openai/gpt-4o-mini", "hi"}, 2, []string{"OPENAI_API_KEY", "--base-url"}},
		{"no anthropic key", []string{"run", "--model", "anthropic/claude-sonnet-4-5", "hi"}, 2, []string{"ANTHROPIC_API_KEY", "--base-url"}},
		{"bad provider", []string{"run", "--model", "nope/x", "hi"}, 2, []string{"unknown provider"}},
		{"bad script", []string{"run", "--model", "scripted/" + filepath.Join(dir, "missing.json"), "hi"}, 2, []string{"scripted model"}},
		{"bad tools", []string{"run", "--model", "scripted/" + writeScript(t, writeThenAnswer), "--tools", "read,teleport", "hi"}, 2, []string{"teleport"}},
		{"bad mode", []string{"run", "--model", "scripted/x", "--mode", "xml", "hi"}, 2, []string{"--mode"}},
		{"model error", []string{"run", "--cwd", dir, "--model", "scripted/" + writeScript(t, `{"turns":[{"error":"overloaded"}]}`), "hi"}, 1, []string{"overloaded"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, stderr := runCLI(t, "", tc.args...)
			assert.Equal(t, tc.code, code, stderr)
			for _, w := range tc.want {
				assert.Contains(t, stderr, w)
			}
		})
	}
}

// Sessions: every message lands in the file; --continue gives the next run
// the whole conversation and appends to the same file.
func TestRunSessions(t *testing.T) {
	t.Setenv("HOME", t.TempDir())
	dir := t.TempDir()
	script := writeScript(t, writeThenAnswer)
	code, _, stderr := runCLI(t, "", "run", "--cwd", dir, "--model", "scripted/"+script, "first")
	require.Equal(t, 0, code, stderr)
	path := strings.TrimSpace(stderr[strings.LastIndex(stderr, "session: ")+len("session: "):])
	lines := strings.Split(strings.TrimSpace(readFileT(t, path)), "\n")
	// header, user, then assistant and result twice (write, then bash), assistant
	assert.Len(t, lines, 7)

	second := writeScript(t, `{"turns":[{"text":"Continuing."}]}`)
	code, out, stderr := runCLI(t, "", "run", "--cwd", dir, "--model", "scripted/"+second, "--continue", "second")
	require.Equal(t, 0, code, stderr)
	assert.Equal(t, "Continuing.\n", out)
	assert.Contains(t, stderr, "session: "+path, "same file")
	lines = strings.Split(strings.TrimSpace(readFileT(t, path)), "\n")
	assert.Len(t, lines, 9, "the second run's prompt and answer appended")

	code, _, stderr = runCLI(t, "", "run", "--cwd", t.TempDir(), "--model", "scripted/"+second, "--continue", "x")
	assert.Equal(t, 2, code)
	assert.Contains(t, stderr, "no earlier session")
}

func readFileT(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	require.NoError(t, err)
	return string(b)
}

func TestSeveralHostsOnTheCommandLine(t *testing.T) {
	dir := t.TempDir()
	code, out, stderr := runCLI(t, "", "--cwd", dir, "--host", "a=local", "--host", "b=local", "check", "--json")
	require.Equal(t, 0, code, stderr)
	var reports []map[string]any
	require.NoError(t, json.Unmarshal([]byte(out), &reports))
	require.Len(t, reports, 2, "check reports every host")
	assert.Equal(t, "a", reports[0]["name"])
	assert.Equal(t, "b", reports[1]["name"])

	require.NoError(t, os.WriteFile(filepath.Join(dir, "x.txt"), []byte("x\n"), 0o644))
	code, out, _ = runCLI(t, "", "--cwd", dir, "--host", "a=local", "--host", "b=local", "tool", "read", `{"path":"x.txt","host":"b"}`)
	assert.Equal(t, 0, code)
	assert.Equal(t, "x\n", out)
	code, out, _ = runCLI(t, "", "--cwd", dir, "--host", "a=local", "--host", "b=local", "tool", "read", `{"path":"x.txt","host":"c"}`)
	assert.Equal(t, 1, code)
	assert.Contains(t, out, `unknown host "c"`)

	code, _, stderr = runCLI(t, "", "--cwd", dir, "--host", "a=local", "--host", "a=local", "tool", "ls")
	assert.Equal(t, 2, code)
	assert.Contains(t, stderr, "used twice")
}

// A context file another user could have written is named on stderr with
// the reason it was left out of the system prompt; the user's own is not.
func TestRunSaysWhichContextFilesItLeftOut(t *testing.T) {
	t.Setenv("HOME", t.TempDir())
	base, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	cwd := filepath.Join(base, "repo")
	require.NoError(t, os.MkdirAll(cwd, 0o755))
	for name, mode := range map[string]os.FileMode{"AGENTS.md": 0o666, "repo/AGENTS.md": 0o644} {
		p := filepath.Join(base, name)
		require.NoError(t, os.WriteFile(p, []byte("rules\n"), mode))
		require.NoError(t, os.Chmod(p, mode))
	}
	script := writeScript(t, `{"turns":[{"text":"ok"}]}`)
	code, _, stderr := runCLI(t, "", "run", "--cwd", cwd, "--model", "scripted/"+script, "go")
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, stderr, "pi-remote: not using "+filepath.Join(base, "AGENTS.md")+` on host "local" as instructions: other users may write to it`+"\n")
	assert.NotContains(t, stderr, filepath.Join(cwd, "AGENTS.md"))
}
