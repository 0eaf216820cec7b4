// Package compose tests pi-remote against the docker-compose sandbox hosts.
// The stack must be up (bash scripts/sandbox.sh up) and PI_REMOTE_SANDBOX=1
// set; .ci/run does both. Without it the tests skip, except in CI, where
// they fail.
package compose

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pi-remote/pi-remote/env"
	"github.com/pi-remote/pi-remote/loop"
	"github.com/pi-remote/pi-remote/loop/looptest"
	"github.com/pi-remote/pi-remote/ops"
	"github.com/pi-remote/pi-remote/ops/opstest"
	rssh "github.com/pi-remote/pi-remote/ops/ssh"
	"github.com/pi-remote/pi-remote/ops/ssh/reach"
	"github.com/pi-remote/pi-remote/tools"
)

func requireSandbox(t *testing.T) {
	t.Helper()
	if os.Getenv("PI_REMOTE_SANDBOX") == "1" {
		return
	}
	if os.Getenv("CI") != "" {
		t.Fatal("CI must run the compose tier: .ci/run brings the sandbox up and sets PI_REMOTE_SANDBOX=1")
	}
	t.Skip("sandbox not up: run bash scripts/sandbox.sh up and set PI_REMOTE_SANDBOX=1")
}

func sshConfigFile() string {
	_, self, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(self), "..", "..", "sandbox", "keys", "ssh_config")
}

func connect(t *testing.T, box string, tune func(*reach.Config)) *rssh.Host {
	t.Helper()
	cfg, err := reach.Resolve(box, reach.Options{SSHConfigFile: sshConfigFile()})
	require.NoError(t, err)
	if tune != nil {
		tune(&cfg)
	}
	h := rssh.New(cfg, rssh.HostOptions{})
	t.Cleanup(func() { h.Close() })
	return h
}

// scratch is a fresh directory in the box's workspace.
func scratch(t *testing.T, h *rssh.Host, name string) string {
	t.Helper()
	dir := fmt.Sprintf("/home/dev/work/%s-%d", name, time.Now().UnixNano())
	require.NoError(t, h.MkdirAll(t.Context(), dir))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		h.Exec(ctx, ops.Command{Script: "rm -rf '" + dir + "'"})
	})
	return dir
}

func TestOpsConformanceOnDevbox(t *testing.T) {
	requireSandbox(t)
	// (The image has no acl or attr package: a sandbox host as users get it.)
	opstest.Run(t, opstest.Harness{New: func(t *testing.T) (ops.Operations, string) {
		h := connect(t, "devbox", nil)
		return h, scratch(t, h, "opstest")
	}, NoAttributeTools: true})
}

type box struct {
	t    *testing.T
	defs []tools.Definition
	root string
}

func (b *box) call(name string, args any) *loop.ToolResultMessage {
	raw, err := json.Marshal(args)
	require.NoError(b.t, err)
	return loop.ExecuteTool(b.t.Context(), loop.Config{Tools: tools.WrapAll(b.defs)}, &loop.ToolCall{ID: "t", Name: name, Arguments: raw}, nil)
}

// Every tool gives on plainbox (no bash, rg or fd; csh login shell), on
// dropbox (dropbear, no SFTP server) and on bbbox (a BusyBox userland only)
// what it gives on devbox for the same files.
func TestToolsOnEveryBoxMatchDevbox(t *testing.T) {
	requireSandbox(t)
	dirName := fmt.Sprintf("same-%d", time.Now().UnixNano())
	boxes := map[string]*box{}
	names := []string{"devbox", "plainbox", "dropbox", "bbbox"}
	for _, name := range names {
		h := connect(t, name, nil)
		root := "/home/dev/work/" + dirName
		require.NoError(t, h.MkdirAll(t.Context(), root))
		t.Cleanup(func() { h.Exec(context.Background(), ops.Command{Script: "rm -rf '" + root + "'"}) })
		e := env.New(h, env.Options{Name: name, Cwd: root})
		boxes[name] = &box{t: t, defs: tools.Definitions(e, tools.Options{}), root: root}
		caps, err := e.Capabilities(t.Context())
		require.NoError(t, err)
		if name == "devbox" {
			assert.NotEmpty(t, caps.Rg)
		} else {
			if name != "dropbox" {
				assert.Empty(t, caps.Bash, "%s has no bash", name)
			}
			assert.Empty(t, caps.Rg, "%s has no rg", name)
			assert.Empty(t, caps.Fd, "%s has no fd", name)
		}
	}
	steps := []struct {
		tool string
		args map[string]any
	}{
		{"write", map[string]any{"path": "src/main.go", "content": "package main\n\n// TODO: greet\nfunc main() {}\n"}},
		{"write", map[string]any{"path": "src/util/strings.go", "content": "package util\n\n// TODO: trim\n"}},
		{"write", map[string]any{"path": "notes.md", "content": "# Notes\nnothing to do\n"}},
		// A repository whose .gitignore rg and fd honour, and so must the
		// fallbacks.
		{"write", map[string]any{"path": ".git/HEAD", "content": "ref: refs/heads/main\n"}},
		{"write", map[string]any{"path": ".gitignore", "content": "build/\n*.log\n"}},
		{"write", map[string]any{"path": "build/out.go", "content": "package build // TODO: generated\n"}},
		{"write", map[string]any{"path": "debug.log", "content": "TODO in a log\n"}},
		{"read", map[string]any{"path": "src/main.go"}},
		{"read", map[string]any{"path": "src/main.go", "offset": 3, "limit": 1}},
		{"edit", map[string]any{"path": "src/main.go", "edits": []map[string]string{{"oldText": "func main() {}", "newText": "func main() { println(\"hi\") }"}}}},
		{"grep", map[string]any{"pattern": "TODO"}},
		{"grep", map[string]any{"pattern": "todo", "ignoreCase": true, "glob": "*.go"}},
		{"find", map[string]any{"pattern": "*.go"}},
		{"find", map[string]any{"pattern": "**/*.md"}},
		{"ls", map[string]any{}},
		{"ls", map[string]any{"path": "src"}},
		{"bash", map[string]any{"command": "cd src && ls && echo done >&2; exit 3"}},
		{"read", map[string]any{"path": "missing.txt"}},
	}
	for _, s := range steps {
		var outs []string
		var errs []bool
		for _, name := range names {
			m := boxes[name].call(s.tool, s.args)
			outs = append(outs, strings.ReplaceAll(m.Content.Text(), boxes[name].root, "<root>"))
			errs = append(errs, m.IsError)
		}
		for i, name := range names[1:] {
			assert.Equal(t, outs[0], outs[i+1], "%s %v: same output on devbox and %s", s.tool, s.args, name)
			assert.Equal(t, errs[0], errs[i+1], "%s %v: same error state on devbox and %s", s.tool, s.args, name)
		}
	}
}

// internal is reachable through bastion (ProxyJump), and not directly.
func TestProxyJumpToInternal(t *testing.T) {
	requireSandbox(t)
	h := connect(t, "internal", nil)
	require.Len(t, h.Config().Jump, 1)
	var out strings.Builder
	require.NoError(t, h.Exec(t.Context(), ops.Command{Script: "hostname", Output: &out}))
	assert.Equal(t, "internal\n", out.String())

	direct := connect(t, "internal", func(c *reach.Config) { c.Jump = nil; c.ConnectTimeout = 3 * time.Second })
	_, err := direct.Connect(t.Context())
	require.Error(t, err, "internal has no route from this machine")
	var ce *reach.ConnectError
	assert.ErrorAs(t, err, &ce)
}

// One parallel batch edits the same path on devbox and devbox2: both
// files end right, each with only its own edits.
func TestParallelEditsOnTwoBoxes(t *testing.T) {
	requireSandbox(t)
	path := fmt.Sprintf("/home/dev/work/shared-%d.txt", time.Now().UnixNano())
	var hosts []tools.Host
	for _, name := range []string{"devbox", "devbox2"} {
		h := connect(t, name, nil)
		t.Cleanup(func() { h.Exec(context.Background(), ops.Command{Script: "rm -f '" + path + "'"}) })
		e := env.New(h, env.Options{Name: name, Cwd: "/home/dev/work"})
		hosts = append(hosts, tools.Host{Name: name, Defs: tools.Definitions(e, tools.Options{})})
	}
	defs, err := tools.ForHosts(hosts)
	require.NoError(t, err)
	var calls []looptest.Call
	for _, name := range []string{"devbox", "devbox2"} {
		calls = append(calls, looptest.Call{ID: "w-" + name, Name: "write", Args: map[string]any{"host": name, "path": path, "content": "a\nb\nc\n"}})
	}
	for i, name := range []string{"devbox", "devbox2", "devbox", "devbox2", "devbox", "devbox2"} {
		line := []string{"a", "a", "b", "b", "c", "c"}[i]
		calls = append(calls, looptest.Call{ID: fmt.Sprintf("e%d", i), Name: "edit", Args: map[string]any{"host": name, "path": path,
			"edits": []map[string]string{{"oldText": line + "\n", "newText": name + "-" + line + "\n"}}}})
	}
	model := looptest.New(looptest.ToolCalls(calls...), looptest.Text("done"))
	msgs, err := loop.Run(t.Context(), loop.Config{Model: model, Tools: tools.WrapAll(defs), MaxParallel: 8}, nil, []loop.Message{loop.NewUserText("go")}, nil)
	require.NoError(t, err)
	for _, m := range msgs {
		if tr, ok := m.(*loop.ToolResultMessage); ok {
			require.False(t, tr.IsError, "%s: %s", tr.ToolCallID, tr.Content.Text())
		}
	}
	for _, h := range hosts {
		m := loop.ExecuteTool(t.Context(), loop.Config{Tools: tools.WrapAll(h.Defs)}, &loop.ToolCall{ID: "r", Name: "read", Arguments: json.RawMessage(`{"path":"` + path + `"}`)}, nil)
		want := fmt.Sprintf("%[1]s-a\n%[1]s-b\n%[1]s-c\n", h.Name)
		assert.Equal(t, want, m.Content.Text(), "%s has exactly its own edits", h.Name)
	}
}

// Stopping devbox2 turns its calls into error results while devbox keeps
// working; once it is back, the next call reconnects.
func TestStoppedBoxAndRecovery(t *testing.T) {
	requireSandbox(t)
	fast := func(c *reach.Config) {
		c.KeepaliveInterval, c.KeepaliveCount, c.ConnectTimeout = 300*time.Millisecond, 2, 3*time.Second
	}
	var hosts []tools.Host
	for _, name := range []string{"devbox", "devbox2"} {
		e := env.New(connect(t, name, fast), env.Options{Name: name, Cwd: "/home/dev"})
		hosts = append(hosts, tools.Host{Name: name, Defs: tools.Definitions(e, tools.Options{})})
	}
	defs, err := tools.ForHosts(hosts)
	require.NoError(t, err)
	bash := func(host, cmd string) *loop.ToolResultMessage {
		args, _ := json.Marshal(map[string]any{"host": host, "command": cmd})
		return loop.ExecuteTool(t.Context(), loop.Config{Tools: tools.WrapAll(defs)}, &loop.ToolCall{ID: "b", Name: "bash", Arguments: args}, nil)
	}
	require.Equal(t, "devbox2\n", bash("devbox2", "hostname").Content.Text())

	container := containerOf(t, "devbox2")
	require.NoError(t, exec.Command("docker", "stop", "-t", "1", container).Run())
	restarted := false
	t.Cleanup(func() {
		if !restarted {
			exec.Command("docker", "start", container).Run()
		}
	})
	m := bash("devbox2", "hostname")
	assert.True(t, m.IsError, "a stopped host is an error result: %s", m.Content.Text())
	assert.Equal(t, "devbox\n", bash("devbox", "hostname").Content.Text(), "the other host keeps working")

	require.NoError(t, exec.Command("docker", "start", container).Run())
	restarted = true
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		m := bash("devbox2", "hostname")
		assert.False(c, m.IsError, m.Content.Text())
		assert.Equal(c, "devbox2\n", m.Content.Text())
	}, 60*time.Second, 500*time.Millisecond, "the next call after the restart reconnects")
}

func containerOf(t *testing.T, service string) string {
	out, err := exec.Command("docker", "ps", "-aq", "--filter", "label=com.docker.compose.service="+service).Output()
	require.NoError(t, err)
	id := strings.TrimSpace(string(out))
	require.NotEmpty(t, id, "no container for %s", service)
	return strings.Fields(id)[0]
}

// pi-remote run with a scripted model and two hosts: one parallel batch
// writes and edits the same path on devbox and devbox2 through the host
// argument; both files end right.
func TestScriptedRunOnTwoBoxes(t *testing.T) {
	requireSandbox(t)
	dir := t.TempDir()
	bin := filepath.Join(dir, "pi-remote")
	build := exec.Command("go", "build", "-o", bin, "../../cmd/pi-remote")
	out, err := build.CombinedOutput()
	require.NoError(t, err, "%s", out)

	path := fmt.Sprintf("/home/dev/work/run-%d.txt", time.Now().UnixNano())
	var calls []map[string]any
	for _, h := range []string{"devbox", "devbox2"} {
		calls = append(calls, map[string]any{"id": "w-" + h, "name": "write", "arguments": map[string]any{"host": h, "path": path, "content": "x\n"}})
	}
	for _, h := range []string{"devbox", "devbox2"} {
		calls = append(calls, map[string]any{"id": "e-" + h, "name": "edit", "arguments": map[string]any{"host": h, "path": path,
			"edits": []map[string]string{{"oldText": "x\n", "newText": "edited on " + h + "\n"}}}})
	}
	script, _ := json.Marshal(map[string]any{"turns": []any{
		map[string]any{"text": "Writing on both.", "toolCalls": calls},
		map[string]any{"text": "Both done."},
	}})
	scriptFile := filepath.Join(dir, "script.json")
	require.NoError(t, os.WriteFile(scriptFile, script, 0o644))

	cmd := exec.Command(bin, "--ssh-config", sshConfigFile(), "--host", "devbox=devbox", "--host", "devbox2=devbox2",
		"run", "--model", "scripted/"+scriptFile, "go")
	cmd.Env = append(os.Environ(), "HOME="+dir)
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	require.NoError(t, cmd.Run(), stderr.String())
	assert.Equal(t, "Writing on both.\nBoth done.\n", stdout.String())
	for _, h := range []string{"devbox", "devbox2"} {
		host := connect(t, h, nil)
		var got strings.Builder
		require.NoError(t, host.Exec(t.Context(), ops.Command{Script: "cat '" + path + "'; rm -f '" + path + "'", Output: &got}))
		assert.Equal(t, "edited on "+h+"\n", got.String())
	}
}
