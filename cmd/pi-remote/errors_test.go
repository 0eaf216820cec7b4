package main

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pi-remote/pi-remote/agent"
	"github.com/pi-remote/pi-remote/llm"
	"github.com/pi-remote/pi-remote/loop"
	"github.com/pi-remote/pi-remote/printer"
	"github.com/pi-remote/pi-remote/session"
	"github.com/pi-remote/pi-remote/tui"
)

// A model's failure (a refused key, a server that is not there) is told
// once in print mode, and the run exits 1.
func TestModelErrorToldOnce(t *testing.T) {
	refusing := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		fmt.Fprint(w, `{"error":{"message":"Incorrect API key provided","type":"invalid_request_error","code":"invalid_api_key"}}`)
	}))
	t.Cleanup(refusing.Close)
	gone := httptest.NewServer(http.NotFoundHandler())
	gone.Close()
	for name, tc := range map[string]struct{ url, says string }{
		"401":                {refusing.URL, "Incorrect API key provided"},
		"connection refused": {gone.URL, "connection refused"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Setenv("HOME", t.TempDir())
			t.Setenv("PI_REMOTE_MODEL", "")
			t.Setenv("OPENAI_API_KEY", "sk-wrong")
			t.Chdir(t.TempDir())
			code, _, errOut := runCLI(t, "", "run", "--model", "openai/gpt-4o-mini", "--base-url", tc.url+"/v1", "hi")
			assert.Equal(t, exitFailed, code, errOut)
			var told []string
			for l := range strings.Lines(errOut) {
				if strings.Contains(l, tc.says) && !strings.Contains(l, "retrying") {
					told = append(told, l)
				}
			}
			assert.Len(t, told, 1, errOut)
		})
	}
}

// With TERM=dumb, slash commands are the prompt's: /session is answered
// by pi-remote, an unknown one is told, /quit leaves, and none of them
// (nor what follows /quit) reaches the model.
func TestLinePromptSlashCommands(t *testing.T) {
	dir := t.TempDir()
	model := llm.NewScripted(llm.ScriptTurn{Text: "Only answer."})
	sess, err := session.Create(filepath.Join(dir, "s.jsonl"), session.Header{Host: "local", Cwd: dir})
	require.NoError(t, err)
	defer sess.Close()
	var stdout, stderr syncBuffer
	out := printer.New(&stdout, &stderr, nil, false, false)
	a := &runAgent{out: out, errw: &stderr, path: sess.Path()}
	a.s = agent.New(agent.Options{Config: loop.Config{Model: model}, Model: agent.ModelInfo{Window: agent.DefaultWindow}, File: sess, Emit: out.Emit})
	c := tui.Commands{Session: func() string { return "session " + sess.Path() + " (the details)" }}

	in := strings.NewReader("/session\n/sesion\n/help\nhello\n/quit\nafter quit\n")
	err = a.interactive(t.Context(), iostreams{in: in, out: &stdout, err: &stderr}, make(chan os.Signal), lineCommands(a, c, &runOptions{}))
	require.NoError(t, err)

	got := stderr.String()
	assert.Contains(t, got, "session "+sess.Path()+" (the details)")
	assert.Contains(t, got, "unknown command /sesion (/help lists them)")
	assert.Contains(t, got, "/compact [focus]")
	assert.Equal(t, "Only answer.\n", stdout.String())
	_, entries, err := session.Branch(sess.Path())
	require.NoError(t, err)
	var prompts []string
	for _, e := range entries {
		if u, ok := e.Message.(*loop.UserMessage); ok {
			prompts = append(prompts, u.Content.Text())
		}
	}
	assert.Equal(t, []string{"hello"}, prompts, "only the prompt reached the model")
}

// Ctrl+C twice mid-run quits: the run is aborted, what it did is saved
// (its command's result included), and nothing alarming is said.
func TestQuitMidRunSavesQuietly(t *testing.T) {
	dir := t.TempDir()
	marker := fmt.Sprintf("301.%d", time.Now().UnixNano()%1000000007)
	scriptDir, err := os.MkdirTemp("", "quit")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(scriptDir) })
	script := filepath.Join(scriptDir, "s.json")
	require.NoError(t, os.WriteFile(script, []byte(`{"turns":[{"toolCalls":[{"id":"c1","name":"bash","arguments":{"command":"sleep `+marker+`"}}]},{"text":"never"}]}`), 0o644))
	file := filepath.Join(t.TempDir(), "s.jsonl")
	tm := startTerminal(t, 120, 30, []string{"HOME=" + t.TempDir(), "PI_REMOTE_MODEL="},
		"--cwd", dir, "run", "--model", "scripted/"+script, "--session", file)
	tm.WaitFor("scripted/")
	tm.Type("sleep a while")
	tm.Keys("Enter")
	require.Eventually(t, func() bool { return procRunning(marker) }, 20*time.Second, 20*time.Millisecond, "the command runs")
	tm.Keys("C-c")
	tm.Keys("C-c")
	require.Eventually(t, func() bool {
		return strings.TrimSpace(tm.Tmux("display-message", "-p", "-t", "main", "#{pane_dead}")) == "1"
	}, 20*time.Second, 20*time.Millisecond, "pi-remote exits")
	out := tm.Scrollback()
	assert.Contains(t, out, "session: "+file)
	assert.NotContains(t, out, "already closed")
	assert.NotContains(t, out, "unsaved")
	assert.False(t, procRunning(marker), "the command was killed")

	_, entries, err := session.Branch(file)
	require.NoError(t, err)
	var result *loop.ToolResultMessage
	for _, e := range entries {
		if r, ok := e.Message.(*loop.ToolResultMessage); ok && r.ToolCallID == "c1" {
			result = r
		}
	}
	require.NotNil(t, result, "the aborted call's result is saved")
}
