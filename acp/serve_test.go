package acp

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	acpsdk "github.com/coder/acp-go-sdk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pi-remote/pi-remote/agent/permission"
	"github.com/pi-remote/pi-remote/llm"
	"github.com/pi-remote/pi-remote/tools"
	"github.com/pi-remote/pi-remote/workspace"
)

// serve runs Serve over pipes; the test writes in and reads out.
func serve(t *testing.T, o Options) (in io.WriteCloser, out io.Reader) {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan struct{})
	go func() {
		defer close(done)
		Serve(t.Context(), inR, outW, o)
		outW.Close()
	}()
	t.Cleanup(func() {
		inW.Close()
		go io.Copy(io.Discard, outR)
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			t.Error("Serve did not return after its input ended")
		}
	})
	return inW, outR
}

// Malformed JSON and what is no request are answered with JSON-RPC
// errors, an unknown method with method-not-found, and the agent keeps
// serving.
func TestServeProtocolErrors(t *testing.T) {
	in, out := serve(t, Options{Version: "test"})
	lines := bufio.NewScanner(out)
	next := func() map[string]any {
		t.Helper()
		require.True(t, lines.Scan(), "no answer: %v", lines.Err())
		var m map[string]any
		require.NoError(t, json.Unmarshal(lines.Bytes(), &m), "%s", lines.Text())
		return m
	}
	io.WriteString(in, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\"\n")
	e := next()
	assert.Nil(t, e["id"])
	assert.Equal(t, float64(-32700), e["error"].(map[string]any)["code"])

	io.WriteString(in, "[{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"initialize\"}]\n\n")
	e = next()
	assert.Equal(t, float64(-32600), e["error"].(map[string]any)["code"])

	io.WriteString(in, `{"jsonrpc":"2.0","id":3,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{}}}`+"\n")
	r := next()
	assert.Equal(t, float64(3), r["id"])
	res := r["result"].(map[string]any)
	assert.Equal(t, float64(1), res["protocolVersion"])
	assert.Equal(t, true, res["agentCapabilities"].(map[string]any)["loadSession"])
	assert.Equal(t, "pi-remote", res["agentInfo"].(map[string]any)["name"])

	io.WriteString(in, `{"jsonrpc":"2.0","id":4,"method":"session/teleport","params":{}}`+"\n")
	r = next()
	assert.Equal(t, float64(4), r["id"])
	assert.Equal(t, float64(-32601), r["error"].(map[string]any)["code"])

	io.WriteString(in, `{"jsonrpc":"2.0","id":5,"method":"session/prompt","params":{"sessionId":"nope","prompt":[{"type":"text","text":"hi"}]}}`+"\n")
	r = next()
	assert.Equal(t, float64(-32602), r["error"].(map[string]any)["code"], "a session that does not exist")
}

// client is an editor: it records the updates, answers permission
// requests with answerWith, and fails the test if the agent asks for the
// editor's files or terminals.
type client struct {
	t          *testing.T
	mu         sync.Mutex
	updates    []acpsdk.SessionUpdate
	asked      []string
	answerWith func(acpsdk.RequestPermissionRequest) acpsdk.RequestPermissionOutcome
	seen       chan acpsdk.SessionUpdate
}

var errNotHere = errors.New("the agent must not use the editor's files or terminals")

func (c *client) ReadTextFile(context.Context, acpsdk.ReadTextFileRequest) (acpsdk.ReadTextFileResponse, error) {
	c.t.Error(errNotHere)
	return acpsdk.ReadTextFileResponse{}, errNotHere
}

func (c *client) WriteTextFile(context.Context, acpsdk.WriteTextFileRequest) (acpsdk.WriteTextFileResponse, error) {
	c.t.Error(errNotHere)
	return acpsdk.WriteTextFileResponse{}, errNotHere
}

func (c *client) CreateTerminal(context.Context, acpsdk.CreateTerminalRequest) (acpsdk.CreateTerminalResponse, error) {
	c.t.Error(errNotHere)
	return acpsdk.CreateTerminalResponse{}, errNotHere
}

func (c *client) KillTerminal(context.Context, acpsdk.KillTerminalRequest) (acpsdk.KillTerminalResponse, error) {
	return acpsdk.KillTerminalResponse{}, errNotHere
}

func (c *client) TerminalOutput(context.Context, acpsdk.TerminalOutputRequest) (acpsdk.TerminalOutputResponse, error) {
	return acpsdk.TerminalOutputResponse{}, errNotHere
}

func (c *client) ReleaseTerminal(context.Context, acpsdk.ReleaseTerminalRequest) (acpsdk.ReleaseTerminalResponse, error) {
	return acpsdk.ReleaseTerminalResponse{}, errNotHere
}

func (c *client) WaitForTerminalExit(context.Context, acpsdk.WaitForTerminalExitRequest) (acpsdk.WaitForTerminalExitResponse, error) {
	return acpsdk.WaitForTerminalExitResponse{}, errNotHere
}

func (c *client) RequestPermission(_ context.Context, p acpsdk.RequestPermissionRequest) (acpsdk.RequestPermissionResponse, error) {
	c.mu.Lock()
	c.asked = append(c.asked, string(p.ToolCall.ToolCallId))
	c.mu.Unlock()
	return acpsdk.RequestPermissionResponse{Outcome: c.answerWith(p)}, nil
}

func (c *client) SessionUpdate(_ context.Context, n acpsdk.SessionNotification) error {
	c.mu.Lock()
	c.updates = append(c.updates, n.Update)
	c.mu.Unlock()
	select {
	case c.seen <- n.Update:
	default:
	}
	return nil
}

func (c *client) take() []acpsdk.SessionUpdate {
	c.mu.Lock()
	defer c.mu.Unlock()
	u := c.updates
	c.updates = nil
	return u
}

// localOptions open sessions on this machine with a scripted model that
// plays turns, asking before each change (--permissions ask).
func localOptions(t *testing.T, turns string) Options {
	return localOptionsMode(t, turns, permission.Ask)
}

// localOptionsMode is localOptions with the user's permission mode.
func localOptionsMode(t *testing.T, turns string, mode permission.Mode) Options {
	t.Setenv("HOME", t.TempDir()) // the session files
	script := filepath.Join(t.TempDir(), "script.json")
	require.NoError(t, os.WriteFile(script, []byte(turns), 0o644))
	return Options{
		Open: func(ctx context.Context, editorCwd string) (*workspace.Workspace, error) {
			cwd, err := HostCwd(editorCwd, true, "", nil)
			if err != nil {
				return nil, err
			}
			model, err := llm.LoadScript(script)
			if err != nil {
				return nil, err
			}
			hosts, err := workspace.OpenHosts(ctx, workspace.HostOptions{Cwd: cwd}, workspace.Session, nil, io.Discard)
			if err != nil {
				return nil, err
			}
			return workspace.Open(ctx, hosts, workspace.Options{Model: model, Active: tools.DefaultActive, Gate: permission.NewGate(permission.Policy{Mode: mode})})
		},
		Model:   "scripted/" + script,
		Version: "test",
		Log:     io.Discard,
	}
}

func connect(t *testing.T, o Options, c *client) *acpsdk.ClientSideConnection {
	in, out := serve(t, o)
	conn := acpsdk.NewClientSideConnection(c, in, out)
	_, err := conn.Initialize(t.Context(), acpsdk.InitializeRequest{ProtocolVersion: acpsdk.ProtocolVersionNumber})
	require.NoError(t, err)
	return conn
}

func selected(id string) acpsdk.RequestPermissionOutcome {
	return acpsdk.NewRequestPermissionOutcomeSelected(acpsdk.PermissionOptionId(id))
}

// On this machine the session works in the editor's directory; "allow
// always" lets the same call through for the rest of the session without
// asking, and a rejection is the model's to read.
func TestServeLocalSession(t *testing.T) {
	dir := t.TempDir()
	o := localOptions(t, `{"turns":[
		{"toolCalls":[{"id":"w1","name":"write","arguments":{"path":"out.txt","content":"one\n"}}]},
		{"toolCalls":[{"id":"w2","name":"write","arguments":{"path":"out.txt","content":"two\n"}}]},
		{"toolCalls":[{"id":"b1","name":"bash","arguments":{"command":"echo three > out.txt"}}]},
		{"text":"Done."}
	]}`)
	c := &client{t: t, seen: make(chan acpsdk.SessionUpdate, 1)}
	c.answerWith = func(p acpsdk.RequestPermissionRequest) acpsdk.RequestPermissionOutcome {
		if p.ToolCall.ToolCallId == "b1" {
			return selected(optionReject)
		}
		return selected(optionAlways)
	}
	conn := connect(t, o, c)
	s, err := conn.NewSession(t.Context(), acpsdk.NewSessionRequest{Cwd: dir, McpServers: []acpsdk.McpServer{}})
	require.NoError(t, err)
	r, err := conn.Prompt(t.Context(), acpsdk.PromptRequest{SessionId: s.SessionId, Prompt: []acpsdk.ContentBlock{acpsdk.TextBlock("write it")}})
	require.NoError(t, err)
	assert.Equal(t, acpsdk.StopReasonEndTurn, r.StopReason)

	b, err := os.ReadFile(filepath.Join(dir, "out.txt"))
	require.NoError(t, err)
	assert.Equal(t, "two\n", string(b), "written in the editor's directory; the rejected bash did not run")
	assert.Equal(t, []string{"w1", "b1"}, c.asked, "the second identical write was allowed for the session")
	var failed string
	for _, u := range c.take() {
		if u.ToolCallUpdate != nil && u.ToolCallUpdate.ToolCallId == "b1" && u.ToolCallUpdate.Status != nil && *u.ToolCallUpdate.Status == acpsdk.ToolCallStatusFailed {
			b, _ := json.Marshal(u.ToolCallUpdate.Content)
			failed = string(b)
		}
	}
	assert.Contains(t, failed, "Denied by the user")

	_, err = conn.NewSession(t.Context(), acpsdk.NewSessionRequest{Cwd: "relative/dir", McpServers: []acpsdk.McpServer{}})
	assert.ErrorContains(t, err, "not an absolute path")
}

// session/cancel stops the run: the command is killed, the prompt
// answers cancelled, and the session takes the next prompt.
func TestServeCancel(t *testing.T) {
	dir := t.TempDir()
	gone := filepath.Join(dir, "finished")
	o := localOptions(t, `{"turns":[
		{"toolCalls":[{"id":"b1","name":"bash","arguments":{"command":"echo started; sleep 60; touch finished"}}]},
		{"text":"unused"}
	]}`)
	c := &client{t: t, seen: make(chan acpsdk.SessionUpdate, 64)}
	c.answerWith = func(acpsdk.RequestPermissionRequest) acpsdk.RequestPermissionOutcome { return selected(optionOnce) }
	conn := connect(t, o, c)
	s, err := conn.NewSession(t.Context(), acpsdk.NewSessionRequest{Cwd: dir, McpServers: []acpsdk.McpServer{}})
	require.NoError(t, err)
	go func() {
		for u := range c.seen {
			if u.ToolCallUpdate != nil && strings.Contains(mustJSON(u.ToolCallUpdate.Content), "started") {
				conn.Cancel(t.Context(), acpsdk.CancelNotification{SessionId: s.SessionId})
				return
			}
		}
	}()
	start := time.Now()
	r, err := conn.Prompt(t.Context(), acpsdk.PromptRequest{SessionId: s.SessionId, Prompt: []acpsdk.ContentBlock{acpsdk.TextBlock("wait")}})
	require.NoError(t, err)
	assert.Equal(t, acpsdk.StopReasonCancelled, r.StopReason)
	assert.Less(t, time.Since(start), 50*time.Second, "the command was cut short")
	assert.NoFileExists(t, gone)

	// /compact is a command, not a prompt for the model.
	r, err = conn.Prompt(t.Context(), acpsdk.PromptRequest{SessionId: s.SessionId, Prompt: []acpsdk.ContentBlock{acpsdk.TextBlock("/compact")}})
	require.NoError(t, err)
	assert.Equal(t, acpsdk.StopReasonEndTurn, r.StopReason)
	var said []string
	for _, u := range c.take() {
		if u.AgentMessageChunk != nil && u.AgentMessageChunk.Content.Text != nil {
			said = append(said, u.AgentMessageChunk.Content.Text.Text)
		}
	}
	require.NotEmpty(t, said)
	assert.Contains(t, said[len(said)-1], "ompact", "/compact answered for itself")
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// The permission modes are the session's modes: the editor sees the
// default host's, and setting one changes what the gate decides.
func TestServeModes(t *testing.T) {
	dir := t.TempDir()
	o := localOptionsMode(t, `{"turns":[
		{"toolCalls":[{"id":"w2","name":"write","arguments":{"path":"b.txt","content":"b\n"}}]},
		{"text":"Could not write b."},
		{"toolCalls":[{"id":"w1","name":"write","arguments":{"path":"a.txt","content":"a\n"}}]},
		{"text":"Wrote a."}
	]}`, permission.Auto)
	c := &client{t: t, seen: make(chan acpsdk.SessionUpdate, 1)}
	c.answerWith = func(acpsdk.RequestPermissionRequest) acpsdk.RequestPermissionOutcome { return selected(optionReject) }
	conn := connect(t, o, c)
	s, err := conn.NewSession(t.Context(), acpsdk.NewSessionRequest{Cwd: dir, McpServers: []acpsdk.McpServer{}})
	require.NoError(t, err)
	require.NotNil(t, s.Modes)
	assert.Equal(t, acpsdk.SessionModeId("auto"), s.Modes.CurrentModeId)
	assert.Equal(t, []string{"auto", "ask", "read-only"}, modeIDs(s.Modes))

	_, err = conn.SetSessionMode(t.Context(), acpsdk.SetSessionModeRequest{SessionId: s.SessionId, ModeId: "yolo"})
	assert.ErrorContains(t, err, "Invalid params")

	_, err = conn.SetSessionMode(t.Context(), acpsdk.SetSessionModeRequest{SessionId: s.SessionId, ModeId: "read-only"})
	require.NoError(t, err)
	_, err = conn.Prompt(t.Context(), acpsdk.PromptRequest{SessionId: s.SessionId, Prompt: []acpsdk.ContentBlock{acpsdk.TextBlock("write b")}})
	require.NoError(t, err)
	assert.NoFileExists(t, filepath.Join(dir, "b.txt"))
	assert.Empty(t, c.asked, "read-only refuses without asking")
	var refused string
	for _, u := range c.take() {
		if u.ToolCallUpdate != nil && u.ToolCallUpdate.ToolCallId == "w2" && u.ToolCallUpdate.Status != nil && *u.ToolCallUpdate.Status == acpsdk.ToolCallStatusFailed {
			refused = mustJSON(u.ToolCallUpdate.Content)
		}
	}
	assert.Contains(t, refused, "Permission denied")

	// Back to the mode the user set: auto runs the write without asking.
	_, err = conn.SetSessionMode(t.Context(), acpsdk.SetSessionModeRequest{SessionId: s.SessionId, ModeId: "auto"})
	require.NoError(t, err)
	_, err = conn.Prompt(t.Context(), acpsdk.PromptRequest{SessionId: s.SessionId, Prompt: []acpsdk.ContentBlock{acpsdk.TextBlock("write a")}})
	require.NoError(t, err)
	assert.FileExists(t, filepath.Join(dir, "a.txt"))
	assert.Empty(t, c.asked)
}

func modeIDs(m *acpsdk.SessionModeState) []string {
	var ids []string
	for _, x := range m.AvailableModes {
		ids = append(ids, string(x.Id))
	}
	return ids
}

// A command with Expand (prompt templates, skills) becomes the prompt the
// model gets.
func TestServeCommandExpands(t *testing.T) {
	dir := t.TempDir()
	o := localOptions(t, `{"turns":[{"text":"Reviewed."}]}`)
	o.Commands = []Command{{Name: "review", Description: "Review a path", Hint: "path", Expand: func(_ context.Context, input string) (string, error) {
		return "Review " + input + " carefully.", nil
	}}}
	c := &client{t: t, seen: make(chan acpsdk.SessionUpdate, 1)}
	conn := connect(t, o, c)
	s, err := conn.NewSession(t.Context(), acpsdk.NewSessionRequest{Cwd: dir, McpServers: []acpsdk.McpServer{}})
	require.NoError(t, err)
	r, err := conn.Prompt(t.Context(), acpsdk.PromptRequest{SessionId: s.SessionId, Prompt: []acpsdk.ContentBlock{acpsdk.TextBlock("/review main.go")}})
	require.NoError(t, err)
	assert.Equal(t, acpsdk.StopReasonEndTurn, r.StopReason)
	var names []string
	for _, u := range c.take() {
		if u.AvailableCommandsUpdate != nil {
			for _, ac := range u.AvailableCommandsUpdate.AvailableCommands {
				names = append(names, ac.Name)
			}
		}
	}
	assert.Equal(t, []string{"compact", "review"}, names)
	home, _ := os.UserHomeDir()
	var file string
	filepath.WalkDir(home, func(p string, d os.DirEntry, err error) error {
		if err == nil && strings.HasSuffix(p, ".jsonl") {
			b, _ := os.ReadFile(p)
			file += string(b)
		}
		return nil
	})
	assert.Contains(t, file, "Review main.go carefully.", "the model got the expanded prompt")
}

// Requests read before the input ends are answered before Serve returns,
// however late their answers come (session/new, whose context the end of
// the input cancels, may answer "cancelled").
func TestServeAnswersBeforeItReturns(t *testing.T) {
	o := localOptions(t, `{"turns":[{"text":"hi"}]}`)
	in := strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{}}}` + "\n" +
		`{"jsonrpc":"2.0","id":"new","method":"session/new","params":{"cwd":"` + t.TempDir() + `","mcpServers":[]}}` + "\n")
	var out strings.Builder
	require.NoError(t, Serve(t.Context(), in, &out, o))
	var ids []string
	for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		var m message
		require.NoError(t, json.Unmarshal([]byte(line), &m))
		if m.isAnswer() {
			ids = append(ids, string(m.ID))
			if string(m.ID) == "1" {
				assert.Empty(t, m.Error, "%s", line)
			}
		}
	}
	assert.ElementsMatch(t, []string{"1", `"new"`}, ids)
}

// An answer of any shape closes its request, a null result too.
func TestOutboxDrain(t *testing.T) {
	var w strings.Builder
	o := newOutbox(&w, func(fn func()) { fn() })
	o.received([]byte(`{"jsonrpc":"2.0","id":7,"method":"x"}`))
	o.received([]byte(`{"jsonrpc":"2.0","method":"session/cancel","params":{}}`)) // a notification: nothing to answer
	o.received([]byte(`{"jsonrpc":"2.0","id":8,"method":"y"}`))
	o.Write([]byte(`{"jsonrpc":"2.0","id":7,"result":null}` + "\n"))
	o.Write([]byte(`{"jsonrpc":"2.0","id":9,"method":"session/request_permission","params":{}}` + "\n")) // the agent's own request
	o.Write([]byte(`{"jsonrpc":"2.0","id":8,"error":{"code":-32601,"message":"Method not found"}}` + "\n"))
	drained := make(chan struct{})
	go func() { o.drain(); close(drained) }()
	select {
	case <-drained:
	case <-time.After(10 * time.Second):
		t.Fatal("drain still waits after every request was answered")
	}
	assert.Empty(t, o.open)
}
