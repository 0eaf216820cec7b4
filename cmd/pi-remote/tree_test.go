package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pi-remote/pi-remote/loop"
	"github.com/pi-remote/pi-remote/session"
)

// In a real terminal, /tree goes back to the first prompt: it comes back
// in the editor, edited and sent it starts a new branch from the
// session's start (the session file says so, and the model's context is
// that branch); Esc Esc then shows the two branches side by side, the
// last prompt selected.
func TestInteractiveTree(t *testing.T) {
	dir := t.TempDir()
	scriptDir, err := os.MkdirTemp("", "tree")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(scriptDir) })
	script := filepath.Join(scriptDir, "s.json")
	require.NoError(t, os.WriteFile(script, []byte(`{"turns":[{"text":"Answer one."},{"text":"Answer two."},{"text":"Answer three."}]}`), 0o644))
	file := filepath.Join(t.TempDir(), "s.jsonl")
	tm := startTerminal(t, 80, 24, []string{"HOME=" + t.TempDir(), "PI_REMOTE_MODEL="},
		"--cwd", dir, "run", "--model", "scripted/"+script, "--session", file)
	tm.WaitFor("scripted/")

	tm.Type("first prompt")
	tm.Keys("Enter")
	tm.WaitFor("Answer one.")
	tm.WaitGone("working —")
	tm.Type("second prompt")
	tm.Keys("Enter")
	tm.WaitFor("Answer two.")
	tm.WaitGone("working —")

	tm.Type("/tree")
	tm.Keys("Enter")
	tm.WaitFor("session tree")
	screen := tm.Screen()
	assert.Contains(t, screen, "  user: first prompt")
	assert.Contains(t, screen, "▸ ● assistant: Answer two.", "the branch's end marked and selected")
	tm.Type("first")
	tm.WaitFor("filter: first")
	tm.Keys("Enter")
	tm.WaitFor("/tree: back before user: first prompt")
	tm.WaitFor("the branch is empty")
	tm.WaitFor("› first prompt") // the prompt back in the editor
	tm.Type(", edited")
	tm.Keys("Enter")
	tm.WaitFor("Answer three.")
	tm.WaitGone("working —")

	_, branch, err := session.Branch(file)
	require.NoError(t, err)
	require.Len(t, branch, 2, "the new branch: the edited prompt and its answer")
	assert.Empty(t, branch[0].ParentID, "from the session's start")
	assert.Equal(t, "first prompt, edited", branch[0].Message.(*loop.UserMessage).Content.Text())
	_, all, _, err := session.Tree(file)
	require.NoError(t, err)
	assert.Len(t, all, 6, "the branch left stays in the file")

	tm.Keys("Escape")
	tm.Keys("Escape")
	tm.WaitFor("session tree")
	screen = tm.Screen()
	assert.Contains(t, screen, "├─ user: first prompt")
	assert.Contains(t, screen, "│  assistant: Answer two.")
	assert.Contains(t, screen, "▸   └─ user: first prompt, edited", "Esc Esc: the last prompt selected")
	assert.Contains(t, screen, "●    assistant: Answer three.")
	tm.Keys("Escape", "Escape") // (sent at once, read as one key: Alt+Esc)
	tm.WaitGone("session tree")
	assert.True(t, strings.Contains(tm.Screen(), "› "), "back at the editor")
	tm.Keys("C-d")
}

// After the branch's end was moved (/tree), --continue goes on from
// there, and sessions (its count), sessions --entries and export show the
// moved branch, not the one left.
func TestCommandsFollowTheMovedBranch(t *testing.T) {
	t.Setenv("HOME", t.TempDir())
	t.Chdir(t.TempDir())
	dir := t.TempDir()
	script := writeScript(t, `{"turns":[{"text":"ok"}]}`) // (each run starts it over)
	run := func(args ...string) {
		t.Helper()
		code, _, stderr := runCLI(t, "", append([]string{"run", "--cwd", dir, "--model", "scripted/" + script}, args...)...)
		require.Equal(t, 0, code, stderr)
	}
	run("first prompt")
	run("--continue", "second prompt")
	root, err := session.Root()
	require.NoError(t, err)
	all, err := session.List(root)
	require.NoError(t, err)
	require.Len(t, all, 1)
	path := all[0].Path
	_, entries, _, err := session.Tree(path)
	require.NoError(t, err)
	require.Len(t, entries, 4)
	f, _, err := session.Open(path)
	require.NoError(t, err)
	_, err = f.MoveLeaf(entries[1].ID) // after the first answer
	require.NoError(t, err)
	require.NoError(t, f.Close())

	run("--continue", "second prompt, put otherwise")
	code, out, stderr := runCLI(t, "", "sessions", "--json")
	require.Equal(t, 0, code, stderr)
	var listed struct {
		ID          string
		Messages    int
		FirstPrompt string
	}
	require.NoError(t, json.Unmarshal([]byte(out), &listed))
	assert.Equal(t, 4, listed.Messages, "the current branch's messages")
	assert.Equal(t, "first prompt", listed.FirstPrompt)

	code, out, stderr = runCLI(t, "", "sessions", "--entries", listed.ID[:8])
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, out, "second prompt, put otherwise")
	assert.NotContains(t, out, "second prompt\n")

	code, out, stderr = runCLI(t, "", "export", listed.ID[:8])
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, out, "second prompt, put otherwise")
	assert.NotContains(t, out, "second prompt\n")
}
