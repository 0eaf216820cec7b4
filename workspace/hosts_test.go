package workspace

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pi-remote/pi-remote/agent"
)

// Each host warms fewer command servers the more hosts a session has (each
// one is a login shell on its host), a full pool for one or two hosts and
// never none; one-shot commands warm one.
func TestWarmServersShrinkWithHosts(t *testing.T) {
	var o HostOptions
	for n, want := range map[int]int{1: 0, 2: 0, 3: 5, 4: 4, 8: 2, 16: 1, 200: 1} {
		assert.Equal(t, want, o.sshOptions(n, Session).WarmServers, "%d hosts", n)
	}
	assert.Equal(t, 1, o.sshOptions(1, OneShot).WarmServers, "one-shot")
	assert.Equal(t, 1, o.sshOptions(50, OneShot).WarmServers, "one-shot, many hosts")
}

func TestOpenHostsLocal(t *testing.T) {
	dir := t.TempDir()
	hs, err := OpenHosts(t.Context(), HostOptions{Cwd: dir}, Session, nil, nil)
	require.NoError(t, err)
	defer hs.Close()
	require.Len(t, hs, 1)
	assert.Equal(t, "local", hs[0].Name)
	assert.Equal(t, "local", hs[0].Where())
	cwd, err := hs[0].Env.Cwd(t.Context())
	require.NoError(t, err)
	assert.Equal(t, dir, cwd)
	assert.False(t, hs.Lost(t.Context()))

	hs, err = OpenHosts(t.Context(), HostOptions{Cwd: dir, Hosts: []string{"a=local", "b=local"}}, OneShot, nil, nil)
	require.NoError(t, err)
	defer hs.Close()
	assert.Equal(t, "a", hs[0].Name)
	assert.Equal(t, "b", hs[1].Name)
	defs, err := hs.Definitions(nil)
	require.NoError(t, err)
	assert.Contains(t, string(defs[0].Parameters), `"host"`, "several hosts: each tool takes a host")
}

// What the options cannot mean is a usage error; a host that cannot be
// reached is a connection error when it is the only one.
func TestOpenHostsErrors(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "f")
	require.NoError(t, os.WriteFile(file, nil, 0o644))
	for name, o := range map[string]HostOptions{
		"missing cwd":     {Cwd: filepath.Join(dir, "nope")},
		"cwd not a dir":   {Cwd: file},
		"name used twice": {Cwd: dir, Hosts: []string{"a=local", "a=local"}},
		"short lease":     {Hosts: []string{"nobody@127.0.0.1:1"}, SSHConfig: "none", Reattach: time.Minute, LeaseTTL: time.Second},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := OpenHosts(t.Context(), o, OneShot, nil, nil)
			var ue *UsageError
			require.ErrorAs(t, err, &ue)
		})
	}
	unreachable := HostOptions{Hosts: []string{"nobody@127.0.0.1:1"}, SSHConfig: "none", ConnectTimeout: 2 * time.Second, KnownHosts: filepath.Join(dir, "known_hosts")}
	_, err := OpenHosts(t.Context(), unreachable, OneShot, nil, nil)
	var ce *ConnectionError
	require.ErrorAs(t, err, &ce)
	assert.True(t, IsConnectionFailure(err))
}

// One host of several that cannot be reached is kept, down, and told;
// the workspace describes it so in the system prompt.
func TestOpenHostsKeepsAnUnreachableOneOfSeveral(t *testing.T) {
	dir := t.TempDir()
	var warn bytes.Buffer
	o := HostOptions{Cwd: dir, Hosts: []string{"here=local", "gone=nobody@127.0.0.1:1"}, SSHConfig: "none", ConnectTimeout: 2 * time.Second, KnownHosts: filepath.Join(dir, "known_hosts")}
	hs, err := OpenHosts(t.Context(), o, Session, nil, &warn)
	require.NoError(t, err)
	require.Len(t, hs, 2)
	assert.Nil(t, hs[0].Down)
	require.Error(t, hs[1].Down)
	assert.Contains(t, warn.String(), "pi-remote: host gone is unreachable (")

	w, err := Open(t.Context(), hs, Options{Active: []string{"read"}, MaxTurns: 1})
	require.NoError(t, err)
	defer w.Close()
	assert.Equal(t, []string{"here", "gone"}, w.HostNames())
	assert.NotEmpty(t, w.Infos[1].Unreachable)
	assert.Contains(t, w.Config.SystemPrompt(w.Config.Tools), "gone")

	require.NoError(t, w.SetDefault(t.Context(), "gone"))
	assert.Equal(t, "gone", w.DefaultHost())
	assert.Equal(t, []string{"gone", "here"}, w.HostNames())
	assert.Error(t, w.SetDefault(t.Context(), "elsewhere"))
}

// The session identity names the host and the working directory.
func TestWhere(t *testing.T) {
	dir := t.TempDir()
	hs, err := OpenHosts(t.Context(), HostOptions{Cwd: dir}, Session, nil, nil)
	require.NoError(t, err)
	w, err := Open(t.Context(), hs, Options{Active: []string{"read"}, MaxTurns: 1})
	require.NoError(t, err)
	defer w.Close()
	got := w.Where(agent.Where{Resume: "abc"})
	assert.Equal(t, agent.Where{Host: "local", Cwd: dir, Resume: "abc"}, got)

	hs, err = OpenHosts(t.Context(), HostOptions{Cwd: dir, Hosts: []string{"a=local", "b=local"}}, Session, nil, nil)
	require.NoError(t, err)
	w, err = Open(t.Context(), hs, Options{Active: []string{"read"}, MaxTurns: 1})
	require.NoError(t, err)
	defer w.Close()
	assert.Equal(t, "a=local,b=local", w.Where(agent.Where{}).Host)
}

func TestOpenRefusesAnUnknownTool(t *testing.T) {
	hs, err := OpenHosts(t.Context(), HostOptions{Cwd: t.TempDir()}, Session, nil, nil)
	require.NoError(t, err)
	_, err = Open(t.Context(), hs, Options{Active: []string{"read", "teleport"}, MaxTurns: 1})
	var ue *UsageError
	require.ErrorAs(t, err, &ue)
	assert.Contains(t, err.Error(), "--tools: unknown tool \"teleport\"")
}
