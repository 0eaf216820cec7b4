package integration

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pi-remote/pi-remote/integration/netfault"
	"github.com/pi-remote/pi-remote/integration/sshd"
	"github.com/pi-remote/pi-remote/ops"
	rssh "github.com/pi-remote/pi-remote/ops/ssh"
	"github.com/pi-remote/pi-remote/ops/ssh/reach"
)

// A partition that heals after the client gave up on its connection lets
// the requests it held reach the host late, on a connection sshd still
// thinks alive: a write the client settled as absent and wrote again (then
// wrote anew), and a command it started again, collected and forgot. Those
// late requests act on nothing: the file keeps its last content and the
// command ran once.
func TestRequestsDeliveredLateActOnNothing(t *testing.T) {
	t.Parallel()
	srv := sshd.Start(t, sshd.Options{})
	p := netfault.Start(t, srv.Addr)
	cfg := viaProxy(t, srv, p)
	cfg.KeepaliveInterval, cfg.KeepaliveCount = 300*time.Millisecond, 3
	h := rssh.New(cfg, rssh.HostOptions{ReattachTimeout: time.Minute})
	t.Cleanup(func() { h.Close() })
	dir := t.TempDir()
	name := filepath.Join(dir, "file")
	ctx := t.Context()
	require.NoError(t, h.WriteFile(ctx, name, strings.NewReader("v0"), ops.WriteOptions{}))

	heal := p.Partition()
	t.Cleanup(heal)
	accepted := p.Accepted()
	require.NoError(t, h.WriteFile(ctx, name, strings.NewReader("v1"), ops.WriteOptions{}), "written again over a new connection")
	assert.Greater(t, p.Accepted(), accepted, "over a new connection")
	require.NoError(t, h.WriteFile(ctx, name, strings.NewReader("v2"), ops.WriteOptions{}))

	log := filepath.Join(dir, "runs.log")
	heal2 := p.Partition()
	t.Cleanup(heal2)
	var out bytes.Buffer
	require.NoError(t, h.Exec(ctx, ops.Command{Script: "echo ran >>" + log + "; echo done", Output: &out}))
	assert.Equal(t, "done\n", out.String())
	// The next command carries the first one's forget: its files go.
	require.NoError(t, h.Exec(ctx, ops.Command{Script: "true"}))

	heal()
	heal2()
	// sshd hands the old connections' requests to their servers now.
	time.Sleep(3 * time.Second)
	got, err := os.ReadFile(name)
	require.NoError(t, err)
	assert.Equal(t, "v2", string(got), "a late write landed")
	runs, err := os.ReadFile(log)
	require.NoError(t, err)
	assert.Equal(t, "ran\n", string(runs), "the command ran again")
}

// A connection the client declares dead (its keepalives go unanswered) is
// reset, not closed: what the kernel still holds for the host is dropped
// instead of reaching it once the network heals. Directly, and through a
// jump host, where the socket reset is the one to the first hop.
func TestConnectionDeclaredDeadIsReset(t *testing.T) {
	t.Parallel()
	for _, via := range []string{"direct", "jump host"} {
		t.Run(via, func(t *testing.T) {
			t.Parallel()
			target := sshd.Start(t, sshd.Options{})
			var p *netfault.Proxy
			var cfg reach.Config
			if via == "direct" {
				p = netfault.Start(t, target.Addr)
				cfg = viaProxy(t, target, p)
			} else {
				jump := sshd.Start(t, sshd.Options{})
				p = netfault.Start(t, jump.Addr)
				cfg = target.Config()
				cfg.Jump = []reach.Config{viaProxy(t, jump, p)}
			}
			cfg.KeepaliveInterval, cfg.KeepaliveCount = time.Second, 3
			cfg.ConnectTimeout = 2 * time.Second
			h := rssh.New(cfg, rssh.HostOptions{ReattachTimeout: -1})
			t.Cleanup(func() { h.Close() })
			var out bytes.Buffer
			require.NoError(t, h.Exec(t.Context(), ops.Command{Script: "echo up", Output: &out}))
			require.Equal(t, "up\n", out.String())

			p.Blackhole(true)
			require.Error(t, h.Exec(t.Context(), ops.Command{Script: "sleep 30"}), "the connection was declared dead")
			require.EventuallyWithT(t, func(c *assert.CollectT) {
				assert.GreaterOrEqual(c, p.ClientResets(), int64(1))
			}, 5*time.Second, 20*time.Millisecond, "the client reset its socket")
			p.Blackhole(false)
		})
	}
}
