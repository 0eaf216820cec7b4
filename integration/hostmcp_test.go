package integration

import (
	"bytes"
	"encoding/json"
	"io/fs"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pi-remote/pi-remote/env"
	"github.com/pi-remote/pi-remote/integration/netfault"
	"github.com/pi-remote/pi-remote/loop"
	"github.com/pi-remote/pi-remote/mcpclient"
	"github.com/pi-remote/pi-remote/ops"
	rssh "github.com/pi-remote/pi-remote/ops/ssh"
	ws "github.com/pi-remote/pi-remote/workspace"
)

// The reference filesystem server (@modelcontextprotocol/server-filesystem,
// from npm) as a session's server with "host": it runs on the sshd host
// through the session's connection and lists a directory that exists only
// there (sshd's own tmpfs, see isolatedServer), never on this machine;
// after the connection is reset, the next call starts it again over the
// new connection, tells the model its state is lost, and works; the
// server of the lost connection is gone from the host.
func TestMCPServerOnAHost(t *testing.T) {
	t.Parallel()
	node, script := mcpServerScript(t, "server-filesystem")
	srv := isolatedServer(t)
	proxy := netfault.Start(t, srv.Addr)
	h := rssh.New(viaProxy(t, srv, proxy), rssh.HostOptions{})
	t.Cleanup(func() { h.Close() })
	ctx := t.Context()

	// A directory made through the connection on the host's tmpfs: the
	// server's only argument.
	var out bytes.Buffer
	require.NoError(t, h.Exec(ctx, ops.Command{Script: `d=$(mktemp -d ` + workspace + `/mcp.XXXXXX) && : >"$d/only-here.txt" && echo "$d"`, Output: &out}))
	dir := strings.TrimSpace(out.String())
	require.True(t, strings.HasPrefix(dir, workspace+"/"), "%q", dir)
	_, err := os.Stat(dir)
	require.ErrorIs(t, err, fs.ErrNotExist, "the directory is the host's alone")

	e := env.New(h, env.Options{Name: "devbox", Cwd: dir, Home: dir})
	hosts := ws.Hosts{{Name: "devbox", Env: e, SSH: h}}
	m := ws.StartMCP(ctx, hosts, []mcpclient.Config{{Name: "fs", Command: node, Args: []string{script, dir}, Host: "devbox"}})
	t.Cleanup(m.Close)
	require.Empty(t, m.Failures())
	var list mcpclient.Tool
	for _, tl := range m.Tools() {
		if tl.Def.Name == "mcp__fs__list_directory" {
			list = tl
		}
	}
	require.NotEmpty(t, list.Def.Name, "the server's tools: %v", m.Status())
	listDir := func() loop.Result {
		args, err := list.Def.Validate(json.RawMessage(`{"path":"` + dir + `"}`))
		require.NoError(t, err)
		res, err := list.Def.Execute(ctx, "call", args, nil)
		require.NoError(t, err)
		return res
	}
	serverOnHost := func() []string {
		var ps bytes.Buffer
		require.NoError(t, h.Exec(ctx, ops.Command{Script: "ps -e -o pid= -o args=", Output: &ps}))
		var found []string
		for line := range strings.Lines(ps.String()) {
			if strings.Contains(line, script) && strings.HasSuffix(strings.TrimSpace(line), dir) {
				found = append(found, strings.TrimSpace(line))
			}
		}
		return found
	}

	res := listDir()
	require.False(t, res.IsError, res.Content.Text())
	assert.Contains(t, res.Content.Text(), "[FILE] only-here.txt")
	first := serverOnHost()
	require.Len(t, first, 1, "one server runs on the host")

	proxy.Reset()
	require.Eventually(t, func() bool { return m.Status()[0].State == mcpclient.Stopped }, 60*time.Second, 20*time.Millisecond,
		"the server's session ends with the connection")
	res = listDir()
	require.False(t, res.IsError, res.Content.Text())
	assert.Contains(t, res.Content.Text(), "started again")
	assert.Contains(t, res.Content.Text(), "[FILE] only-here.txt")
	assert.True(t, res.Details.(mcpclient.Details).Restarted)
	assert.Greater(t, proxy.Accepted(), int64(1), "over a new connection")
	require.Eventually(t, func() bool {
		now := serverOnHost()
		return len(now) == 1 && now[0] != first[0]
	}, 60*time.Second, 100*time.Millisecond, "the server of the lost connection ends on the host: %v", first)

	m.Close()
	require.Eventually(t, func() bool { return len(serverOnHost()) == 0 }, 60*time.Second, 100*time.Millisecond, "Close ends the server on the host")
}
