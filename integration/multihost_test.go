package integration

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/crypto/ssh/knownhosts"

	"github.com/pi-remote/pi-remote/integration/netfault"
	"github.com/pi-remote/pi-remote/integration/sshd"
	"github.com/pi-remote/pi-remote/loop"
	"github.com/pi-remote/pi-remote/loop/looptest"
	rssh "github.com/pi-remote/pi-remote/ops/ssh"
	"github.com/pi-remote/pi-remote/tools"
)

// workspace is a path that each isolated sshd sees as its own tmpfs.
const workspace = "/srv/pi-remote-ws"

// isolatedServer runs sshd in its own mount namespace with a private tmpfs
// on workspace: the same path names a different file on each server, as on
// two machines.
func isolatedServer(t *testing.T) *sshd.Server {
	t.Helper()
	sshd.RequireRoot(t, "mount namespaces for hosts with identical paths")
	require.NoError(t, os.MkdirAll(workspace, 0o755))
	return sshd.Start(t, sshd.Options{Wrap: []string{
		"unshare", "--mount", "--propagation", "private", "/bin/sh", "-c",
		"mount -t tmpfs tmpfs " + workspace + " && exec $SSHD",
	}})
}

// Two hosts with identical paths: one parallel batch of 40 edits on each,
// at the same time, through the same path. Each host ends with exactly its
// own edits; the queues and files never mix.
func TestTwoHostsWithIdenticalPathsStayIsolated(t *testing.T) {
	t.Parallel()
	a, b := isolatedServer(t), isolatedServer(t)
	name := workspace + "/shared.txt"
	var base strings.Builder
	for i := range 40 {
		fmt.Fprintf(&base, "line %d\n", i)
	}
	envs := map[string]*toolEnv{
		"A": newToolEnv(t, host(t, a, rssh.HostOptions{}), "a", workspace),
		"B": newToolEnv(t, host(t, b, rssh.HostOptions{}), "b", workspace),
	}
	for _, te := range envs {
		te.ok("write", map[string]any{"path": name, "content": base.String()})
	}
	ka, err := envs["A"].env.Key(t.Context(), name)
	require.NoError(t, err)
	kb, err := envs["B"].env.Key(t.Context(), name)
	require.NoError(t, err)
	assert.Equal(t, ka.Path(), kb.Path(), "same canonical path")
	assert.NotEqual(t, ka, kb, "different queue keys")

	var wg sync.WaitGroup
	for label, te := range envs {
		wg.Go(func() {
			var calls []looptest.Call
			for i := range 40 {
				calls = append(calls, looptest.Call{ID: fmt.Sprintf("%s%d", label, i), Name: "edit", Args: map[string]any{
					"path": name, "edits": []map[string]string{{"oldText": fmt.Sprintf("line %d\n", i), "newText": fmt.Sprintf("%s %d\n", label, i)}},
				}})
			}
			model := looptest.New(looptest.ToolCalls(calls...), looptest.Text("done"))
			msgs, err := loop.Run(t.Context(), loop.Config{Model: model, Tools: tools.WrapAll(te.defs), MaxParallel: 16}, nil, []loop.Message{loop.NewUserText("go")}, nil)
			assert.NoError(t, err)
			for _, m := range msgs {
				if tr, ok := m.(*loop.ToolResultMessage); ok {
					assert.False(t, tr.IsError, "%s: %s", label, tr.Content.Text())
				}
			}
		})
	}
	wg.Wait()
	for label, te := range envs {
		var want strings.Builder
		for i := range 40 {
			fmt.Fprintf(&want, "%s %d\n", label, i)
		}
		assert.Equal(t, want.String(), te.ok("read", map[string]any{"path": name}), "host %s has exactly its own edits", label)
	}
	_, err = os.Stat(name)
	assert.ErrorIs(t, err, os.ErrNotExist, "neither host wrote to this machine's own "+workspace)
}

// The CLI with two named hosts whose identical paths are different files:
// the host argument picks one, the first is the default, check reports
// both.
func TestCLIWithTwoHosts(t *testing.T) {
	t.Parallel()
	dev, db := isolatedServer(t), isolatedServer(t)
	kh := filepath.Join(t.TempDir(), "known_hosts")
	require.NoError(t, os.WriteFile(kh, []byte(readFile(t, dev.KnownHosts)+readFile(t, db.KnownHosts)), 0o600))
	flags := []string{"--host", "dev=" + dev.User + "@" + dev.Addr, "--host", "db=" + db.User + "@" + db.Addr,
		"--identity", dev.ClientKey, "--identity", db.ClientKey, "--known-hosts", kh, "--ssh-config", "none", "--cwd", workspace}

	code, out, stderr := cli(t, "", append(flags, "tool", "write", `{"path":"role.txt","content":"database\n","host":"db"}`)...)
	require.Equal(t, 0, code, stderr)
	code, out, _ = cli(t, "", append(flags, "tool", "read", `{"path":"role.txt"}`)...)
	assert.Equal(t, 1, code, "not on dev, the default host: %s", out)
	code, out, stderr = cli(t, "", append(flags, "tool", "read", `{"path":"role.txt","host":"db"}`)...)
	require.Equal(t, 0, code, stderr)
	assert.Equal(t, "database\n", out)

	code, out, stderr = cli(t, "", append(flags, "check")...)
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, out, "name:      dev\n")
	assert.Contains(t, out, "name:      db\n")
}

// One of three hosts is down when the session starts: rpc and check still
// start, calls to the two live hosts succeed, calls to the dead one are
// error results naming it, and once it answers the next call to it
// succeeds.
func TestOneOfThreeHostsDown(t *testing.T) {
	t.Parallel()
	var servers []*sshd.Server
	for range 3 {
		servers = append(servers, sshd.Start(t, sshd.Options{}))
	}
	p := netfault.Start(t, servers[2].Addr)
	p.Refuse(true)
	var known strings.Builder
	for _, s := range servers[:2] {
		known.WriteString(readFile(t, s.KnownHosts))
	}
	known.WriteString(knownhosts.Line([]string{knownhosts.Normalize(p.Addr)}, servers[2].HostKeys[0]) + "\n")
	kh := filepath.Join(t.TempDir(), "known_hosts")
	require.NoError(t, os.WriteFile(kh, []byte(known.String()), 0o600))
	dir := t.TempDir()
	flags := []string{"--host", "a=" + servers[0].User + "@" + servers[0].Addr, "--host", "b=" + servers[1].User + "@" + servers[1].Addr,
		"--host", "c=" + servers[2].User + "@" + p.Addr, "--known-hosts", kh, "--ssh-config", "none", "--cwd", dir, "--connect-timeout", "3s"}
	for _, s := range servers {
		flags = append(flags, "--identity", s.ClientKey)
	}

	code, out, stderr := cli(t, "", append(flags, "check")...)
	assert.Equal(t, 3, code, "a host is unreachable: %s", stderr)
	assert.Contains(t, out, "name:      a\n")
	assert.Contains(t, out, "name:      b\n")
	assert.Regexp(t, `name:      c\nhost:      .*\nstate:     unreachable: ssh .*127.0.0.1`, out)

	c := startRPC(t, flags...)
	for i, h := range []string{"a", "b", "c"} {
		c.send(fmt.Sprintf(`{"id":"%d","type":"tool","name":"bash","args":{"command":"echo on %s","host":%q}}`, i, h, h))
	}
	for i, h := range []string{"a", "b"} {
		r := c.response(fmt.Sprint(i))
		require.Equal(t, true, r["success"], "%v", r)
		assert.Contains(t, fmt.Sprint(r["data"]), "on "+h)
	}
	dead := fmt.Sprint(c.response("2"))
	assert.Contains(t, dead, "isError:true", "an error result")
	assert.Contains(t, dead, p.Addr, "naming the host")

	p.Refuse(false)
	time.Sleep(time.Second) // past the pause before a host is dialled again
	c.send(`{"id":"again","type":"tool","name":"bash","args":{"command":"echo on c","host":"c"}}`)
	r := c.response("again")
	require.Equal(t, true, r["success"], "%v", r)
	assert.Contains(t, fmt.Sprint(r["data"]), "on c")
	assert.NotContains(t, fmt.Sprint(r["data"]), "isError:true")
}
