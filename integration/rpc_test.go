package integration

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pi-remote/pi-remote/integration/sshd"
)

// rpcClient drives `pi-remote rpc` over pipes.
type rpcClient struct {
	t     testing.TB
	cmd   *exec.Cmd
	in    io.WriteCloser
	mu    sync.Mutex
	lines []map[string]any
	more  chan struct{} // closed, and replaced, when a line arrives

	stopOnce sync.Once
}

func startRPC(t testing.TB, args ...string) *rpcClient {
	t.Helper()
	return startRPCWith(t, nil, os.Stderr, args...)
}

// startRPCWith starts `pi-remote rpc` with env added to its environment
// and its standard error going to stderr.
func startRPCWith(t testing.TB, env []string, stderr io.Writer, args ...string) *rpcClient {
	t.Helper()
	cmd := exec.Command(binary, append(args, "rpc")...)
	cmd.Env = append(os.Environ(), env...)
	in, err := cmd.StdinPipe()
	require.NoError(t, err)
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	cmd.Stderr = stderr
	require.NoError(t, cmd.Start())
	c := &rpcClient{t: t, cmd: cmd, in: in, more: make(chan struct{})}
	go func() {
		sc := bufio.NewScanner(out)
		sc.Buffer(make([]byte, 1<<20), 64<<20)
		for sc.Scan() {
			var m map[string]any
			if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
				m = map[string]any{"unparsable": sc.Text()}
			}
			c.mu.Lock()
			c.lines = append(c.lines, m)
			close(c.more)
			c.more = make(chan struct{})
			c.mu.Unlock()
		}
	}()
	t.Cleanup(c.stop)
	return c
}

// stop ends the input, as a client that is done does, and waits a moment
// for rpc to close its hosts (which tells them the results it has) before
// killing it.
func (c *rpcClient) stop() {
	c.stopOnce.Do(func() {
		c.in.Close()
		exited := make(chan struct{})
		go func() { c.cmd.Wait(); close(exited) }()
		select {
		case <-exited:
		case <-time.After(5 * time.Second):
			c.cmd.Process.Kill()
			<-exited
		}
	})
}

func (c *rpcClient) send(line string) {
	_, err := io.WriteString(c.in, line+"\n")
	require.NoError(c.t, err)
}

// response waits for the response with this id.
func (c *rpcClient) response(id string) map[string]any {
	c.t.Helper()
	return c.responseWithin(id, 30*time.Second)
}

// responseWithin waits up to d for the response with this id.
func (c *rpcClient) responseWithin(id string, d time.Duration) map[string]any {
	c.t.Helper()
	timeout := time.After(d)
	for seen := 0; ; {
		c.mu.Lock()
		for _, l := range c.lines[seen:] {
			if l["type"] == "response" && fmt.Sprint(l["id"]) == id {
				c.mu.Unlock()
				return l
			}
		}
		seen = len(c.lines)
		more := c.more
		c.mu.Unlock()
		select {
		case <-more:
		case <-timeout:
			c.t.Fatalf("no response %s within %s", id, d)
		}
	}
}

func (c *rpcClient) find(pred func(map[string]any) bool) map[string]any {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, l := range c.lines {
		if pred(l) {
			return l
		}
	}
	return nil
}

func TestRPC(t *testing.T) {
	t.Parallel()
	srv := sshd.Start(t, sshd.Options{})
	dir := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "real"), 0o755))
	require.NoError(t, os.Symlink(filepath.Join(dir, "real"), filepath.Join(dir, "link")))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "real", "chain.txt"), []byte("step 0\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("hello\n"), 0o644))
	script := filepath.Join(t.TempDir(), "script.json")
	require.NoError(t, os.WriteFile(script, []byte(`{"turns":[
		{"text":"Reading.","toolCalls":[{"id":"p1","name":"read","arguments":{"path":"notes.txt"}}]},
		{"text":"It says hello."}
	]}`), 0o644))
	c := startRPC(t, append(srv.Flags(), "--cwd", dir, "--model", "scripted/"+script)...)

	t.Run("malformed and unknown", func(t *testing.T) {
		c.send(`{"type":"get_state"`)
		c.send(`{"id":"u1","type":"teleport"}`)
		c.send("{\"id\":\"s1\",\"type\":\"get_state\"}\r")
		u := c.response("u1")
		assert.Equal(t, false, u["success"])
		assert.Contains(t, u["error"], "unknown command")
		s := c.response("s1")
		assert.Equal(t, true, s["success"], "a CR before LF is dropped; the server kept serving")
		// U+2028 inside a string is a character, not a line break.
		c.send("{\"id\":\"ls\",\"type\":\"tool\",\"name\":\"bash\",\"args\":{\"command\":\"printf '%s' 'a\u2028b'\"}}")
		ls := c.response("ls")
		assert.Equal(t, true, ls["success"])
		assert.Equal(t, "a\u2028b", ls["data"].(map[string]any)["content"].([]any)[0].(map[string]any)["text"])
		parse := c.find(func(l map[string]any) bool { return l["command"] == "parse" })
		require.NotNil(t, parse)
		assert.Equal(t, false, parse["success"])
	})

	t.Run("20 concurrent tool commands", func(t *testing.T) {
		// Eight edits of one file form a chain (each needs the one before),
		// alternating two spellings; they only all succeed in arrival order.
		var ids []string
		for i := 0; i < 8; i++ {
			p := "real/chain.txt"
			if i%2 == 1 {
				p = filepath.Join(dir, "link", "chain.txt")
			}
			id := fmt.Sprintf("e%d", i)
			ids = append(ids, id)
			args, _ := json.Marshal(map[string]any{"path": p, "edits": []map[string]string{{"oldText": fmt.Sprintf("step %d", i), "newText": fmt.Sprintf("step %d", i+1)}}})
			c.send(fmt.Sprintf(`{"id":%q,"type":"tool","name":"edit","args":%s}`, id, args))
			if i < 6 {
				id := fmt.Sprintf("r%d", i)
				ids = append(ids, id)
				c.send(fmt.Sprintf(`{"id":%q,"type":"tool","name":"read","args":{"path":"notes.txt"}}`, id))
			}
			if i < 6 {
				id := fmt.Sprintf("b%d", i)
				ids = append(ids, id)
				c.send(fmt.Sprintf(`{"id":%q,"type":"tool","name":"bash","args":{"command":"echo bash %d"}}`, id, i))
			}
		}
		require.Len(t, ids, 20)
		for _, id := range ids {
			r := c.response(id)
			require.Equal(t, true, r["success"], "%s: %v", id, r)
			data := r["data"].(map[string]any)
			assert.Equal(t, false, data["isError"], "%s: %v", id, data["content"])
		}
		assert.Equal(t, "step 8\n", readFile(t, filepath.Join(dir, "real", "chain.txt")))
		text := c.response("r3")["data"].(map[string]any)["content"].([]any)[0].(map[string]any)["text"]
		assert.Equal(t, "hello\n", text)
	})

	t.Run("abort kills a long bash", func(t *testing.T) {
		marker := fmt.Sprintf("300.%d", time.Now().UnixNano()%1000000007)
		t.Cleanup(func() { exec.Command("pkill", "-f", "sleep "+marker).Run() })
		c.send(`{"id":"long","type":"tool","name":"bash","args":{"command":"sleep ` + marker + `"}}`)
		require.Eventually(t, func() bool { return len(psMatching(t, "sleep "+marker)) > 0 }, 10*time.Second, 20*time.Millisecond)
		c.send(`{"id":"ab","type":"abort"}`)
		assert.Equal(t, true, c.response("ab")["success"])
		r := c.response("long")
		assert.Equal(t, true, r["data"].(map[string]any)["isError"])
		require.EventuallyWithT(t, func(ct *assert.CollectT) {
			assert.Empty(ct, psMatching(t, "sleep "+marker))
		}, 10*time.Second, 100*time.Millisecond)
		c.send(`{"id":"after","type":"tool","name":"bash","args":{"command":"echo still serving"}}`)
		assert.Equal(t, false, c.response("after")["data"].(map[string]any)["isError"])
	})

	t.Run("prompt with a scripted model", func(t *testing.T) {
		c.send(`{"id":"p","type":"prompt","message":"what do the notes say?"}`)
		assert.Equal(t, true, c.response("p")["success"])
		require.Eventually(t, func() bool {
			return c.find(func(l map[string]any) bool { return l["type"] == "agent_end" }) != nil
		}, 20*time.Second, 10*time.Millisecond)
		for _, typ := range []string{"agent_start", "turn_start", "message_update", "tool_execution_start", "tool_execution_end", "turn_end"} {
			assert.NotNil(t, c.find(func(l map[string]any) bool { return l["type"] == typ }), typ)
		}
		c.send(`{"id":"m","type":"get_messages"}`)
		msgs := c.response("m")["data"].(map[string]any)["messages"].([]any)
		assert.Len(t, msgs, 4, "user, assistant with the call, its result, the answer")
		last := msgs[3].(map[string]any)["content"].([]any)[0].(map[string]any)["text"]
		assert.Equal(t, "It says hello.", last)
	})

	c.in.Close()
	done := make(chan error, 1)
	go func() { done <- c.cmd.Wait() }()
	select {
	case err := <-done:
		assert.NoError(t, err, "end of input ends the server cleanly")
	case <-time.After(10 * time.Second):
		t.Fatal("rpc did not exit at end of input")
	}

}
