package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func runCLI(t *testing.T, stdin string, args ...string) (int, string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := run(args, strings.NewReader(stdin), &out, &errOut)
	return code, out.String(), errOut.String()
}

func TestToolCommand(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "hello.txt"), []byte("hi there\n"), 0o644))

	code, out, _ := runCLI(t, "", "--cwd", dir, "tool", "read", `{"path":"hello.txt"}`)
	assert.Equal(t, 0, code)
	assert.Equal(t, "hi there\n", out)

	code, out, _ = runCLI(t, `{"path":"hello.txt"}`, "tool", "read", "-", "--cwd", dir, "--json")
	assert.Equal(t, 0, code)
	var res struct {
		Content []map[string]any `json:"content"`
		Details map[string]any   `json:"details"`
		IsError bool             `json:"isError"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &res))
	assert.False(t, res.IsError)
	assert.Equal(t, "text", res.Content[0]["type"])
	assert.Equal(t, "hi there\n", res.Content[0]["text"])
	assert.Equal(t, filepath.Join(dir, "hello.txt"), res.Details["path"])

	tests := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"tool error", []string{"tool", "read", `{"path":"missing.txt"}`}, 1, "File not found"},
		{"malformed JSON", []string{"tool", "read", `{"path":`}, 1, "not valid JSON"},
		{"wrong type", []string{"tool", "read", `{"path":1}`}, 1, `field "path"`},
		{"missing field", []string{"tool", "write", `{"path":"x"}`}, 1, "content"},
		{"non-zero exit", []string{"tool", "bash", `{"command":"exit 4"}`}, 1, "code 4"},
		{"unknown tool", []string{"tool", "nope", `{}`}, 2, `unknown tool "nope"`},
		{"no tool name", []string{"tool"}, 2, "accepts between 1 and 2 arg"},
		{"unknown flag", []string{"tool", "read", "--frobnicate"}, 2, "unknown flag"},
		{"unknown command", []string{"launch"}, 2, "unknown command"},
		{"bad cwd", []string{"--cwd", filepath.Join(dir, "nope"), "tool", "ls"}, 2, "--cwd"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := runCLI(t, "", append([]string{"--cwd", dir}, tc.args...)...)
			assert.Equal(t, tc.code, code, "stdout %q stderr %q", out, errOut)
			assert.Contains(t, out+errOut, tc.want)
		})
	}
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	assert.Len(t, entries, 1, "failed calls created nothing")
}

func TestToolsCommand(t *testing.T) {
	code, out, _ := runCLI(t, "", "tools", "--json")
	require.Equal(t, 0, code)
	var list []struct {
		Name       string         `json:"name"`
		Parameters map[string]any `json:"parameters"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &list))
	var names []string
	for _, l := range list {
		names = append(names, l.Name)
		assert.Equal(t, "object", l.Parameters["type"], l.Name)
	}
	assert.Equal(t, []string{"read", "bash", "edit", "write", "grep", "find", "ls"}, names)

	code, out, _ = runCLI(t, "", "tools")
	assert.Equal(t, 0, code)
	assert.Contains(t, out, "edit   Make precise replacements in files")
}

func TestHelp(t *testing.T) {
	code, out, _ := runCLI(t, "", "--help")
	assert.Equal(t, 0, code)
	assert.Contains(t, out, "tool")
	assert.Contains(t, out, "--cwd")
	assert.Contains(t, out, "remote hosts\n(--host) over one persistent SSH connection", "no promise of a backend that exists")
	assert.Contains(t, out, "version")
	code, out, _ = runCLI(t, "", "tool", "--help")
	assert.Equal(t, 0, code)
	assert.Contains(t, out, "Exit status: 0 success, 1 the tool returned an error result, 2 usage error")
}

func TestVersion(t *testing.T) {
	code, out, _ := runCLI(t, "", "version")
	require.Equal(t, 0, code)
	assert.Regexp(t, `^pi-remote \S+ .*`+regexp.QuoteMeta(runtime.Version()+" "+runtime.GOOS+"/"+runtime.GOARCH)+"\n$", out)

	version = "v1.2.3"
	t.Cleanup(func() { version = "" })
	_, out, _ = runCLI(t, "", "version")
	assert.True(t, strings.HasPrefix(out, "pi-remote v1.2.3 "), out)
}
