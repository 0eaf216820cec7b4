package rpc

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pi-remote/pi-remote/llm"
	"github.com/pi-remote/pi-remote/prompts"
	"github.com/pi-remote/pi-remote/workspace"
)

// /review ARGS and /skill:NAME ARGS send what they stand for; an unknown
// /NAME is refused and nothing reaches the model; a path is no command;
// get_commands lists the templates and skills.
func TestPromptTemplatesAndSkills(t *testing.T) {
	dir, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	skill := filepath.Join(dir, ".agents", "skills", "pdf", "SKILL.md")
	require.NoError(t, os.MkdirAll(filepath.Dir(skill), 0o755))
	require.NoError(t, os.WriteFile(skill, []byte("---\nname: pdf\ndescription: Fills PDF forms.\n---\nRun scripts/fill.py.\n"), 0o644))
	hs, err := workspace.OpenHosts(t.Context(), workspace.HostOptions{Cwd: dir}, workspace.Session, nil, nil)
	require.NoError(t, err)
	model := llm.NewScripted(llm.ScriptTurn{Text: "one"}, llm.ScriptTurn{Text: "two"}, llm.ScriptTurn{Text: "three"}, llm.ScriptTurn{Text: "four"})
	w, err := workspace.Open(t.Context(), hs, workspace.Options{Model: model, Active: []string{"read"}, MaxTurns: 5,
		Templates: []prompts.Template{{Name: "review", Description: "Review a file", Path: "/u/review.md", Body: "Review $1 for bugs."}}})
	require.NoError(t, err)
	defer w.Close()
	var out bytes.Buffer
	s := New(w, &out, Options{Model: "scripted/x"})
	// One prompt at a time: each waits for the one before to end.
	for _, line := range []string{
		`{"id":"c","type":"get_commands"}`,
		`{"id":"t","type":"prompt","message":"/review src/a.go"}`,
		`{"id":"k","type":"prompt","message":"/skill:pdf fill form.pdf"}`,
		`{"id":"u","type":"prompt","message":"/reveiw src/a.go"}`,
		`{"id":"us","type":"steer","message":"/skill:nope"}`,
		`{"id":"path","type":"prompt","message":"/etc/hosts is wrong"}`,
		`{"id":"slashes","type":"prompt","message":"//review as it is"}`,
	} {
		require.NoError(t, s.Serve(t.Context(), strings.NewReader(line+"\n")))
	}
	var lines []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		var m map[string]any
		require.NoError(t, json.Unmarshal([]byte(l), &m), l)
		lines = append(lines, m)
	}

	assert.Equal(t, []any{
		map[string]any{"name": "/review", "description": "Review a file", "source": "template", "path": "/u/review.md"},
		map[string]any{"name": "/skill:pdf", "description": "Fills PDF forms.", "source": "skill", "path": skill, "host": "local"},
	}, answer(t, lines, "c")["data"].(map[string]any)["commands"])
	for _, id := range []string{"t", "k", "path", "slashes"} {
		assert.Equal(t, true, answer(t, lines, id)["success"], id)
	}
	assert.Equal(t, "unknown command /reveiw: nothing was sent (get_commands lists the prompt templates and skills; a message that begins with // is sent as it is)", answer(t, lines, "u")["error"])
	assert.Contains(t, answer(t, lines, "us")["error"], "unknown command /skill:nope")

	var sent []string
	for _, m := range s.sess.Messages() {
		b, _ := json.Marshal(m)
		var v struct {
			Role    string
			Content []struct{ Text string }
		}
		require.NoError(t, json.Unmarshal(b, &v))
		if v.Role == "user" {
			sent = append(sent, v.Content[0].Text)
		}
	}
	assert.Equal(t, []string{
		"Review src/a.go for bugs.",
		"Use the skill \"pdf\" (" + skill + " on host \"local\"). Paths in it are relative to " + filepath.Dir(skill) + ".\n\nRun scripts/fill.py.\n\nfill form.pdf\n",
		"/etc/hosts is wrong",
		"//review as it is",
	}, sent)
}
