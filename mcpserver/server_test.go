package mcpserver

import (
	"bufio"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pi-remote/pi-remote/env"
	"github.com/pi-remote/pi-remote/ops/local"
	"github.com/pi-remote/pi-remote/tools"
)

// A line that holds no message is answered with a JSON-RPC error; a
// message is decoded.
func TestDecodeLine(t *testing.T) {
	for _, tc := range []struct {
		name string
		line inputLine
		code string
	}{
		{"too long", inputLine{tooLong: true}, `"code":-32600`},
		{"not UTF-8", inputLine{text: []byte("{\"a\":\"\xff\"}")}, `"code":-32700`},
		{"not JSON", inputLine{text: []byte("{nope")}, `"code":-32700`},
		{"batch", inputLine{text: []byte(`[{"jsonrpc":"2.0","id":1,"method":"ping"}]`)}, `"code":-32600`},
		{"not an object", inputLine{text: []byte(`3`)}, `"code":-32600`},
		{"no message, its id kept", inputLine{text: []byte(`{"id":7,"x":1}`)}, `"id":7`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			msg, answer, err := decodeLine(tc.line, 100)
			require.NoError(t, err)
			assert.Nil(t, msg)
			assert.Contains(t, string(answer), tc.code)
		})
	}
	msg, answer, err := decodeLine(inputLine{text: []byte(`{"jsonrpc":"2.0","id":1,"method":"ping"}`)}, 100)
	require.NoError(t, err)
	assert.Nil(t, answer)
	assert.NotNil(t, msg)
	msg, answer, err = decodeLine(inputLine{text: []byte("  ")}, 100)
	assert.Nil(t, msg)
	assert.Nil(t, answer)
	assert.NoError(t, err)
}

// Serve answers a tool call with the tool's result, and ends at the end
// of its input.
func TestServeCallsATool(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "a.txt"), []byte("hello\n"), 0o644))
	defs := tools.Definitions(env.New(local.New(), env.Options{Cwd: dir, Home: dir}), tools.Options{})
	active, err := tools.Select(defs, []string{"read"})
	require.NoError(t, err)
	in := strings.Join([]string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"read","arguments":{"path":"a.txt"}}}`,
	}, "\n") + "\n"
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- Serve(t.Context(), inR, outW, Options{Defs: defs, Active: active, ProgressLines: 5})
		outW.Close()
	}()
	_, err = io.WriteString(inW, in)
	require.NoError(t, err)
	r := bufio.NewReader(outR)
	var result string
	for result == "" {
		line, err := r.ReadString('\n')
		require.NoError(t, err)
		var m struct {
			ID     int             `json:"id"`
			Result json.RawMessage `json:"result"`
		}
		require.NoError(t, json.Unmarshal([]byte(line), &m), line)
		if m.ID == 2 {
			result = string(m.Result)
		}
	}
	assert.Contains(t, result, `"text":"hello\n"`)
	require.NoError(t, inW.Close())
	go io.Copy(io.Discard, r)
	assert.NoError(t, <-done)
}

func TestClientError(t *testing.T) {
	err := &ClientError{Err: io.ErrClosedPipe}
	assert.Equal(t, "mcp: the connection to the client failed: io: read/write on closed pipe", err.Error())
	assert.True(t, errors.Is(err, io.ErrClosedPipe))
}
