package integration

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pi-remote/pi-remote/integration/sshd"
	"github.com/pi-remote/pi-remote/session"
)

// scriptedOpenAI is an OpenAI-compatible server that answers each request
// with the next scripted turn, streamed the way OpenAI streams, and
// records the requests.
type scriptedOpenAI struct {
	mu        sync.Mutex
	turns     []openAITurn
	requests  []map[string]any
	onRequest func(n int) // when set, runs before request n (from 1) is answered
}

type openAITurn struct {
	text  string
	calls [][3]string // id, name, JSON arguments
}

// got is a copy of the requests so far.
func (s *scriptedOpenAI) got() []map[string]any {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.requests)
}

func (s *scriptedOpenAI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	var req map[string]any
	json.Unmarshal(body, &req)
	s.mu.Lock()
	s.requests = append(s.requests, req)
	n := len(s.requests)
	s.mu.Unlock()
	if s.onRequest != nil {
		s.onRequest(n)
	}
	if n > len(s.turns) {
		http.Error(w, `{"error":{"message":"script exhausted"}}`, 500)
		return
	}
	turn := s.turns[n-1]
	w.Header().Set("Content-Type", "text/event-stream")
	send := func(delta, finish string) {
		fin := "null"
		if finish != "" {
			fin = `"` + finish + `"`
		}
		fmt.Fprintf(w, `data: {"id":"chatcmpl-%d","object":"chat.completion.chunk","created":1,"model":"fake-1","choices":[{"index":0,"delta":%s,"finish_reason":%s}]}`+"\n\n", n, delta, fin)
		w.(http.Flusher).Flush()
	}
	send(`{"role":"assistant","content":""}`, "")
	if turn.text != "" {
		b, _ := json.Marshal(turn.text)
		send(`{"content":`+string(b)+`}`, "")
	}
	for i, c := range turn.calls {
		args, _ := json.Marshal(c[2])
		half := len(args) / 2 // split the arguments, as real streams do
		send(fmt.Sprintf(`{"tool_calls":[{"index":%d,"id":%q,"type":"function","function":{"name":%q,"arguments":""}}]}`, i, c[0], c[1]), "")
		send(fmt.Sprintf(`{"tool_calls":[{"index":%d,"function":{"arguments":%s"}}]}`, i, string(args[:half])), "")
		send(fmt.Sprintf(`{"tool_calls":[{"index":%d,"function":{"arguments":"%s}}]}`, i, string(args[half:])), "")
	}
	finish := "stop"
	if len(turn.calls) > 0 {
		finish = "tool_calls"
	}
	send(`{}`, finish)
	fmt.Fprint(w, "data: [DONE]\n\n")
}

// A run against an OpenAI-compatible server and a real sshd: one batch with
// two edits of one remote file through two spellings (one via a symlinked
// directory) and a bash call. The file ends right, results go back in call
// order with their ids, and --mode json prints one event per line.
func TestRunAgainstOpenAICompatibleServerAndSSHD(t *testing.T) {
	srv := sshd.Start(t, sshd.Options{})
	t.Setenv("HOME", t.TempDir()) // the session file goes under $HOME
	dir := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "real"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "real", "app.conf"), []byte("mode = x\n"), 0o644))
	require.NoError(t, os.Symlink(filepath.Join(dir, "real"), filepath.Join(dir, "link")))

	fake := &scriptedOpenAI{turns: []openAITurn{
		{text: "Updating the config.", calls: [][3]string{
			{"call_e1", "edit", `{"path":"real/app.conf","edits":[{"oldText":"mode = x","newText":"mode = y"}]}`},
			{"call_e2", "edit", `{"path":"` + filepath.Join(dir, "link", "app.conf") + `","edits":[{"oldText":"mode = y","newText":"mode = z"}]}`},
			{"call_b3", "bash", `{"command":"echo checked on $(hostname)"}`},
		}},
		{text: "The mode is z now."},
	}}
	api := httptest.NewServer(fake)
	t.Cleanup(api.Close)

	args := append(srv.Flags(), "--cwd", dir, "run", "--model", "openai/fake-1", "--base-url", api.URL+"/v1", "--mode", "json", "set the mode to z")
	code, out, stderr := cli(t, "", args...)
	require.Equal(t, 0, code, stderr)

	b, err := os.ReadFile(filepath.Join(dir, "real", "app.conf"))
	require.NoError(t, err)
	assert.Equal(t, "mode = z\n", string(b), "both edits applied, in call order")

	var types []string
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var ev map[string]any
		require.NoError(t, json.Unmarshal([]byte(line), &ev), "every line is one JSON event: %q", line)
		types = append(types, ev["type"].(string))
	}
	assert.Equal(t, "agent_start", types[0])
	assert.Equal(t, "agent_end", types[len(types)-1])

	requests := fake.got()
	require.Len(t, requests, 2)
	sent := requests[1]["messages"].([]any)
	var results []map[string]any
	for _, m := range sent {
		if m := m.(map[string]any); m["role"] == "tool" {
			results = append(results, m)
		}
	}
	require.Len(t, results, 3)
	for i, id := range []string{"call_e1", "call_e2", "call_b3"} {
		assert.Equal(t, id, results[i]["tool_call_id"], "result %d in call order", i)
	}
	assert.Contains(t, results[0]["content"], "Successfully replaced")
	assert.Contains(t, results[2]["content"], "checked on")
	system := sent[0].(map[string]any)
	assert.Equal(t, "system", system["role"])
	assert.Contains(t, system["content"], "working directory "+dir)

	// The session file replays the whole run: the prompt, both assistant
	// turns and the three results, in order.
	sessions, err := filepath.Glob(filepath.Join(os.Getenv("HOME"), ".pi-remote", "sessions", "*", "*.jsonl"))
	require.NoError(t, err)
	require.Len(t, sessions, 1)
	_, saved, err := session.Open(sessions[0])
	replay := saved.Messages
	require.NoError(t, err)
	var roles []string
	for _, m := range replay {
		b, _ := json.Marshal(m)
		var v struct{ Role string }
		json.Unmarshal(b, &v)
		roles = append(roles, v.Role)
	}
	assert.Equal(t, []string{"user", "assistant", "toolResult", "toolResult", "toolResult", "assistant"}, roles)
}

// A binary built from a clone says which commit it is.
func TestVersionNamesTheCommit(t *testing.T) {
	head, err := exec.Command("git", "rev-parse", "HEAD").Output()
	if err != nil {
		t.Skipf("not a git clone: %v", err)
	}
	top, err := exec.Command("git", "rev-parse", "--show-toplevel").Output()
	require.NoError(t, err)
	if fi, err := os.Lstat(filepath.Join(strings.TrimSpace(string(top)), ".git")); err == nil && !fi.IsDir() {
		// (go build does not stamp a build in a git worktree, whose .git
		// is a file; CI builds in a clone.)
		t.Skip("a git worktree: go build does not stamp its builds with the commit")
	}
	code, out, _ := cli(t, "", "version")
	require.Equal(t, 0, code)
	assert.Contains(t, out, "(commit "+string(head[:12]))
}
