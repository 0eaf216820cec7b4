package mcpclient_test

import (
	"context"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pi-remote/pi-remote/loop"
	"github.com/pi-remote/pi-remote/mcpclient"
	"github.com/pi-remote/pi-remote/ops"
	"github.com/pi-remote/pi-remote/ops/local"
	rssh "github.com/pi-remote/pi-remote/ops/ssh"
	"github.com/pi-remote/pi-remote/ops/ssh/sshtest"
)

// A server started through a host's Spawner (this machine's, and one
// over SSH to a server on this machine): its tools answer, a crash is
// followed by a restart that tells the model its state is lost, and
// Close leaves neither it nor its child.
func TestSpawnTransport(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc")
	}
	srv := sshtest.Start(t, sshtest.Options{})
	remote := rssh.New(srv.Config(), rssh.HostOptions{})
	t.Cleanup(func() { remote.Close() })
	for name, sp := range map[string]ops.Spawner{"local": local.New(), "ssh": remote} {
		t.Run(name, func(t *testing.T) {
			cfg, _ := testServer(t, "t")
			cfg.Host = "h"
			connect := func(_ context.Context, c mcpclient.Config) (mcp.Transport, error) {
				return &mcpclient.SpawnTransport{Spawn: sp.Spawn, Command: c.Command, Args: c.Args, Env: c.Env, StopGrace: time.Second}, nil
			}
			m := mcpclient.Start(t.Context(), []mcpclient.Config{cfg}, mcpclient.Options{Connect: connect})
			t.Cleanup(m.Close)
			require.Empty(t, m.Failures())
			tools := map[string]mcpclient.Tool{}
			for _, tl := range m.Tools() {
				tools[tl.Def.Name] = tl
			}
			assert.Equal(t, "echo: hi", call(t, t.Context(), tools["mcp__t__echo"], `{"text":"hi"}`, nil).Content.Text())

			res := call(t, t.Context(), tools["mcp__t__crash"], `{}`, nil)
			assert.True(t, res.IsError)
			assert.Contains(t, res.Content.Text(), "testserver: out of cheese", "its stderr came back over the host's channel")
			require.Eventually(t, func() bool { return m.Status()[0].State == mcpclient.Stopped }, 30*time.Second, 10*time.Millisecond)
			res = call(t, t.Context(), tools["mcp__t__pid"], `{}`, nil)
			require.False(t, res.IsError, res.Content.Text())
			require.Len(t, res.Content, 2)
			assert.Contains(t, res.Content[0].(*loop.Text).Text, "was started again before this call")

			server, err := strconv.Atoi(res.Content[1].(*loop.Text).Text)
			require.NoError(t, err)
			child, err := strconv.Atoi(call(t, t.Context(), tools["mcp__t__spawn"], `{}`, nil).Content.Text())
			require.NoError(t, err)
			require.False(t, gone(server))
			require.False(t, gone(child))
			m.Close()
			require.Eventually(t, func() bool { return gone(server) && gone(child) }, 30*time.Second, 10*time.Millisecond, "the server or its child runs on")
		})
	}
}
