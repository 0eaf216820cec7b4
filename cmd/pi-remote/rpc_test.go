package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// rpcAnswers runs rpc with the commands as its input and returns its
// responses by id.
func rpcAnswers(t *testing.T, commands []string, args ...string) map[string]rpcAnswer {
	t.Helper()
	code, out, errOut := runCLI(t, strings.Join(commands, "\n")+"\n", append(args, "rpc")...)
	require.Equal(t, 0, code, "stdout %q stderr %q", out, errOut)
	answers := map[string]rpcAnswer{}
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		var a rpcAnswer
		require.NoError(t, json.Unmarshal([]byte(l), &a), l)
		if a.Type == "response" {
			answers[strings.Trim(string(a.ID), `"`)] = a
		}
	}
	return answers
}

type rpcAnswer struct {
	Type    string          `json:"type"`
	ID      json.RawMessage `json:"id"`
	Success bool            `json:"success"`
	Error   string          `json:"error"`
	Data    struct {
		Tools   []string `json:"tools"`
		Content []struct {
			Text string `json:"text"`
		} `json:"content"`
		IsError bool `json:"isError"`
	} `json:"data"`
}

// The tool command runs only the active tools (--tools), the ones
// get_state names: any other is an error result naming them, and does
// nothing.
func TestRPCToolCommandRunsOnlyActiveTools(t *testing.T) {
	t.Setenv("HOME", t.TempDir())
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "hello.txt"), []byte("hi\n"), 0o644))
	cases := []struct {
		name, args string
		active     bool
		want       string
	}{
		{"bash", `{"command":"touch made-by-bash"}`, false, `Tool "bash" is not active. Active tools: read, ls. Start rpc with --tools read,ls,bash to use it.`},
		{"write", `{"path":"made-by-write","content":"x"}`, false, `Tool "write" is not active. Active tools: read, ls. Start rpc with --tools read,ls,write to use it.`},
		{"edit", `{"path":"hello.txt","edits":[{"oldText":"hi","newText":"edited"}]}`, false, `Tool "edit" is not active. Active tools: read, ls. Start rpc with --tools read,ls,edit to use it.`},
		{"grep", `{"pattern":"hi"}`, false, `Tool "grep" is not active. Active tools: read, ls. Start rpc with --tools read,ls,grep to use it.`},
		{"Bash", `{"command":"touch made-by-Bash"}`, false, `Tool "Bash" not found. Available tools: read, ls.`},
		{"read", `{"path":"hello.txt"}`, true, "hi\n"},
		{"ls", `{}`, true, "hello.txt"},
	}
	commands := []string{`{"id":"state","type":"get_state"}`}
	for _, tc := range cases {
		commands = append(commands, `{"id":"`+tc.name+`","type":"tool","name":"`+tc.name+`","args":`+tc.args+`}`)
	}
	answers := rpcAnswers(t, commands, "--cwd", dir, "--tools", "read,ls")
	assert.Equal(t, []string{"read", "ls"}, answers["state"].Data.Tools)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a, ok := answers[tc.name]
			require.True(t, ok, "no answer: %v", answers)
			require.True(t, a.Success, a.Error)
			require.Len(t, a.Data.Content, 1)
			assert.Equal(t, !tc.active, a.Data.IsError, a.Data.Content[0].Text)
			assert.Equal(t, tc.want, a.Data.Content[0].Text)
		})
	}
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Len(t, entries, 1, "nothing made")
	b, err := os.ReadFile(filepath.Join(dir, "hello.txt"))
	require.NoError(t, err)
	assert.Equal(t, "hi\n", string(b), "nothing edited")
}

// With --permissions ask, rpc asks its client: a write waits for an
// approval_request's answer, and runs once approved.
func TestRPCPermissionsAskWaitsForApprove(t *testing.T) {
	t.Setenv("HOME", t.TempDir())
	dir := t.TempDir()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	var errOut bytes.Buffer
	code, done := -1, make(chan struct{})
	go func() {
		defer close(done)
		code = run([]string{"--cwd", dir, "--permissions", "ask", "--tools", "read,write", "rpc"}, inR, outW, &errOut)
		outW.Close()
	}()
	t.Cleanup(func() {
		inW.Close()
		outR.Close() // a test that failed early reads no more
		<-done
	})
	lines := bufio.NewScanner(outR)
	// next is the next line of type typ (and id, if not empty).
	next := func(typ, id string) map[string]any {
		t.Helper()
		for lines.Scan() {
			var m map[string]any
			require.NoError(t, json.Unmarshal(lines.Bytes(), &m), lines.Text())
			if m["type"] == typ && (id == "" || m["id"] == id) {
				return m
			}
		}
		require.FailNow(t, "rpc ended before "+typ+" "+id, "stderr %q", errOut.String())
		return nil
	}
	send := func(line string) {
		t.Helper()
		_, err := io.WriteString(inW, line+"\n")
		require.NoError(t, err)
	}

	send(`{"id":"w","type":"tool","name":"write","args":{"path":"notes.txt","content":"hi\n"}}`)
	req := next("approval_request", "")
	assert.Equal(t, "write", req["tool"])
	assert.Equal(t, "local", req["host"])
	_, err := os.Stat(filepath.Join(dir, "notes.txt"))
	require.ErrorIs(t, err, os.ErrNotExist, "nothing written before the answer")
	send(`{"id":"` + req["id"].(string) + `","type":"approve","decision":"once"}`)
	// The approve's response and the write's come in either order.
	answers := map[any]map[string]any{}
	for len(answers) < 2 {
		a := next("response", "")
		answers[a["id"]] = a
	}
	approved := answers[req["id"]]
	require.NotNil(t, approved, "answers: %v", answers)
	assert.Equal(t, true, approved["success"], approved["error"])
	written := answers["w"]
	require.NotNil(t, written, "answers: %v", answers)
	assert.Equal(t, false, written["data"].(map[string]any)["isError"], written)
	require.NoError(t, inW.Close())
	for lines.Scan() { // to the end of the output
	}
	<-done
	assert.Equal(t, 0, code, errOut.String())
	b, err := os.ReadFile(filepath.Join(dir, "notes.txt"))
	require.NoError(t, err)
	assert.Equal(t, "hi\n", string(b))
}

// rpc's tool command runs the settings' hooks as the agent's calls do: a
// PreToolUse hook that exits 2 blocks the call with its reason.
func TestRPCToolCommandRunsHooks(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Chdir(t.TempDir())
	dir := t.TempDir()
	hook := filepath.Join(home, "no-touch.sh")
	require.NoError(t, os.WriteFile(hook, []byte("#!/bin/sh\necho 'touch is not for this box' >&2\nexit 2\n"), 0o755))
	writeJSON(t, filepath.Join(home, ".pi-remote", "settings.json"), `{"hooks": {"PreToolUse": [{"matcher": "Bash", "command": "`+hook+`"}]}}`)
	code, out, stderr := runCLI(t, `{"id":"b","type":"tool","name":"bash","args":{"command":"touch made.txt"}}`+"\n", "--cwd", dir, "rpc")
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, out, "touch is not for this box")
	assert.Contains(t, out, `"isError":true`)
	assert.NoFileExists(t, filepath.Join(dir, "made.txt"))
}
