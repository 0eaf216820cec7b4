package workspace

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pi-remote/pi-remote/agent/permission"
	"github.com/pi-remote/pi-remote/loop"
	"github.com/pi-remote/pi-remote/tools"
)

// gated opens two local hosts, a and b, over dir, with gate in front of
// their tools, and returns a function that runs one call.
func gated(t *testing.T, dir string, gate *permission.Gate) func(name, args string) *loop.ToolResultMessage {
	t.Helper()
	hs, err := OpenHosts(t.Context(), HostOptions{Cwd: dir, Hosts: []string{"a=local", "b=local"}}, OneShot, nil, nil)
	require.NoError(t, err)
	w, err := Open(t.Context(), hs, Options{Gate: gate})
	require.NoError(t, err)
	t.Cleanup(w.Close)
	return func(name, args string) *loop.ToolResultMessage {
		return tools.Call(t.Context(), w.Config, name, json.RawMessage(args), nil)
	}
}

func text(m *loop.ToolResultMessage) string {
	s := ""
	for _, c := range m.Content {
		if tc, ok := c.(*loop.Text); ok {
			s += tc.Text
		}
	}
	return s
}

// Path rules match the canonical path, however the model spells it: ./a,
// x/../a, an absolute path, a symlinked directory, a file not made yet.
func TestGateMatchesTheCanonicalPath(t *testing.T) {
	dir, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "app"), 0o755))
	require.NoError(t, os.Symlink(filepath.Join(dir, "app"), filepath.Join(dir, "link")))
	deny, err := permission.ParseRule("write(**/.env)")
	require.NoError(t, err)
	denyRead, err := permission.ParseRule("read(app/secret*)")
	require.NoError(t, err)
	call := gated(t, dir, permission.NewGate(permission.Policy{Deny: []permission.Rule{deny, denyRead}}))
	for _, p := range []string{".env", "./.env", "app/../.env", "app/.env", "link/.env", filepath.Join(dir, "link", "x", "..", ".env")} {
		args, _ := json.Marshal(map[string]string{"path": p, "content": "K=1\n"})
		res := call("write", string(args))
		assert.True(t, res.IsError, p)
		assert.Contains(t, text(res), "denied by rule `write(**/.env)`", p)
	}
	_, err = os.Stat(filepath.Join(dir, ".env"))
	assert.ErrorIs(t, err, os.ErrNotExist, "no .env was written")
	_, err = os.Stat(filepath.Join(dir, "app", ".env"))
	assert.ErrorIs(t, err, os.ErrNotExist)

	res := call("write", `{"path":"app/env.txt","content":"fine\n"}`)
	assert.False(t, res.IsError, text(res))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "app", "secret.key"), []byte("s\n"), 0o600))
	res = call("read", `{"path":"link/secret.key"}`)
	assert.True(t, res.IsError)
	assert.Contains(t, text(res), "read(app/secret*)", "a relative pattern is read against the working directory, canonical")
}

// A read-only host refuses edit; the same edit on the other host of the
// session runs.
func TestGateReadOnlyHostOfTwo(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "f.txt"), []byte("one\n"), 0o644))
	call := gated(t, dir, permission.NewGate(permission.Policy{Hosts: map[string]permission.Mode{"a": permission.ReadOnly}}))
	res := call("edit", `{"path":"f.txt","host":"a","edits":[{"oldText":"one","newText":"two"}]}`)
	assert.True(t, res.IsError)
	assert.Contains(t, text(res), "host a is read-only")
	assert.Equal(t, "one\n", readFile(t, filepath.Join(dir, "f.txt")))
	res = call("edit", `{"path":"f.txt","host":"b","edits":[{"oldText":"one","newText":"two"}]}`)
	assert.False(t, res.IsError, text(res))
	assert.Equal(t, "two\n", readFile(t, filepath.Join(dir, "f.txt")))
	res = call("bash", `{"command":"echo hi","host":"a"}`)
	assert.True(t, res.IsError)
	assert.Contains(t, text(res), "read-only")
	res = call("read", `{"path":"f.txt","host":"a"}`)
	assert.False(t, res.IsError, "reads run on a read-only host")
}

// In ask mode, the asker hears of the call (host, tool, canonical path)
// and its answer decides: deny with a reason tells the model the reason,
// "session" lets identical calls run without asking again. With nobody to
// ask, the call is refused and the refusal says which rule would allow it.
func TestGateAsks(t *testing.T) {
	dir, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	gate := permission.NewGate(permission.Policy{Mode: permission.Ask})
	call := gated(t, dir, gate)

	res := call("bash", `{"command":"echo hi > out.txt"}`)
	assert.True(t, res.IsError)
	assert.Contains(t, text(res), "nobody is here to approve it")
	assert.Contains(t, text(res), "bash(echo *)")
	assert.NoFileExists(t, filepath.Join(dir, "out.txt"))

	var mu sync.Mutex
	var asked []permission.Request
	answer := permission.Answer{Decision: permission.Deny, Reason: "not on Fridays"}
	gate.SetAsker(func(ctx context.Context, r permission.Request) (permission.Answer, error) {
		mu.Lock()
		defer mu.Unlock()
		asked = append(asked, r)
		return answer, nil
	})
	res = call("write", `{"path":"w.txt","content":"x\n","host":"b"}`)
	assert.True(t, res.IsError)
	assert.Equal(t, "write: Denied by the user: not on Fridays", text(res))
	assert.NoFileExists(t, filepath.Join(dir, "w.txt"))
	require.Len(t, asked, 1)
	assert.Equal(t, "b", asked[0].Host)
	assert.Equal(t, filepath.Join(dir, "w.txt"), asked[0].Path)
	assert.Equal(t, "host b asks before write", asked[0].Reason)

	answer = permission.Answer{Decision: permission.Session}
	res = call("bash", `{"command":"echo once >> log.txt","host":"a"}`)
	assert.False(t, res.IsError, text(res))
	res = call("bash", `{"command":"echo once >> log.txt","host":"a"}`)
	assert.False(t, res.IsError, text(res))
	assert.Len(t, asked, 2, "the second identical call was not asked about")
	assert.Equal(t, "once\nonce\n", readFile(t, filepath.Join(dir, "log.txt")))
	res = call("bash", `{"command":"echo once >> log.txt","host":"b"}`)
	assert.False(t, res.IsError)
	assert.Len(t, asked, 3, "the same line on another host is asked about")
	res = call("read", `{"path":"log.txt"}`)
	assert.False(t, res.IsError)
	assert.Len(t, asked, 3, "reads run without asking")
}

func readFile(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	require.NoError(t, err)
	return string(b)
}

// The system prompt says each host's mode once any is not auto, so the
// model does not spend calls on what will be refused; with every host in
// auto it says nothing of permissions.
func TestSystemPromptTellsHostModes(t *testing.T) {
	dir := t.TempDir()
	open := func(p permission.Policy) string {
		hs, err := OpenHosts(t.Context(), HostOptions{Cwd: dir, Hosts: []string{"a=local", "b=local"}}, OneShot, nil, nil)
		require.NoError(t, err)
		w, err := Open(t.Context(), hs, Options{Gate: permission.NewGate(p)})
		require.NoError(t, err)
		defer w.Close()
		return w.Config.SystemPrompt(w.Config.Tools)
	}
	prompt := open(permission.Policy{Mode: permission.Ask, Hosts: map[string]permission.Mode{"a": permission.ReadOnly}})
	assert.Contains(t, prompt, `Permission mode on "a": read-only: write, edit and the other tools that change files are refused`)
	assert.Contains(t, prompt, `Permission mode on "b": ask: write, edit, bash and the other tools that change files wait for the user's approval`)
	assert.NotContains(t, open(permission.Policy{}), "Permission mode")
}

// A mode changed during the session reaches the system prompt of the
// next run.
func TestPermissionsChangedRetellsModes(t *testing.T) {
	hs, err := OpenHosts(t.Context(), HostOptions{Cwd: t.TempDir()}, OneShot, nil, nil)
	require.NoError(t, err)
	gate := permission.NewGate(permission.Policy{Mode: permission.Ask})
	w, err := Open(t.Context(), hs, Options{Gate: gate})
	require.NoError(t, err)
	defer w.Close()
	before := w.Config.SystemPrompt
	assert.Contains(t, before(w.Config.Tools), `Permission mode on "local": ask`)
	gate.SetHostMode("local", permission.ReadOnly, "the editor")
	require.NoError(t, w.PermissionsChanged())
	assert.Contains(t, w.Config.SystemPrompt(w.Config.Tools), `Permission mode on "local": read-only`)
	assert.Contains(t, before(w.Config.Tools), `Permission mode on "local": ask`, "a run under way keeps the prompt it had")
}
