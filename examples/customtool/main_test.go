package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pi-remote/pi-remote/llm"
	"github.com/pi-remote/pi-remote/ops/ssh/sshtest"
	"github.com/pi-remote/pi-remote/workspace"
)

// customtool runs the command in-process and returns its exit status and
// output.
func customtool(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errw bytes.Buffer
	code := run(t.Context(), args, &out, &errw)
	return code, out.String(), errw.String()
}

// script writes a scripted model's turns and returns its --model value.
func script(t *testing.T, turns ...llm.ScriptTurn) string {
	t.Helper()
	b, err := json.Marshal(map[string]any{"turns": turns})
	require.NoError(t, err)
	p := filepath.Join(t.TempDir(), "script.json")
	require.NoError(t, os.WriteFile(p, b, 0o644))
	return "scripted/" + p
}

func changelogCall(id, path, entry string) llm.ScriptToolCall {
	args, _ := json.Marshal(map[string]string{"path": path, "entry": entry})
	return llm.ScriptToolCall{ID: id, Name: "changelog", Arguments: args}
}

// The tool is one of the program's tools: listed with its snippet, and
// with the schema reflected from its input struct.
func TestToolsListsChangelog(t *testing.T) {
	dir := t.TempDir()
	code, out, errw := customtool(t, "tools", "--cwd", dir)
	require.Equal(t, 0, code, errw)
	assert.Contains(t, out, "changelog  Record a change in a changelog file\n")
	assert.Contains(t, out, "edit       Make precise replacements in files\n", "the built-in tools are there too")

	code, out, errw = customtool(t, "tools", "--json", "--cwd", dir)
	require.Equal(t, 0, code, errw)
	var list []struct {
		Name       string `json:"name"`
		ReadOnly   bool   `json:"readOnly"`
		Parameters struct {
			Properties map[string]any `json:"properties"`
			Required   []string       `json:"required"`
		} `json:"parameters"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &list))
	require.Len(t, list, 8)
	last := list[7]
	assert.Equal(t, "changelog", last.Name)
	assert.False(t, last.ReadOnly, "changelog changes files")
	assert.ElementsMatch(t, []string{"path", "entry"}, last.Parameters.Required)
	assert.Contains(t, last.Parameters.Properties, "entry")
}

// An agent run on this machine in which the model calls the tool many
// times in one batch, on one file under several spellings: the calls run
// in parallel, yet every entry lands, in call order, because each is
// queued on the file's canonical path for its whole read-modify-write.
// The print mode shows the calls with the tool's renderer.
func TestAgentAddsEntriesInCallOrder(t *testing.T) {
	dir, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	require.NoError(t, os.Mkdir(filepath.Join(dir, "docs"), 0o755))
	require.NoError(t, os.Symlink(dir, filepath.Join(dir, "docs", "up")))
	old := "# Changelog\n\n## 1.0.0\n\n- First release\n"
	require.NoError(t, os.WriteFile(filepath.Join(dir, "CHANGELOG.md"), []byte(old), 0o644))

	spellings := []string{"CHANGELOG.md", "./CHANGELOG.md", filepath.Join(dir, "CHANGELOG.md"), "docs/up/CHANGELOG.md", "docs/../CHANGELOG.md"}
	var calls []llm.ScriptToolCall
	var want []string
	for i := range 40 {
		entry := fmt.Sprintf("Change %02d", i)
		calls = append(calls, changelogCall(fmt.Sprint("c", i), spellings[i%len(spellings)], entry))
		want = append(want, "- "+entry)
	}
	model := script(t, llm.ScriptTurn{ToolCalls: calls}, llm.ScriptTurn{Text: "Recorded."})
	code, out, errw := customtool(t, "--cwd", dir, "--model", model, "record the changes")
	require.Equal(t, 0, code, errw)
	assert.Contains(t, out, "Recorded.")
	assert.Contains(t, errw, "changelog CHANGELOG.md: Change 00", "the tool's call renderer")
	assert.Contains(t, errw, "+ - Change 00", "the tool's result renderer")
	assert.NotContains(t, errw, "Could not update")

	got, err := os.ReadFile(filepath.Join(dir, "CHANGELOG.md"))
	require.NoError(t, err)
	wantFile := "# Changelog\n\n## Unreleased\n\n" + strings.Join(want, "\n") + "\n\n## 1.0.0\n\n- First release\n"
	assert.Equal(t, wantFile, string(got))
}

// The model's text reaches the terminal with its controls shown as text,
// through the tool's renderers too.
func TestRenderersShowControlsAsText(t *testing.T) {
	dir := t.TempDir()
	model := script(t, llm.ScriptTurn{ToolCalls: []llm.ScriptToolCall{changelogCall("c1", "CHANGELOG.md", "Clear \x1b[2J\x1b]0;title\a screen")}}, llm.ScriptTurn{Text: "ok"})
	code, _, errw := customtool(t, "--cwd", dir, "--model", model, "record it")
	require.Equal(t, 0, code, errw)
	assert.NotContains(t, errw, "\x1b[2J")
	assert.NotContains(t, errw, "\x1b]0;")
	assert.Contains(t, errw, "+ - Clear ^[[2J", "the result renderer's line, cleaned")
	got, err := os.ReadFile(filepath.Join(dir, "CHANGELOG.md"))
	require.NoError(t, err)
	assert.Contains(t, string(got), "- Clear \x1b[2J\x1b]0;title\a screen\n", "the file has the text as given")
}

// The tool acts on the selected host through env: here a host over SSH
// (an in-process server on loopback), where its reads and writes go
// through the connection, queued on the host's canonical path.
func TestOnAnSSHHost(t *testing.T) {
	srv := sshtest.Start(t, sshtest.Options{})
	cfg := srv.Config()
	dir, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	var calls []llm.ScriptToolCall
	var want []string
	for i := range 12 {
		entry := fmt.Sprintf("Remote change %02d", i)
		calls = append(calls, changelogCall(fmt.Sprint("c", i), []string{"CHANGELOG.md", filepath.Join(dir, "CHANGELOG.md"), "./x/../CHANGELOG.md"}[i%3], entry))
		want = append(want, "- "+entry)
	}
	var out, errw bytes.Buffer
	err = agentRun(t.Context(), options{
		hosts: workspace.HostOptions{
			Hosts:      []string{fmt.Sprintf("devbox=%s@%s:%d", cfg.User, cfg.HostName, cfg.Port)},
			Cwd:        dir,
			Identities: []string{srv.ClientKey},
			KnownHosts: srv.KnownHosts,
			SSHConfig:  "none",
		},
		model:  script(t, llm.ScriptTurn{ToolCalls: calls}, llm.ScriptTurn{Text: "Recorded remotely."}),
		active: []string{"changelog"},
		mode:   "auto",
		prompt: "record",
	}, &out, &errw)
	require.NoError(t, err, errw.String())
	assert.Contains(t, out.String(), "Recorded remotely.")
	got, err := os.ReadFile(filepath.Join(dir, "CHANGELOG.md"))
	require.NoError(t, err)
	assert.Equal(t, "## Unreleased\n\n"+strings.Join(want, "\n")+"\n", string(got))
	assert.Positive(t, srv.Sessions(), "the calls went through the SSH server")
}

// The permission gate applies to the program's tool as to edit: on a
// read-only host the tool, which does not say it only reads, is refused
// and the file is left alone; the model is told why.
func TestReadOnlyRefusesTheTool(t *testing.T) {
	dir := t.TempDir()
	model := script(t, llm.ScriptTurn{ToolCalls: []llm.ScriptToolCall{changelogCall("c1", "CHANGELOG.md", "Nope")}}, llm.ScriptTurn{Text: "Refused, then."})
	code, out, errw := customtool(t, "--cwd", dir, "--permissions", "read-only", "--model", model, "record it")
	require.Equal(t, 0, code, errw)
	assert.Contains(t, out, "Refused, then.")
	assert.Contains(t, errw, "host local is read-only: changelog is refused")
	_, err := os.Stat(filepath.Join(dir, "CHANGELOG.md"))
	assert.ErrorIs(t, err, os.ErrNotExist, "the refused call wrote nothing")
}

func TestUsage(t *testing.T) {
	code, _, errw := customtool(t, "--cwd", t.TempDir(), "no model")
	assert.Equal(t, 2, code)
	assert.Contains(t, errw, "give a prompt and --model")
	code, _, errw = customtool(t, "--cwd", t.TempDir(), "--tools", "read,changelog,nope", "--model", script(t, llm.ScriptTurn{Text: "x"}), "go")
	assert.Equal(t, 2, code)
	assert.Contains(t, errw, `unknown tool "nope"`)
}

func TestInsertEntry(t *testing.T) {
	for _, tc := range []struct {
		name, in, want string
		line           int
	}{
		{"a new file", "", "## Unreleased\n\n- x\n", 3},
		{"a file without the section", "# Changelog\n", "# Changelog\n\n## Unreleased\n\n- x\n", 5},
		{"before the first release", "# C\n\n## 1.0\n\n- b\n", "# C\n\n## Unreleased\n\n- x\n\n## 1.0\n\n- b\n", 5},
		{"after the section's entries", "## Unreleased\n\n- a\n\n## 1.0\n\n- b\n", "## Unreleased\n\n- a\n- x\n\n## 1.0\n\n- b\n", 4},
		{"an empty section", "# C\n\n## Unreleased\n## 1.0\n", "# C\n\n## Unreleased\n\n- x\n## 1.0\n", 5},
		{"the last section", "## Unreleased\n\n- a\n\n\n", "## Unreleased\n\n- a\n- x\n\n\n", 4},
		{"no final newline", "## Unreleased\n\n- a", "## Unreleased\n\n- a\n- x\n", 4},
	} {
		got, line := insertEntry(tc.in, "- x")
		assert.Equal(t, tc.want, got, tc.name)
		assert.Equal(t, tc.line, line, tc.name)
	}
}
