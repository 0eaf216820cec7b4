package integration

import (
	"fmt"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
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

// threeHostsOneDown starts three sshd, the third behind a proxy that
// refuses connections, and returns the CLI flags naming them a, b and c.
func threeHostsOneDown(t *testing.T) ([]string, *netfault.Proxy) {
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
	flags := []string{"--host", "a=" + servers[0].User + "@" + servers[0].Addr, "--host", "b=" + servers[1].User + "@" + servers[1].Addr,
		"--host", "c=" + servers[2].User + "@" + p.Addr, "--known-hosts", kh, "--ssh-config", "none", "--cwd", t.TempDir(), "--connect-timeout", "3s"}
	for _, s := range servers {
		flags = append(flags, "--identity", s.ClientKey)
	}
	return flags, p
}

// hostBack lets the third host of threeHostsOneDown answer again, and
// waits past the pause before a host that failed is dialled again.
func hostBack(p *netfault.Proxy) {
	p.Refuse(false)
	time.Sleep(time.Second)
}

// One of three hosts is down when the session starts: check reports it,
// rpc, mcp and run start, calls to the two live hosts succeed, calls to
// the dead one are error results naming it, and once it answers the next
// call to it succeeds.
func TestOneOfThreeHostsDown(t *testing.T) {
	t.Parallel()
	t.Run("check", func(t *testing.T) {
		t.Parallel()
		flags, _ := threeHostsOneDown(t)
		code, out, stderr := cli(t, "", append(flags, "check")...)
		assert.Equal(t, 3, code, "a host is unreachable: %s", stderr)
		assert.Contains(t, out, "name:      a\n")
		assert.Contains(t, out, "name:      b\n")
		assert.Regexp(t, `name:      c\nhost:      .*\nstate:     unreachable: ssh .*127.0.0.1`, out)
	})

	t.Run("rpc", func(t *testing.T) {
		t.Parallel()
		flags, p := threeHostsOneDown(t)
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

		hostBack(p)
		c.send(`{"id":"again","type":"tool","name":"bash","args":{"command":"echo on c","host":"c"}}`)
		r := c.response("again")
		require.Equal(t, true, r["success"], "%v", r)
		assert.Contains(t, fmt.Sprint(r["data"]), "on c")
		assert.NotContains(t, fmt.Sprint(r["data"]), "isError:true")
	})

	t.Run("mcp", func(t *testing.T) {
		t.Parallel()
		flags, p := threeHostsOneDown(t)
		client := mcp.NewClient(&mcp.Implementation{Name: "pi-remote-test", Version: "1"}, nil)
		cs, err := client.Connect(t.Context(), &mcp.CommandTransport{Command: exec.Command(binary, append(flags, "mcp")...)}, nil)
		require.NoError(t, err)
		t.Cleanup(func() { cs.Close() })
		bash := func(host string) *mcp.CallToolResult {
			res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "bash", Arguments: map[string]any{"command": "echo on " + host, "host": host}})
			require.NoError(t, err, "a tool call is never a protocol error")
			return res
		}
		for _, h := range []string{"a", "b"} {
			res := bash(h)
			assert.False(t, res.IsError, "%s: %s", h, mcpText(res))
			assert.Equal(t, "on "+h+"\n", mcpText(res))
		}
		dead := bash("c")
		assert.True(t, dead.IsError, "an error result")
		assert.Contains(t, mcpText(dead), p.Addr, "naming the host")

		hostBack(p)
		again := bash("c")
		assert.False(t, again.IsError, mcpText(again))
		assert.Equal(t, "on c\n", mcpText(again))
	})

	t.Run("run", func(t *testing.T) {
		t.Parallel()
		flags, p := threeHostsOneDown(t)
		fake := &scriptedOpenAI{turns: []openAITurn{
			{calls: [][3]string{
				{"call_a", "bash", `{"command":"echo on a","host":"a"}`},
				{"call_b", "bash", `{"command":"echo on b","host":"b"}`},
				{"call_c", "bash", `{"command":"echo on c","host":"c"}`},
			}},
			{calls: [][3]string{{"call_c2", "bash", `{"command":"echo on c","host":"c"}`}}},
			{text: "Done."},
		}}
		// The host comes back while the model thinks about the results.
		fake.onRequest = func(n int) {
			if n == 2 {
				hostBack(p)
			}
		}
		api := httptest.NewServer(fake)
		t.Cleanup(api.Close)
		code, _, stderr := cli(t, "", append(flags, "run", "--session", filepath.Join(t.TempDir(), "s.jsonl"), "--model", "openai/fake-1", "--base-url", api.URL+"/v1", "--mode", "json", "echo on every host")...)
		require.Equal(t, 0, code, stderr)
		results := map[string]string{}
		for _, req := range fake.got() {
			for _, m := range req["messages"].([]any) {
				if m := m.(map[string]any); m["role"] == "tool" {
					results[m["tool_call_id"].(string)] = fmt.Sprint(m["content"])
				}
			}
		}
		assert.Equal(t, "on a\n", results["call_a"])
		assert.Equal(t, "on b\n", results["call_b"])
		assert.Contains(t, results["call_c"], p.Addr, "an error naming the host")
		assert.Equal(t, "on c\n", results["call_c2"], "the host answers again")
	})
}
