package rpc

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pi-remote/pi-remote/llm"
	"github.com/pi-remote/pi-remote/loop"
	"github.com/pi-remote/pi-remote/workspace"
)

// serve runs a server over a local workspace in dir on the commands and
// returns what it wrote, line by line.
func serve(t *testing.T, dir string, o Options, commands ...string) []map[string]any {
	t.Helper()
	hs, err := workspace.OpenHosts(t.Context(), workspace.HostOptions{Cwd: dir}, workspace.Session, nil, nil)
	require.NoError(t, err)
	w, err := workspace.Open(t.Context(), hs, workspace.Options{Active: []string{"read", "write"}, MaxTurns: 5})
	require.NoError(t, err)
	defer w.Close()
	if o.NewModel == nil {
		o.NewModel = func(spec string) (loop.Model, error) { return nil, errors.New("no models here") }
	}
	var out bytes.Buffer
	require.NoError(t, New(w, &out, o).Serve(t.Context(), strings.NewReader(strings.Join(commands, "\n")+"\n")))
	var lines []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		var m map[string]any
		require.NoError(t, json.Unmarshal([]byte(l), &m), l)
		lines = append(lines, m)
	}
	return lines
}

// answer is the response to the command with id.
func answer(t *testing.T, lines []map[string]any, id string) map[string]any {
	t.Helper()
	for _, l := range lines {
		if l["type"] == "response" && l["id"] == id {
			return l
		}
	}
	require.Failf(t, "no answer", "id %s in %v", id, lines)
	return nil
}

func TestCommandsAnswered(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "a.txt"), []byte("hello\n"), 0o644))
	lines := serve(t, dir, Options{},
		`{"id":"s","type":"get_state"}`,
		`{"id":"r","type":"tool","name":"read","args":{"path":"a.txt"}}`,
		`{"id":"p","type":"prompt","message":"hi"}`,
		`{"id":"m","type":"set_model","provider":"openai","model":"x"}`,
		`{"id":"x","type":"teleport"}`,
		`not json`,
	)
	state := answer(t, lines, "s")
	assert.Equal(t, true, state["success"])
	data := state["data"].(map[string]any)
	assert.Equal(t, []any{"local"}, data["hosts"])
	assert.Equal(t, []any{"read", "write"}, data["tools"])
	assert.Equal(t, false, data["running"])

	read := answer(t, lines, "r")["data"].(map[string]any)
	assert.Equal(t, false, read["isError"])
	assert.Equal(t, "hello\n", read["content"].([]any)[0].(map[string]any)["text"])

	assert.Equal(t, "no model: start with --model or send set_model first", answer(t, lines, "p")["error"])
	assert.Equal(t, "no models here", answer(t, lines, "m")["error"], "set_model says why the model cannot be made")
	assert.Equal(t, `unknown command "teleport"`, answer(t, lines, "x")["error"])
	var parse map[string]any
	for _, l := range lines {
		if l["command"] == "parse" {
			parse = l
		}
	}
	require.NotNil(t, parse, "a line that is no command is answered")
	assert.Contains(t, parse["error"], "malformed command")
}

// A prompt runs the agent: its events are written, and the session's
// messages are there for get_messages once it has ended (the end of the
// input waits for it).
func TestPromptRunsTheAgent(t *testing.T) {
	dir := t.TempDir()
	script := filepath.Join(t.TempDir(), "s.json")
	require.NoError(t, os.WriteFile(script, []byte(`{"turns":[{"text":"hi there"}]}`), 0o644))
	o := Options{NewModel: func(spec string) (loop.Model, error) { return llm.New(spec, llm.Options{}) }}
	lines := serve(t, dir, o,
		`{"id":"m","type":"set_model","provider":"scripted","model":"`+script+`"}`,
		`{"id":"p","type":"prompt","message":"hello"}`,
	)
	assert.Equal(t, true, answer(t, lines, "m")["success"])
	assert.Equal(t, true, answer(t, lines, "p")["success"])
	var types []string
	for _, l := range lines {
		types = append(types, l["type"].(string))
	}
	assert.Contains(t, types, "agent_start")
	assert.Contains(t, types, "agent_end")
}
