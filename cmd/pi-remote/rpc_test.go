package main

import (
	"encoding/json"
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
