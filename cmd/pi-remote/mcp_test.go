package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// mcpProcess is `pi-remote mcp` running in the test, spoken to line by line.
type mcpProcess struct {
	in     *io.PipeWriter
	out    *bufio.Reader
	stderr *bytes.Buffer
	done   chan struct{}
	exit   int
}

func startMCP(t *testing.T, args ...string) *mcpProcess {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	p := &mcpProcess{in: inW, out: bufio.NewReader(outR), stderr: &bytes.Buffer{}, done: make(chan struct{})}
	go func() {
		defer close(p.done)
		p.exit = run(append(args, "mcp"), inR, outW, p.stderr)
		outW.Close()
	}()
	t.Cleanup(func() { p.end() })
	return p
}

// end closes the server's input, reads what it still writes, and returns
// its exit code once it has ended.
func (p *mcpProcess) end() int {
	p.in.Close()
	io.Copy(io.Discard, p.out)
	<-p.done
	return p.exit
}

// send writes one line.
func (p *mcpProcess) send(t *testing.T, line string) {
	t.Helper()
	_, err := io.WriteString(p.in, line+"\n")
	require.NoError(t, err)
}

// mcpMessage is a line the server wrote.
type mcpMessage struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// next reads the next answer (a line with an id or an error), skipping
// the server's notifications.
func (p *mcpProcess) next(t *testing.T) mcpMessage {
	t.Helper()
	for {
		line, err := p.out.ReadBytes('\n')
		if err != nil {
			<-p.done
			require.NoError(t, err, "the server ended with exit code %d: %s", p.exit, p.stderr)
		}
		var m mcpMessage
		require.NoError(t, json.Unmarshal(line, &m), "%s", line)
		if m.Method == "" {
			return m
		}
	}
}

// call sends a request and returns its answer.
func (p *mcpProcess) call(t *testing.T, id int, method, params string) mcpMessage {
	t.Helper()
	if params == "" {
		params = "{}"
	}
	p.send(t, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":%q,"params":%s}`, id, method, params))
	m := p.next(t)
	require.Equal(t, fmt.Sprint(id), string(m.ID), "answer to %s", method)
	return m
}

const mcpInitialize = `{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"test","version":"1"}}`

// A line that is no JSON-RPC message gets a JSON-RPC error answer and the
// server serves on: a parse error (-32700, id null) for what is not JSON,
// an invalid request (-32600, with the id when it has a valid one) for
// JSON that is no message. The server never ends on one, nor prints usage.
func TestMCPServesOnAfterMalformedLines(t *testing.T) {
	t.Setenv("HOME", t.TempDir())
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "hello.txt"), []byte("hi\n"), 0o644))
	p := startMCP(t, "--cwd", dir)

	p.send(t, "garbage")
	first := p.next(t)
	assert.Equal(t, "null", string(first.ID))
	require.NotNil(t, first.Error)
	assert.Equal(t, -32700, first.Error.Code)
	init := p.call(t, 1, "initialize", mcpInitialize)
	require.Nil(t, init.Error)
	assert.Contains(t, string(init.Result), `"serverInfo"`)
	p.send(t, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	list := p.call(t, 2, "tools/list", "")
	require.Nil(t, list.Error)
	assert.Contains(t, string(list.Result), `"name":"read"`)

	cases := []struct {
		name, line string
		code       int
		id         string
	}{
		{"not JSON", "garbage", -32700, "null"},
		{"unfinished JSON", `{"jsonrpc":"2.0","id":5,"method":"ping"`, -32700, "null"},
		{"two values on a line", `{"jsonrpc":"2.0","id":5,"method":"ping"} {}`, -32700, "null"},
		{"invalid UTF-8", "{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"ping\",\"params\":{\"x\":\"\xff\xfe\"}}", -32700, "null"},
		{"an empty array", `[]`, -32600, "null"},
		{"a batch", `[{"jsonrpc":"2.0","id":5,"method":"ping"}]`, -32600, "null"},
		{"a number", `5`, -32600, "null"},
		{"a string", `"ping"`, -32600, "null"},
		{"null", `null`, -32600, "null"},
		{"no jsonrpc member", `{"id":5,"method":"ping"}`, -32600, "5"},
		{"wrong jsonrpc version", `{"jsonrpc":"1.0","id":"five","method":"ping"}`, -32600, `"five"`},
		{"neither method nor id", `{"jsonrpc":"2.0"}`, -32600, "null"},
		{"an object id", `{"jsonrpc":"2.0","id":{},"method":"ping"}`, -32600, "null"},
		{"a method that is no string", `{"jsonrpc":"2.0","id":5,"method":5}`, -32600, "5"},
		{"a huge line", `{"jsonrpc":"2.0","id":5,"method":"ping","params":{"x":"` + strings.Repeat("x", 17<<20) + `"}}`, -32600, "null"},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p.send(t, tc.line)
			got := p.next(t)
			require.NotNil(t, got.Error, "an error answer")
			assert.Equal(t, tc.code, got.Error.Code, got.Error.Message)
			assert.Equal(t, tc.id, string(got.ID))
			ping := p.call(t, 100+i, "ping", "")
			assert.Nil(t, ping.Error, "the server serves on")
		})
	}

	read := p.call(t, 3, "tools/call", `{"name":"read","arguments":{"path":"hello.txt"}}`)
	require.Nil(t, read.Error)
	assert.Contains(t, string(read.Result), `"text":"hi\n"`)

	assert.Equal(t, 0, p.end(), "end of input ends the server; stderr: %s", p.stderr)
	assert.Empty(t, p.stderr.String(), "no usage text")
}

// The server serves only the tools of --tools: it lists them alone, and a
// call of another is an error that runs nothing.
func TestMCPServesOnlyActiveTools(t *testing.T) {
	t.Setenv("HOME", t.TempDir())
	dir := t.TempDir()
	p := startMCP(t, "--cwd", dir, "--tools", "read,ls")
	require.Nil(t, p.call(t, 1, "initialize", mcpInitialize).Error)
	p.send(t, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	list := p.call(t, 2, "tools/list", "")
	require.Nil(t, list.Error)
	var tools struct {
		Tools []struct{ Name string } `json:"tools"`
	}
	require.NoError(t, json.Unmarshal(list.Result, &tools))
	var names []string
	for _, tl := range tools.Tools {
		names = append(names, tl.Name)
	}
	assert.ElementsMatch(t, []string{"read", "ls"}, names)
	bash := p.call(t, 3, "tools/call", `{"name":"bash","arguments":{"command":"touch made-by-bash"}}`)
	require.NotNil(t, bash.Error, "%s", bash.Result)
	assert.Contains(t, bash.Error.Message, `unknown tool "bash"`)
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	assert.Empty(t, entries, "nothing ran")
}

// failingWriter is a stdout whose reader has gone.
type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, io.ErrClosedPipe }

// A server whose output fails ends with the connection's exit code and
// its reason, never the usage text.
func TestMCPFailingOutputIsNoUsageError(t *testing.T) {
	t.Setenv("HOME", t.TempDir())
	inR, inW := io.Pipe()
	t.Cleanup(func() { inW.Close() })
	var errOut bytes.Buffer
	done := make(chan int, 1)
	go func() { done <- run([]string{"--cwd", t.TempDir(), "mcp"}, inR, failingWriter{}, &errOut) }()
	_, err := io.WriteString(inW, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":`+mcpInitialize+"}\n")
	require.NoError(t, err)
	assert.Equal(t, exitConnection, <-done)
	assert.Contains(t, errOut.String(), "closed pipe")
	assert.NotContains(t, errOut.String(), "usage")
}
