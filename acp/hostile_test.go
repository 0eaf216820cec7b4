package acp

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/pi-remote/pi-remote/agent/permission"
	"github.com/pi-remote/pi-remote/workspace"
)

// wire is a client that writes raw lines and reads what comes back.
type wire struct {
	t    *testing.T
	in   io.WriteCloser
	msgs chan map[string]any
}

func newWire(t *testing.T, o Options) *wire {
	in, out := serve(t, o)
	w := &wire{t: t, in: in, msgs: make(chan map[string]any, 1024)}
	go func() {
		defer close(w.msgs)
		s := bufio.NewScanner(out)
		s.Buffer(nil, 16<<20)
		for s.Scan() {
			var m map[string]any
			if json.Unmarshal(s.Bytes(), &m) == nil {
				w.msgs <- m
			}
		}
	}()
	return w
}

func (w *wire) send(format string, args ...any) {
	w.t.Helper()
	_, err := fmt.Fprintf(w.in, format+"\n", args...)
	require.NoError(w.t, err)
}

// until reads messages until one satisfies pred, and returns it; the
// others are passed to skipped (when not nil).
func (w *wire) until(pred func(map[string]any) bool, skipped func(map[string]any)) map[string]any {
	w.t.Helper()
	deadline := time.After(60 * time.Second)
	for {
		select {
		case m, ok := <-w.msgs:
			require.True(w.t, ok, "the output ended")
			if pred(m) {
				return m
			}
			if skipped != nil {
				skipped(m)
			}
		case <-deadline:
			w.t.Fatal("no such message within a minute")
		}
	}
}

func hasID(id string) func(map[string]any) bool {
	return func(m map[string]any) bool {
		b, _ := json.Marshal(m["id"])
		_, isAnswer := m["method"]
		return string(b) == id && !isAnswer
	}
}

func (w *wire) newSession(dir string) string {
	w.t.Helper()
	w.send(`{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{}}}`)
	w.until(hasID(`"init"`), nil)
	w.send(`{"jsonrpc":"2.0","id":"new","method":"session/new","params":{"cwd":%q,"mcpServers":[]}}`, dir)
	m := w.until(hasID(`"new"`), nil)
	require.Nil(w.t, m["error"], "%v", m)
	return m["result"].(map[string]any)["sessionId"].(string)
}

// A prompt sent while one runs supersedes it: the one running is
// cancelled (its call waiting for approval is abandoned and never runs),
// answers cancelled, and the newer one runs to its end.
func TestHostileSecondPromptSupersedesTheFirst(t *testing.T) {
	dir := t.TempDir()
	o := localOptions(t, `{"turns":[
		{"toolCalls":[{"id":"b1","name":"bash","arguments":{"command":"touch ran"}}]},
		{"text":"second answer"}
	]}`)
	w := newWire(t, o)
	sid := w.newSession(dir)
	w.send(`{"jsonrpc":"2.0","id":1,"method":"session/prompt","params":{"sessionId":%q,"prompt":[{"type":"text","text":"one"}]}}`, sid)
	asked := w.until(func(m map[string]any) bool { return m["method"] == "session/request_permission" }, nil)
	w.send(`{"jsonrpc":"2.0","id":2,"method":"session/prompt","params":{"sessionId":%q,"prompt":[{"type":"text","text":"two"}]}}`, sid)
	var said []string
	collect := func(m map[string]any) {
		if s := mustJSON(m); strings.Contains(s, "agent_message_chunk") {
			said = append(said, s)
		}
	}
	// The answers may come in either order: the second begins as soon as
	// the first has ended, before the first's answer is written.
	answers := map[string]map[string]any{}
	for len(answers) < 2 {
		m := w.until(func(m map[string]any) bool { return m["method"] == nil }, collect)
		answers[mustJSON(m["id"])] = m
		if len(answers) == 1 {
			// The editor answers the abandoned question late: nothing runs.
			w.send(`{"jsonrpc":"2.0","id":%s,"result":{"outcome":{"outcome":"selected","optionId":"allow_once"}}}`, mustJSON(asked["id"]))
		}
	}
	first, second := answers["1"], answers["2"]
	require.Nil(t, first["error"], "%v", first)
	require.Equal(t, "cancelled", first["result"].(map[string]any)["stopReason"])
	require.Nil(t, second["error"], "%v", second)
	require.Equal(t, "end_turn", second["result"].(map[string]any)["stopReason"])
	require.Contains(t, strings.Join(said, ""), "second answer")
	require.NoFileExists(t, filepath.Join(dir, "ran"))
}

// An id the SDK does not echo byte for byte (an object with spaces in
// it: the answer's JSON is compact) is still answered, and Serve still
// returns when the input ends.
func TestHostileIDWithSpacesDoesNotHangTheEnd(t *testing.T) {
	o := localOptions(t, `{"turns":[{"text":"hi"}]}`)
	in := strings.NewReader(`{"jsonrpc":"2.0","id":{"a": 1},"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{}}}` + "\n" +
		`{"jsonrpc":"2.0","id": [1, 2] ,"method":"session/teleport","params":{}}` + "\n")
	var out strings.Builder
	done := make(chan error, 1)
	go func() { done <- Serve(t.Context(), in, &out, o) }()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(30 * time.Second):
		t.Fatal("Serve still waits for answers it has written")
	}
	require.Contains(t, out.String(), `"id":{"a":1}`)
	require.Contains(t, out.String(), `"id":[1,2]`)
}

// Two loads of one session at once: one gets it, the other is refused
// (two conversations appending to one file would interleave it).
func TestHostileConcurrentLoads(t *testing.T) {
	o := localOptions(t, `{"turns":[{"text":"hi"}]}`)
	dir := t.TempDir()
	w := newWire(t, o)
	sid := w.newSession(dir)
	w.in.Close()
	for range w.msgs {
	}

	entered, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	open := o.Open
	o.Open = func(ctx context.Context, editorCwd string) (*workspace.Workspace, error) {
		first := false
		once.Do(func() { first = true })
		if first {
			close(entered)
			<-release
		}
		return open(ctx, editorCwd)
	}
	w = newWire(t, o)
	w.send(`{"jsonrpc":"2.0","id":1,"method":"session/load","params":{"sessionId":%q,"cwd":%q,"mcpServers":[]}}`, sid, dir)
	<-entered
	w.send(`{"jsonrpc":"2.0","id":2,"method":"session/load","params":{"sessionId":%q,"cwd":%q,"mcpServers":[]}}`, sid, dir)
	second := w.until(hasID("2"), nil)
	close(release)
	require.NotNil(t, second["error"], "%v", second)
	require.Contains(t, mustJSON(second["error"]), "open already")
	first := w.until(hasID("1"), nil)
	require.Nil(t, first["error"], "%v", first)
}

// The editor may tighten the mode the user set for the default host,
// never loosen it: a host the user made read-only stays read-only
// whatever mode a client selects, and an asking one never becomes auto.
func TestHostileEditorCannotLoosenTheUsersMode(t *testing.T) {
	for _, tc := range []struct {
		user    permission.Mode
		offered []string
		refused []string
	}{
		{permission.ReadOnly, []string{"read-only"}, []string{"auto", "ask"}},
		{permission.Ask, []string{"ask", "read-only"}, []string{"auto"}},
	} {
		t.Run(string(tc.user), func(t *testing.T) {
			dir := t.TempDir()
			o := localOptionsMode(t, `{"turns":[
				{"toolCalls":[{"id":"w1","name":"write","arguments":{"path":"a.txt","content":"a\n"}}]},
				{"text":"done"}
			]}`, tc.user)
			c := &client{t: t, seen: make(chan acpsdk.SessionUpdate, 1)}
			c.answerWith = func(acpsdk.RequestPermissionRequest) acpsdk.RequestPermissionOutcome { return selected(optionReject) }
			conn := connect(t, o, c)
			s, err := conn.NewSession(t.Context(), acpsdk.NewSessionRequest{Cwd: dir, McpServers: []acpsdk.McpServer{}})
			require.NoError(t, err)
			require.Equal(t, acpsdk.SessionModeId(tc.user), s.Modes.CurrentModeId)
			require.Equal(t, tc.offered, modeIDs(s.Modes))
			for _, m := range tc.refused {
				_, err = conn.SetSessionMode(t.Context(), acpsdk.SetSessionModeRequest{SessionId: s.SessionId, ModeId: acpsdk.SessionModeId(m)})
				require.ErrorContains(t, err, "less strict", m)
			}
			for _, m := range tc.offered {
				_, err = conn.SetSessionMode(t.Context(), acpsdk.SetSessionModeRequest{SessionId: s.SessionId, ModeId: acpsdk.SessionModeId(m)})
				require.NoError(t, err, m)
			}
			_, err = conn.Prompt(t.Context(), acpsdk.PromptRequest{SessionId: s.SessionId, Prompt: []acpsdk.ContentBlock{acpsdk.TextBlock("write a")}})
			require.NoError(t, err)
			require.NoFileExists(t, filepath.Join(dir, "a.txt"), "the write ran without the user's approval")
		})
	}
}

// A message longer than the limit is refused with its own id when the id
// comes before the long part, so the editor's request does not wait for
// ever; the agent reads on.
func TestHostileLongMessageAnsweredWithItsID(t *testing.T) {
	w := newWire(t, Options{Version: "test"})
	w.send(`{"jsonrpc":"2.0","id":"big","method":"session/prompt","params":{"sessionId":"s","prompt":[{"type":"text","text":"%s"}]}}`, strings.Repeat("x", maxLine+10))
	m := w.until(func(m map[string]any) bool { return m["error"] != nil }, nil)
	require.Equal(t, "big", m["id"], "%v", m)
	require.Equal(t, float64(codeInvalidRequest), m["error"].(map[string]any)["code"])
	w.send(`{"jsonrpc":"2.0","params":{"text":"%s"},"id":7,"method":"x"}`, strings.Repeat("y", maxLine+1<<20))
	m = w.until(func(m map[string]any) bool { return m["error"] != nil }, nil)
	require.Nil(t, m["id"], "the id came after the part cut off")
	w.send(`{"jsonrpc":"2.0","id":3,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{}}}`)
	m = w.until(hasID("3"), nil)
	require.NotNil(t, m["result"])
}

func TestLeadingID(t *testing.T) {
	for line, want := range map[string]string{
		`{"jsonrpc":"2.0","id":12,"params":{"x":"abc`:   `12`,
		`{"id" : "a\"b", "method":"x","params":"abc`:    `"a\"b"`,
		`{"jsonrpc":"2.0","params":{"x":"abc`:           ``,
		`{"id":{"a":1},"params":"abc`:                   ``,
		`[{"id":1}`:                                     ``,
		`{"method":"x","id":null,"params":{"x":"abc"`:   ``,
		`{"method":"session/prompt","id":-4.5,"params"`: `-4.5`,
	} {
		assert.Equal(t, want, string(leadingID([]byte(line))), line)
	}
}

// An answer to a permission request that names an option pi-remote did
// not offer, or that is no outcome at all, refuses the call.
func TestHostileUnknownPermissionAnswers(t *testing.T) {
	dir := t.TempDir()
	o := localOptions(t, `{"turns":[
		{"toolCalls":[{"id":"b1","name":"bash","arguments":{"command":"touch one"}}]},
		{"toolCalls":[{"id":"b2","name":"bash","arguments":{"command":"touch two"}}]},
		{"text":"done"}
	]}`)
	w := newWire(t, o)
	sid := w.newSession(dir)
	w.send(`{"jsonrpc":"2.0","id":1,"method":"session/prompt","params":{"sessionId":%q,"prompt":[{"type":"text","text":"go"}]}}`, sid)
	var failed []string
	collect := func(m map[string]any) {
		if s := mustJSON(m); strings.Contains(s, `"status":"failed"`) {
			failed = append(failed, s)
		}
	}
	for _, answer := range []string{
		`{"outcome":{"outcome":"selected","optionId":"allow_everything"}}`,
		`{"outcome":{"outcome":"bogus"}}`,
	} {
		asked := w.until(func(m map[string]any) bool { return m["method"] == "session/request_permission" }, collect)
		w.send(`{"jsonrpc":"2.0","id":%s,"result":%s}`, mustJSON(asked["id"]), answer)
	}
	r := w.until(hasID("1"), collect)
	require.Equal(t, "end_turn", r["result"].(map[string]any)["stopReason"], "%v", r)
	require.NoFileExists(t, filepath.Join(dir, "one"))
	require.NoFileExists(t, filepath.Join(dir, "two"))
	require.Len(t, failed, 2)
	require.Contains(t, failed[0], "did not offer")
}

// A request sent without an id is ignored: a prompt run as a notification
// would hold up session/cancel until its end.
func TestHostileRequestWithoutID(t *testing.T) {
	o := localOptions(t, `{"turns":[{"text":"only turn"}]}`)
	var log strings.Builder
	var mu sync.Mutex
	o.Log = writerFunc(func(b []byte) (int, error) { mu.Lock(); defer mu.Unlock(); return log.Write(b) })
	w := newWire(t, o)
	sid := w.newSession(t.TempDir())
	w.send(`{"jsonrpc":"2.0","method":"session/prompt","params":{"sessionId":%q,"prompt":[{"type":"text","text":"as a notification"}]}}`, sid)
	w.send(`{"jsonrpc":"2.0","id":null,"method":"session/new","params":{"cwd":"/","mcpServers":[]}}`)
	w.send(`{"jsonrpc":"2.0","id":2,"method":"session/prompt","params":{"sessionId":%q,"prompt":[{"type":"text","text":"real"}]}}`, sid)
	var said string
	r := w.until(hasID("2"), func(m map[string]any) { said += mustJSON(m) })
	require.Nil(t, r["error"], "%v", r)
	require.Equal(t, "end_turn", r["result"].(map[string]any)["stopReason"])
	require.Contains(t, said, "only turn", "the model's one turn answered the real prompt")
	mu.Lock()
	defer mu.Unlock()
	require.Contains(t, log.String(), "ignoring session/prompt sent without an id")
	require.Contains(t, log.String(), "ignoring session/new sent without an id")
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(b []byte) (int, error) { return f(b) }

// A call's title is what the editor shows when it asks for approval: the
// model's control characters cannot hide part of it from a client that
// draws it on a terminal (a CR rewriting the line, an escape that erases
// it), nor break it over lines.
func TestHostileTitlesShowControlCharacters(t *testing.T) {
	for _, tc := range []struct {
		name string
		args callArgs
		abs  string
		want string
	}{
		{"bash", callArgs{Command: "rm -rf ~ \r\x1b[2Kls"}, "", "$ rm -rf ~ ^M^[[2Kls"},
		{"write", callArgs{}, "/srv/a\x1b]52;c;ZXZpbA==\a.txt", "Write /srv/a^[]52;c;ZXZpbA==^G.txt"},
		{"edit", callArgs{Host: "dev\u202e"}, "/srv/x\ny", "dev<U+202E>: Edit /srv/x^Jy"},
		{"grep", callArgs{Pattern: "a\x1b[8mhidden"}, "/srv", `grep "a\x1b[8mhidden" in /srv`},
	} {
		got := title(tc.name, tc.args, tc.abs)
		assert.Equal(t, tc.want, got)
		assert.NotContains(t, got, "\x1b")
		assert.NotContains(t, got, "\r")
	}
}

// The mode changes while a call waits for approval: the running prompt
// goes on, and the next call follows the new mode.
func TestHostileModeChangeDuringARun(t *testing.T) {
	dir := t.TempDir()
	o := localOptionsMode(t, `{"turns":[
		{"toolCalls":[{"id":"w1","name":"write","arguments":{"path":"a.txt","content":"a\n"}}]},
		{"toolCalls":[{"id":"w2","name":"write","arguments":{"path":"b.txt","content":"b\n"}}]},
		{"text":"done"}
	]}`, permission.Auto)
	w := newWire(t, o)
	sid := w.newSession(dir)
	w.send(`{"jsonrpc":"2.0","id":"m1","method":"session/set_mode","params":{"sessionId":%q,"modeId":"ask"}}`, sid)
	w.until(hasID(`"m1"`), nil)
	w.send(`{"jsonrpc":"2.0","id":1,"method":"session/prompt","params":{"sessionId":%q,"prompt":[{"type":"text","text":"go"}]}}`, sid)
	asked := w.until(func(m map[string]any) bool { return m["method"] == "session/request_permission" }, nil)
	w.send(`{"jsonrpc":"2.0","id":"m2","method":"session/set_mode","params":{"sessionId":%q,"modeId":"read-only"}}`, sid)
	m := w.until(hasID(`"m2"`), nil)
	require.Nil(t, m["error"], "%v", m)
	w.send(`{"jsonrpc":"2.0","id":%s,"result":{"outcome":{"outcome":"selected","optionId":"allow_once"}}}`, mustJSON(asked["id"]))
	r := w.until(hasID("1"), func(m map[string]any) {
		require.NotEqual(t, "session/request_permission", m["method"], "read-only refuses w2 without asking")
	})
	require.Equal(t, "end_turn", r["result"].(map[string]any)["stopReason"], "%v", r)
	require.FileExists(t, filepath.Join(dir, "a.txt"))
	require.NoFileExists(t, filepath.Join(dir, "b.txt"))
}

// The input ends while a call waits for approval: the call never runs,
// the prompt is answered, and Serve returns.
func TestHostileInputEndsWhileAsking(t *testing.T) {
	dir := t.TempDir()
	o := localOptions(t, `{"turns":[
		{"toolCalls":[{"id":"b1","name":"bash","arguments":{"command":"touch ran"}}]},
		{"text":"unused"}
	]}`)
	w := newWire(t, o)
	sid := w.newSession(dir)
	w.send(`{"jsonrpc":"2.0","id":1,"method":"session/prompt","params":{"sessionId":%q,"prompt":[{"type":"text","text":"go"}]}}`, sid)
	w.until(func(m map[string]any) bool { return m["method"] == "session/request_permission" }, nil)
	w.in.Close()
	r := w.until(hasID("1"), nil)
	require.Equal(t, "cancelled", r["result"].(map[string]any)["stopReason"], "%v", r)
	for range w.msgs {
	}
	require.NoFileExists(t, filepath.Join(dir, "ran"))
}

// Two requests under one id (a buggy client) are both answered before
// Serve returns.
func TestHostileDuplicateIDsBothAnswered(t *testing.T) {
	o := localOptions(t, `{"turns":[{"text":"hi"}]}`)
	in := strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"` + t.TempDir() + `","mcpServers":[]}}` + "\n" +
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{}}}` + "\n")
	var out syncBuilder
	require.NoError(t, Serve(t.Context(), in, &out, o))
	got := out.String()
	require.Equal(t, 2, strings.Count(got, `"id":1,`), "%s", got)
}

type syncBuilder struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuilder) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuilder) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// session/close ends a session that waits for approval: the prompt
// answers cancelled, the call never runs, the ID is no session any more,
// and session/load opens it again (its file was closed).
func TestHostileCloseSession(t *testing.T) {
	dir := t.TempDir()
	o := localOptions(t, `{"turns":[
		{"toolCalls":[{"id":"b1","name":"bash","arguments":{"command":"touch ran"}}]},
		{"text":"unused"}
	]}`)
	w := newWire(t, o)
	w.send(`{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{}}}`)
	init := w.until(hasID(`"init"`), nil)
	require.Contains(t, mustJSON(init), `"sessionCapabilities":{"close":{}}`)
	w.send(`{"jsonrpc":"2.0","id":"new","method":"session/new","params":{"cwd":%q,"mcpServers":[]}}`, dir)
	sid := w.until(hasID(`"new"`), nil)["result"].(map[string]any)["sessionId"].(string)
	w.send(`{"jsonrpc":"2.0","id":1,"method":"session/prompt","params":{"sessionId":%q,"prompt":[{"type":"text","text":"go"}]}}`, sid)
	w.until(func(m map[string]any) bool { return m["method"] == "session/request_permission" }, nil)
	w.send(`{"jsonrpc":"2.0","id":2,"method":"session/close","params":{"sessionId":%q}}`, sid)
	answers := map[string]map[string]any{}
	for len(answers) < 2 {
		m := w.until(func(m map[string]any) bool { return m["method"] == nil }, nil)
		answers[mustJSON(m["id"])] = m
	}
	r, closed := answers["1"], answers["2"]
	require.Equal(t, "cancelled", r["result"].(map[string]any)["stopReason"], "%v", r)
	require.Nil(t, closed["error"], "%v", closed)
	require.NoFileExists(t, filepath.Join(dir, "ran"))

	w.send(`{"jsonrpc":"2.0","id":3,"method":"session/prompt","params":{"sessionId":%q,"prompt":[{"type":"text","text":"again"}]}}`, sid)
	require.Contains(t, mustJSON(w.until(hasID("3"), nil)["error"]), "no session")
	w.send(`{"jsonrpc":"2.0","id":4,"method":"session/close","params":{"sessionId":%q}}`, sid)
	require.Contains(t, mustJSON(w.until(hasID("4"), nil)["error"]), "no session")
	w.send(`{"jsonrpc":"2.0","id":5,"method":"session/load","params":{"sessionId":%q,"cwd":%q,"mcpServers":[]}}`, sid, dir)
	loaded := w.until(hasID("5"), nil)
	require.Nil(t, loaded["error"], "%v", loaded)
}
