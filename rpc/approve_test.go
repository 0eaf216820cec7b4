package rpc

import (
	"bufio"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pi-remote/pi-remote/agent/permission"
	"github.com/pi-remote/pi-remote/llm"
	"github.com/pi-remote/pi-remote/workspace"
)

// live is a server driven line by line, as a client does: send writes a
// command, next waits for a line of the server's that matches. The
// server's output is read as it comes, whatever the test waits for, so
// the server never blocks on writing.
type live struct {
	t  *testing.T
	in *io.PipeWriter

	mu    sync.Mutex
	read  []string      // lines read, not parsed by next yet
	eof   bool          // the output has ended
	wake  chan struct{} // a signal after each line and at the end
	seen  []map[string]any
	taken map[int]bool // indexes in seen that next returned

	done             chan struct{} // closed when Serve has returned
	serveErr, outErr error
	once             sync.Once
}

// startLive serves a local workspace in dir whose tools (read, write,
// bash) pass a gate of mode, with the scripted model of script.
func startLive(t *testing.T, dir string, mode permission.Mode, script string) *live {
	t.Helper()
	hs, err := workspace.OpenHosts(t.Context(), workspace.HostOptions{Cwd: dir}, workspace.Session, nil, nil)
	require.NoError(t, err)
	gate := permission.NewGate(permission.Policy{Mode: mode})
	w, err := workspace.Open(t.Context(), hs, workspace.Options{Active: []string{"read", "write", "bash"}, MaxTurns: 5, Gate: gate})
	require.NoError(t, err)
	p := filepath.Join(t.TempDir(), "script.json")
	require.NoError(t, os.WriteFile(p, []byte(script), 0o644))
	m, err := llm.New("scripted/"+p, llm.Options{})
	require.NoError(t, err)
	w.Config.Model = m
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	l := &live{t: t, in: inW, wake: make(chan struct{}, 1), taken: map[int]bool{}, done: make(chan struct{})}
	s := New(w, outW, Options{Model: "scripted/" + p})
	var wg sync.WaitGroup
	wg.Go(func() {
		defer close(l.done)
		l.serveErr = s.Serve(t.Context(), inR)
		outW.Close()
	})
	wg.Go(func() {
		sc := bufio.NewScanner(outR)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			l.mu.Lock()
			l.read = append(l.read, sc.Text())
			l.mu.Unlock()
			l.signal()
		}
		if l.outErr = sc.Err(); l.outErr != nil {
			io.Copy(io.Discard, outR) // let the server finish
		}
		l.mu.Lock()
		l.eof = true
		l.mu.Unlock()
		l.signal()
	})
	t.Cleanup(func() {
		l.closeInput()
		wg.Wait()
		assert.NoError(t, l.serveErr)
		assert.NoError(t, l.outErr, "reading the server's lines")
		w.Close()
	})
	return l
}

func (l *live) send(command string) {
	l.t.Helper()
	_, err := io.WriteString(l.in, command+"\n")
	require.NoError(l.t, err)
}

// closeInput ends the server's input, as a client that exits does.
func (l *live) closeInput() { l.once.Do(func() { l.in.Close() }) }

func (l *live) signal() {
	select {
	case l.wake <- struct{}{}:
	default:
	}
}

// next is the first line not taken yet for which match says true,
// waiting for the server to write it: lines may come in another order
// than the test waits for them (a prompt's events before its response).
func (l *live) next(what string, match func(map[string]any) bool) map[string]any {
	l.t.Helper()
	for {
		l.mu.Lock()
		fresh, eof := l.read, l.eof
		l.read = nil
		l.mu.Unlock()
		for _, line := range fresh {
			var m map[string]any
			require.NoError(l.t, json.Unmarshal([]byte(line), &m), line)
			l.seen = append(l.seen, m)
		}
		for i, m := range l.seen {
			if !l.taken[i] && match(m) {
				l.taken[i] = true
				return m
			}
		}
		if eof {
			require.FailNow(l.t, "the server ended before "+what, "lines: %v", l.seen)
		}
		<-l.wake
	}
}

func (l *live) event(typ string) map[string]any {
	l.t.Helper()
	return l.next(typ, func(m map[string]any) bool { return m["type"] == typ })
}

func (l *live) response(id string) map[string]any {
	l.t.Helper()
	return l.next("the response to "+id, func(m map[string]any) bool { return m["type"] == "response" && m["id"] == id })
}

// count is how many lines seen so far are of type typ.
func (l *live) count(typ string) int {
	n := 0
	for _, m := range l.seen {
		if m["type"] == typ {
			n++
		}
	}
	return n
}

// resultText is the text of a tool_execution_end event's result.
func resultText(t *testing.T, end map[string]any) string {
	t.Helper()
	res, ok := end["result"].(map[string]any)
	require.True(t, ok, "tool_execution_end without result: %v", end)
	var b strings.Builder
	for _, c := range res["content"].([]any) {
		b.WriteString(c.(map[string]any)["text"].(string))
	}
	return b.String()
}

func canonicalDir(t *testing.T) string {
	t.Helper()
	dir, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	return dir
}

const writeOnce = `{"turns":[
	{"toolCalls":[{"id":"c1","name":"write","arguments":{"path":"notes.txt","content":"hi\n"}}]},
	{"text":"Done."}
]}`

// In ask mode a write waits for the client: approval_request tells what
// and why, a wrong answer changes nothing, "once" runs the call, and a
// second answer for it is refused.
func TestApproveOnceRunsTheCall(t *testing.T) {
	dir := canonicalDir(t)
	l := startLive(t, dir, permission.Ask, writeOnce)
	l.send(`{"id":"p","type":"prompt","message":"write it"}`)
	assert.Equal(t, true, l.response("p")["success"])
	req := l.event("approval_request")
	id, _ := req["id"].(string)
	require.NotEmpty(t, id)
	assert.Equal(t, "local", req["host"])
	assert.Equal(t, "write", req["tool"])
	assert.Equal(t, "c1", req["toolCallId"], "the model's call id, as its tool_execution_start has it")
	assert.Equal(t, map[string]any{"path": "notes.txt", "content": "hi\n"}, req["arguments"])
	assert.Equal(t, filepath.ToSlash(filepath.Join(dir, "notes.txt")), req["path"], "the canonical path")
	assert.NotContains(t, req, "command")
	assert.Contains(t, req["reason"], "ask")

	l.send(`{"id":"unknown","type":"approve","decision":"once"}`)
	l.send(`{"id":"approval-999","type":"approve","decision":"once"}`)
	l.send(`{"id":"` + id + `","type":"approve","decision":"maybe"}`)
	assert.Equal(t, `no approval request "unknown"`, l.response("unknown")["error"])
	assert.Equal(t, `no approval request "approval-999"`, l.response("approval-999")["error"])
	bad := l.response(id)
	assert.Equal(t, false, bad["success"])
	assert.Contains(t, bad["error"], "want once, session or deny")
	_, err := os.Stat(filepath.Join(dir, "notes.txt"))
	require.ErrorIs(t, err, os.ErrNotExist, "still waiting")

	l.send(`{"id":"` + id + `","type":"approve","decision":"once"}`)
	ok := l.response(id)
	assert.Equal(t, true, ok["success"], ok["error"])
	assert.Equal(t, "approve", ok["command"])
	end := l.event("tool_execution_end")
	assert.Equal(t, false, end["isError"], resultText(t, end))
	l.event("agent_end")
	b, err := os.ReadFile(filepath.Join(dir, "notes.txt"))
	require.NoError(t, err)
	assert.Equal(t, "hi\n", string(b))

	l.send(`{"id":"` + id + `","type":"approve","decision":"deny"}`)
	assert.Equal(t, `approval request "`+id+`" was already answered`, l.response(id)["error"])
}

// "deny" with a reason refuses the call: the file is untouched and the
// model reads the reason in the call's result.
func TestApproveDenyTellsTheModelWhy(t *testing.T) {
	dir := canonicalDir(t)
	l := startLive(t, dir, permission.Ask, writeOnce)
	l.send(`{"id":"p","type":"prompt","message":"write it"}`)
	req := l.event("approval_request")
	l.send(`{"id":"` + req["id"].(string) + `","type":"approve","decision":"deny","reason":"not in this directory"}`)
	end := l.event("tool_execution_end")
	assert.Equal(t, true, end["isError"])
	assert.Contains(t, resultText(t, end), "Denied by the user: not in this directory")
	l.event("agent_end")
	_, err := os.Stat(filepath.Join(dir, "notes.txt"))
	assert.ErrorIs(t, err, os.ErrNotExist, "nothing written")
}

// "session" runs the call and every identical one after it without
// asking again.
func TestApproveSessionAsksOnce(t *testing.T) {
	dir := canonicalDir(t)
	l := startLive(t, dir, permission.Ask, `{"turns":[
		{"toolCalls":[{"id":"c1","name":"write","arguments":{"path":"notes.txt","content":"one\n"}}]},
		{"toolCalls":[{"id":"c2","name":"write","arguments":{"path":"notes.txt","content":"two\n"}}]},
		{"text":"Done."}
	]}`)
	l.send(`{"id":"p","type":"prompt","message":"write it twice"}`)
	req := l.event("approval_request")
	l.send(`{"id":"` + req["id"].(string) + `","type":"approve","decision":"session"}`)
	for range 2 {
		end := l.event("tool_execution_end")
		assert.Equal(t, false, end["isError"], resultText(t, end))
	}
	l.event("agent_end")
	assert.Equal(t, 1, l.count("approval_request"), "the second write was not asked about")
	b, err := os.ReadFile(filepath.Join(dir, "notes.txt"))
	require.NoError(t, err)
	assert.Equal(t, "two\n", string(b))
}

// abort while a call waits for a decision ends the run as aborted, at
// once: the request is abandoned (approval_canceled), the file untouched,
// and an answer sent later is an error.
func TestAbortAbandonsTheRequest(t *testing.T) {
	dir := canonicalDir(t)
	l := startLive(t, dir, permission.Ask, writeOnce)
	l.send(`{"id":"p","type":"prompt","message":"write it"}`)
	req := l.event("approval_request")
	id := req["id"].(string)
	l.send(`{"id":"a","type":"abort"}`)
	assert.Equal(t, true, l.response("a")["success"])
	canceled := l.event("approval_canceled")
	assert.Equal(t, id, canceled["id"])
	end := l.event("tool_execution_end")
	assert.Equal(t, true, end["isError"])
	assert.Regexp(t, `(?i)cancel|abort`, resultText(t, end))
	l.event("agent_end")
	l.send(`{"id":"` + id + `","type":"approve","decision":"once"}`)
	assert.Equal(t, `approval request "`+id+`" was already abandoned`, l.response(id)["error"])
	_, err := os.Stat(filepath.Join(dir, "notes.txt"))
	assert.ErrorIs(t, err, os.ErrNotExist, "nothing written")
}

// The tool command passes the same gate as the model's calls; requests of
// a prompt and of a tool command wait at once and are answered in any
// order. bash's request carries its command line.
func TestToolCommandAsksToo(t *testing.T) {
	dir := canonicalDir(t)
	l := startLive(t, dir, permission.Ask, writeOnce)
	l.send(`{"id":"p","type":"prompt","message":"write it"}`)
	fromPrompt := l.event("approval_request")
	l.send(`{"id":"t","type":"tool","name":"bash","args":{"command":"echo made > made.txt"}}`)
	fromTool := l.event("approval_request")
	assert.Equal(t, "bash", fromTool["tool"])
	assert.Equal(t, "echo made > made.txt", fromTool["command"])
	assert.NotContains(t, fromTool, "path")
	require.NotEqual(t, fromPrompt["id"], fromTool["id"])

	l.send(`{"id":"` + fromTool["id"].(string) + `","type":"approve","decision":"once"}`)
	res := l.response("t")["data"].(map[string]any)
	assert.Equal(t, false, res["isError"], res)
	l.send(`{"id":"` + fromPrompt["id"].(string) + `","type":"approve","decision":"deny"}`)
	end := l.event("tool_execution_end")
	assert.Contains(t, resultText(t, end), "Denied by the user.")
	l.event("agent_end")
	b, err := os.ReadFile(filepath.Join(dir, "made.txt"))
	require.NoError(t, err)
	assert.Equal(t, "made\n", string(b))
	_, err = os.Stat(filepath.Join(dir, "notes.txt"))
	assert.ErrorIs(t, err, os.ErrNotExist)
}

// When the client's input ends, a call that waits for a decision is
// refused instead of waiting for ever, and the server exits.
func TestEndOfInputRefusesWaitingCalls(t *testing.T) {
	dir := canonicalDir(t)
	l := startLive(t, dir, permission.Ask, writeOnce)
	l.send(`{"id":"t","type":"tool","name":"write","args":{"path":"notes.txt","content":"hi\n"}}`)
	l.event("approval_request")
	l.closeInput()
	res := l.response("t")["data"].(map[string]any)
	assert.Equal(t, true, res["isError"])
	text := res["content"].([]any)[0].(map[string]any)["text"].(string)
	assert.Contains(t, text, "input has ended")
	<-l.done
	_, err := os.Stat(filepath.Join(dir, "notes.txt"))
	assert.ErrorIs(t, err, os.ErrNotExist)
}

// Without a gate's ask (auto), nothing is asked.
func TestAutoAsksNothing(t *testing.T) {
	dir := canonicalDir(t)
	l := startLive(t, dir, permission.Auto, writeOnce)
	l.send(`{"id":"p","type":"prompt","message":"write it"}`)
	l.event("agent_end")
	assert.Equal(t, 0, l.count("approval_request"))
	b, err := os.ReadFile(filepath.Join(dir, "notes.txt"))
	require.NoError(t, err)
	assert.Equal(t, "hi\n", string(b))
}
