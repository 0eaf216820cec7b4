package integration

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pi-remote/pi-remote/integration/sshd"
)

// acpClientDir holds the ACP TypeScript SDK (scripts/node-deps.sh).
const acpClientDir = "node/acp"

// needACPClient is the node binary, once the SDK is installed; outside CI
// the test skips when either is missing, in CI it fails.
func needACPClient(t *testing.T) string {
	t.Helper()
	node, err := exec.LookPath("node")
	missing := ""
	switch {
	case err != nil:
		missing = "node is not installed"
	default:
		if _, err := os.Stat(filepath.Join(acpClientDir, "node_modules", "@agentclientprotocol", "sdk", "package.json")); err != nil {
			missing = "the ACP SDK is not installed: run bash scripts/node-deps.sh"
		}
	}
	if missing != "" {
		if os.Getenv("CI") != "" {
			t.Fatal(missing)
		}
		t.Skip(missing)
	}
	return node
}

// acpUpdate is the part of a session/update the test reads.
type acpUpdate struct {
	SessionUpdate string          `json:"sessionUpdate"`
	ToolCallID    string          `json:"toolCallId"`
	Status        string          `json:"status"`
	Kind          string          `json:"kind"`
	Title         string          `json:"title"`
	Content       json.RawMessage `json:"content"`
	Locations     []struct {
		Path string `json:"path"`
		Line *int   `json:"line"`
	} `json:"locations"`
}

type acpTurn struct {
	StopReason string      `json:"stopReason"`
	Updates    []acpUpdate `json:"updates"`
	CancelSent bool        `json:"cancelSent"`
}

// callUpdates are the updates of one tool call, in order.
func (t acpTurn) callUpdates(id string) []acpUpdate {
	var out []acpUpdate
	for _, u := range t.Updates {
		if u.ToolCallID == id {
			out = append(out, u)
		}
	}
	return out
}

// statuses are the statuses a call's updates set, in order (repeats of
// one status, as bash's output updates leave it, collapsed).
func statuses(us []acpUpdate) []string {
	var out []string
	for _, u := range us {
		if u.Status != "" && (len(out) == 0 || out[len(out)-1] != u.Status) {
			out = append(out, u.Status)
		}
	}
	return out
}

// The official ACP TypeScript SDK, as an editor uses it, drives
// `pi-remote acp` against sshd with a scripted model: a prompt that edits
// a remote file and runs bash, a cancel during a long bash, a permission
// request answered reject, and session/load in a second agent process.
func TestACPWithTypeScriptSDK(t *testing.T) {
	node := needACPClient(t)
	t.Parallel()
	srv := sshd.Start(t, sshd.Options{})
	// The editor's directory is on the editor's machine; the user's
	// settings map it to the directory on the host.
	base := t.TempDir()
	dir := filepath.Join(base, "app")
	require.NoError(t, os.Mkdir(dir, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("hello world\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "secret.txt"), []byte("keep me\n"), 0o644))
	marker := fmt.Sprintf("300.%d", time.Now().UnixNano()%1000000007)
	t.Cleanup(func() { exec.Command("pkill", "-f", "sleep "+marker).Run() })
	script := filepath.Join(t.TempDir(), "script.json")
	require.NoError(t, os.WriteFile(script, []byte(`{"turns":[
		{"thinking":"A small change.","text":"Editing.","toolCalls":[
			{"id":"c1","name":"edit","arguments":{"path":"notes.txt","edits":[{"oldText":"world","newText":"editor"}]}},
			{"id":"c2","name":"bash","arguments":{"command":"echo ran-on-host; cat notes.txt"}}]},
		{"text":"Edited and ran.","usage":{"input":1200,"output":30}},
		{"toolCalls":[{"id":"c3","name":"bash","arguments":{"command":"echo long-started; sleep `+marker+`"}}]},
		{"toolCalls":[{"id":"c4","name":"edit","arguments":{"path":"secret.txt","edits":[{"oldText":"keep","newText":"lose"}]}}]},
		{"text":"Understood, I left it."}
	]}`), 0o644))
	home := t.TempDir()
	editorCwd := "/editor/projects/app"
	require.NoError(t, os.MkdirAll(filepath.Join(home, ".pi-remote"), 0o700))
	settings, _ := json.Marshal(map[string]any{"acpCwdMap": map[string]string{"/editor/projects": base}})
	require.NoError(t, os.WriteFile(filepath.Join(home, ".pi-remote", "settings.json"), settings, 0o600))
	// The user's prompt template is one of the session's commands.
	require.NoError(t, os.MkdirAll(filepath.Join(home, ".pi-remote", "prompts"), 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(home, ".pi-remote", "prompts", "triage.md"), []byte("---\ndescription: Triage an issue\n---\nTriage $1.\n"), 0o600))

	args := append(srv.Flags(), "--model", "scripted/"+script, "--permissions", "ask", "acp")
	cfg, _ := json.Marshal(map[string]any{
		"command": binary, "args": args, "cwd": editorCwd,
		"prompts":       map[string]string{"edit": "change notes and run it", "long": "run the long one", "reject": "change the secret"},
		"startedMarker": "long-started",
		"rejectCalls":   []string{"c4"},
	})
	cmd := exec.Command(node, "client.mjs", string(cfg))
	cmd.Env = append(os.Environ(), "HOME="+home)
	cmd.Dir, _ = filepath.Abs(acpClientDir)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	outPipe, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	lines := make(chan string, 1)
	go func() {
		b, _ := io.ReadAll(bufio.NewReader(outPipe))
		lines <- string(b)
	}()
	var raw string
	select {
	case raw = <-lines:
	case <-time.After(3 * time.Minute):
		cmd.Process.Kill()
		t.Fatalf("the client did not finish; stderr:\n%s", stderr.String())
	}
	require.NoError(t, cmd.Wait(), "client stderr:\n%s", stderr.String())

	var got struct {
		Initialize struct {
			ProtocolVersion   int `json:"protocolVersion"`
			AgentCapabilities struct {
				LoadSession bool `json:"loadSession"`
			} `json:"agentCapabilities"`
		} `json:"initialize"`
		UnknownMethod *struct {
			Code int `json:"code"`
		} `json:"unknownMethod"`
		SessionID string `json:"sessionId"`
		Modes     struct {
			CurrentModeID  string `json:"currentModeId"`
			AvailableModes []struct {
				ID string `json:"id"`
			} `json:"availableModes"`
		} `json:"modes"`
		Edit     acpTurn `json:"edit"`
		Long     acpTurn `json:"long"`
		Reject   acpTurn `json:"reject"`
		Load     acpTurn `json:"load"`
		Commands *struct {
			AvailableCommands []struct {
				Name string `json:"name"`
			} `json:"availableCommands"`
		} `json:"commands"`
		LoadUnknown *struct {
			Code int `json:"code"`
		} `json:"loadUnknown"`
		Permissions []struct {
			ToolCallID string   `json:"toolCallId"`
			Options    []string `json:"options"`
			Answered   string   `json:"answered"`
			Seen       int      `json:"seen"`
		} `json:"permissions"`
		FirstExit struct {
			Code *int `json:"code"`
		} `json:"firstExit"`
	}
	require.NoError(t, json.Unmarshal([]byte(raw), &got), "client output: %s\nstderr:\n%s", raw, stderr.String())

	t.Run("initialize and errors", func(t *testing.T) {
		assert.Equal(t, 1, got.Initialize.ProtocolVersion)
		assert.True(t, got.Initialize.AgentCapabilities.LoadSession)
		require.NotNil(t, got.UnknownMethod)
		assert.Equal(t, -32601, got.UnknownMethod.Code)
		require.NotNil(t, got.LoadUnknown, "loading a session that does not exist is an error")
		require.NotNil(t, got.FirstExit.Code)
		assert.Equal(t, 0, *got.FirstExit.Code, "the agent exits cleanly at the end of its input")
		require.NotNil(t, got.Commands)
		var names []string
		for _, c := range got.Commands.AvailableCommands {
			names = append(names, c.Name)
		}
		assert.Contains(t, names, "compact")
		assert.Contains(t, names, "triage", "the user's prompt template is advertised")
		assert.Equal(t, "ask", got.Modes.CurrentModeID, "the permission mode is the session's mode")
		var modes []string
		for _, m := range got.Modes.AvailableModes {
			modes = append(modes, m.ID)
		}
		assert.Equal(t, []string{"ask", "read-only"}, modes, "the editor may tighten --permissions ask, not loosen it")
	})

	t.Run("edit and bash on the host", func(t *testing.T) {
		assert.Equal(t, "end_turn", got.Edit.StopReason)
		assert.Equal(t, "hello editor\n", readFile(t, filepath.Join(dir, "notes.txt")), "the edit reached the host's file (the editor's directory mapped to it)")
		var kinds []string
		for _, u := range got.Edit.Updates {
			kinds = append(kinds, u.SessionUpdate)
		}
		assert.Contains(t, kinds, "agent_thought_chunk")
		assert.Contains(t, kinds, "agent_message_chunk")
		assert.Contains(t, kinds, "usage_update", "the model call's usage is told")

		edit := got.Edit.callUpdates("c1")
		require.NotEmpty(t, edit)
		assert.Equal(t, "tool_call", edit[0].SessionUpdate)
		assert.Equal(t, "edit", edit[0].Kind)
		assert.Equal(t, "Edit "+filepath.Join(dir, "notes.txt"), edit[0].Title)
		require.NotEmpty(t, edit[0].Locations)
		assert.Equal(t, filepath.Join(dir, "notes.txt"), edit[0].Locations[0].Path, "the location is the path on the host")
		assert.Equal(t, []string{"pending", "in_progress", "completed"}, statuses(edit))
		last := edit[len(edit)-1]
		var diff []struct {
			Type    string `json:"type"`
			Path    string `json:"path"`
			OldText string `json:"oldText"`
			NewText string `json:"newText"`
		}
		require.NoError(t, json.Unmarshal(last.Content, &diff))
		require.Len(t, diff, 1)
		assert.Equal(t, "diff", diff[0].Type)
		assert.Equal(t, filepath.Join(dir, "notes.txt"), diff[0].Path)
		assert.Equal(t, "world", diff[0].OldText)
		assert.Equal(t, "editor", diff[0].NewText)
		require.NotEmpty(t, last.Locations)
		require.NotNil(t, last.Locations[0].Line)
		assert.Equal(t, 1, *last.Locations[0].Line)

		bash := got.Edit.callUpdates("c2")
		require.NotEmpty(t, bash)
		assert.Equal(t, "execute", bash[0].Kind)
		assert.Equal(t, []string{"pending", "in_progress", "completed"}, statuses(bash))
		assert.Contains(t, string(bash[len(bash)-1].Content), "ran-on-host")
		assert.Contains(t, string(bash[len(bash)-1].Content), "hello editor")

		// Updates come in the order things happened: each call is
		// announced before it runs, and ends after.
		idx := func(id, status string) int {
			for i, u := range got.Edit.Updates {
				if u.ToolCallID == id && u.Status == status {
					return i
				}
			}
			return -1
		}
		assert.Less(t, idx("c1", "pending"), idx("c1", "in_progress"))
		assert.Less(t, idx("c1", "in_progress"), idx("c1", "completed"))
		assert.Less(t, idx("c2", "pending"), idx("c2", "in_progress"))
		assert.Less(t, idx("c2", "in_progress"), idx("c2", "completed"))
	})

	t.Run("cancel kills the remote command", func(t *testing.T) {
		assert.True(t, got.Long.CancelSent, "the long command's output was streamed before it ended")
		assert.Equal(t, "cancelled", got.Long.StopReason)
		bash := got.Long.callUpdates("c3")
		require.NotEmpty(t, bash)
		assert.Equal(t, "failed", bash[len(bash)-1].Status)
		require.Eventually(t, func() bool { return len(psMatching(t, "sleep "+marker)) == 0 }, 30*time.Second, 50*time.Millisecond,
			"the remote sleep still runs: %v", psMatching(t, "sleep "+marker))
	})

	t.Run("rejected permission", func(t *testing.T) {
		assert.Equal(t, "end_turn", got.Reject.StopReason)
		assert.Equal(t, "keep me\n", readFile(t, filepath.Join(dir, "secret.txt")), "a rejected edit leaves the file")
		edit := got.Reject.callUpdates("c4")
		require.NotEmpty(t, edit)
		assert.Equal(t, "failed", edit[len(edit)-1].Status)
		assert.Contains(t, string(edit[len(edit)-1].Content), "Denied by the user")
		var asked []string
		for _, p := range got.Permissions {
			asked = append(asked, p.ToolCallID+":"+p.Answered)
			assert.Equal(t, []string{"allow_once", "allow_always", "reject_once"}, p.Options)
		}
		assert.Equal(t, []string{"c1:allow_once", "c2:allow_once", "c3:allow_once", "c4:reject_once"}, asked)
		// A call waits for approval as pending: it is in progress only
		// once allowed.
		require.NotEmpty(t, got.Permissions)
		c1 := got.Permissions[0]
		for _, u := range got.Edit.Updates[:min(c1.Seen, len(got.Edit.Updates))] {
			assert.False(t, u.ToolCallID == "c1" && u.Status == "in_progress", "c1 in progress before it was allowed")
		}
		// The model read the refusal: it is the call's result in the
		// session, and the run went on to the model's answer.
		file := sessionFile(t, home, got.SessionID)
		assert.Contains(t, file, `"toolCallId":"c4"`)
		assert.Contains(t, file, "Denied by the user")
		assert.Contains(t, file, "Understood, I left it.")
	})

	t.Run("load replays the session", func(t *testing.T) {
		var texts []string
		for _, u := range got.Load.Updates {
			if u.SessionUpdate == "user_message_chunk" || u.SessionUpdate == "agent_message_chunk" {
				var c struct {
					Text string `json:"text"`
				}
				json.Unmarshal(u.Content, &c)
				texts = append(texts, u.SessionUpdate+":"+c.Text)
			}
		}
		assert.Equal(t, []string{
			"user_message_chunk:change notes and run it", "agent_message_chunk:Editing.", "agent_message_chunk:Edited and ran.",
			"user_message_chunk:run the long one",
			"user_message_chunk:change the secret", "agent_message_chunk:Understood, I left it.",
		}, texts)
		edit := got.Load.callUpdates("c1")
		assert.Equal(t, []string{"pending", "completed"}, statuses(edit))
		assert.Equal(t, []string{"pending", "failed"}, statuses(got.Load.callUpdates("c4")))
	})
}

// sessionFile is the text of the session file with this ID under home.
func sessionFile(t *testing.T, home, id string) string {
	t.Helper()
	var found string
	filepath.WalkDir(filepath.Join(home, ".pi-remote", "sessions"), func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".jsonl") {
			if b, err := os.ReadFile(p); err == nil && strings.Contains(string(b), id) {
				found = string(b)
			}
		}
		return nil
	})
	require.NotEmpty(t, found, "no session file with id %s", id)
	return found
}

// The built binary answers lines that are no JSON-RPC request with
// JSON-RPC errors and serves on, and exits 0 at the end of its input.
func TestACPProtocolErrors(t *testing.T) {
	t.Parallel()
	script := filepath.Join(t.TempDir(), "script.json")
	require.NoError(t, os.WriteFile(script, []byte(`{"turns":[{"text":"hi"}]}`), 0o644))
	in := strings.Join([]string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1`,
		`[]`,
		`{"jsonrpc":"2.0","id":2,"method":"session/teleport","params":{}}`,
		`{"jsonrpc":"2.0","id":3,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{}}}`,
	}, "\n") + "\n"
	cmd := exec.Command(binary, "--model", "scripted/"+script, "acp")
	cmd.Dir = t.TempDir()
	cmd.Env = append(os.Environ(), "HOME="+t.TempDir())
	cmd.Stdin = strings.NewReader(in)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, "stderr: %s", stderr.String())
	var codes []string
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		var m struct {
			ID     any `json:"id"`
			Error  *struct{ Code int }
			Result map[string]any
		}
		require.NoError(t, json.Unmarshal([]byte(line), &m), "%s", line)
		switch {
		case m.Error != nil:
			codes = append(codes, fmt.Sprintf("%v:%d", m.ID, m.Error.Code))
		default:
			codes = append(codes, fmt.Sprintf("%v:ok", m.ID))
		}
	}
	// The filter answers the first two at once; the SDK the others, in
	// any order.
	require.Len(t, codes, 4, "%s", out)
	assert.Equal(t, []string{"<nil>:-32700", "<nil>:-32600"}, codes[:2])
	assert.ElementsMatch(t, []string{"2:-32601", "3:ok"}, codes[2:])
}

// The editor goes away (stdin closes) while a remote command runs: the
// command is killed on the host, the session file keeps the turn, and
// pi-remote acp exits 0.
func TestACPInputEndsDuringRemoteCommand(t *testing.T) {
	t.Parallel()
	srv := sshd.Start(t, sshd.Options{})
	dir := t.TempDir()
	marker := fmt.Sprintf("301.%d", time.Now().UnixNano()%1000000007)
	script := filepath.Join(t.TempDir(), "script.json")
	require.NoError(t, os.WriteFile(script, []byte(`{"turns":[
		{"toolCalls":[{"id":"c1","name":"bash","arguments":{"command":"echo long-started; sleep `+marker+`; touch finished"}}]},
		{"text":"unused"}
	]}`), 0o644))
	home := t.TempDir()
	cmd := exec.Command(binary, append(srv.Flags(), "--model", "scripted/"+script, "--cwd", dir, "acp")...)
	cmd.Env = append(os.Environ(), "HOME="+home)
	in, err := cmd.StdinPipe()
	require.NoError(t, err)
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { cmd.Process.Kill() })
	msgs := make(chan map[string]any, 256)
	go func() {
		defer close(msgs)
		s := bufio.NewScanner(out)
		s.Buffer(nil, 16<<20)
		for s.Scan() {
			var m map[string]any
			if json.Unmarshal(s.Bytes(), &m) == nil {
				msgs <- m
			}
		}
	}()
	until := func(pred func(map[string]any) bool) map[string]any {
		t.Helper()
		deadline := time.After(2 * time.Minute)
		for {
			select {
			case m, ok := <-msgs:
				require.True(t, ok, "the output ended; stderr:\n%s", stderr.String())
				if pred(m) {
					return m
				}
			case <-deadline:
				t.Fatalf("no such message; stderr:\n%s", stderr.String())
			}
		}
	}
	fmt.Fprintln(in, `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{}}}`)
	fmt.Fprintf(in, `{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":%q,"mcpServers":[]}}`+"\n", "/editor/elsewhere")
	m := until(func(m map[string]any) bool { return m["id"] == float64(1) && m["method"] == nil })
	require.Nil(t, m["error"], "%v", m)
	sid := m["result"].(map[string]any)["sessionId"].(string)
	fmt.Fprintf(in, `{"jsonrpc":"2.0","id":2,"method":"session/prompt","params":{"sessionId":%q,"prompt":[{"type":"text","text":"run it"}]}}`+"\n", sid)
	// Its output, not its title, says that it runs.
	until(func(m map[string]any) bool {
		b, _ := json.Marshal(m)
		return strings.Contains(string(b), "tool_call_update") && strings.Contains(string(b), `long-started\n`)
	})
	require.NotEmpty(t, psMatching(t, "sleep "+marker), "the command runs on the host")
	require.NoError(t, in.Close())

	r := until(func(m map[string]any) bool { return m["id"] == float64(2) && m["method"] == nil })
	assert.Equal(t, "cancelled", r["result"].(map[string]any)["stopReason"], "%v", r)
	for range msgs {
	}
	require.NoError(t, cmd.Wait(), "stderr:\n%s", stderr.String())
	require.Eventually(t, func() bool { return len(psMatching(t, "sleep "+marker)) == 0 }, 30*time.Second, 50*time.Millisecond,
		"the remote sleep still runs: %v", psMatching(t, "sleep "+marker))
	assert.NoFileExists(t, filepath.Join(dir, "finished"))

	var file string
	filepath.WalkDir(filepath.Join(home, ".pi-remote"), func(p string, d os.DirEntry, err error) error {
		if err == nil && strings.HasSuffix(p, ".jsonl") {
			b, _ := os.ReadFile(p)
			file += string(b)
		}
		return nil
	})
	assert.Contains(t, file, sid, "the session file is the session's")
	assert.Contains(t, file, "sleep "+marker, "the call was saved")
	assert.Contains(t, file, "long-started", "with the output it had")
}
