package integration

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pi-remote/pi-remote/integration/netfault"
	"github.com/pi-remote/pi-remote/integration/sshd"
	"github.com/pi-remote/pi-remote/ops"
	rssh "github.com/pi-remote/pi-remote/ops/ssh"
	"github.com/pi-remote/pi-remote/tools/toolstest"
)

// settledSessions waits until h has stopped opening session channels (the
// connection's warm-up runs in the background) and returns the count.
func settledSessions(t *testing.T, h *rssh.Host) int64 {
	t.Helper()
	last, since := h.SessionsOpened(), time.Now()
	for time.Since(since) < time.Second {
		time.Sleep(50 * time.Millisecond)
		if n := h.SessionsOpened(); n != last {
			last, since = n, time.Now()
		}
	}
	return last
}

// A warm connection opens no session: 100 mixed tool calls, in batches of
// five at once, with a command aborted and one timed out among them, run
// on the channels opened when the connection was made, and the SFTP
// channel its first upload opened (a session costs the user's login shell
// on the host, often hundreds of milliseconds).
func TestWarmCallsOpenNoSession(t *testing.T) {
	t.Parallel()
	srv := sshd.Start(t, sshd.Options{})
	h := host(t, srv, rssh.HostOptions{})
	dir := t.TempDir()
	te := newToolEnv(t, h, "warm", dir)
	big := strings.Repeat("0123456789abcdef\n", 1<<16) // 1 MiB: an upload
	te.ok("ls", map[string]any{})
	// SFTP opens with the connection's first upload that needs it.
	te.ok("write", map[string]any{"path": filepath.Join(dir, "first.txt"), "content": big})
	opened := settledSessions(t, h)
	require.Positive(t, opened)

	for batch := range 20 {
		var wg sync.WaitGroup
		for i := range 5 {
			n := batch*5 + i
			f := filepath.Join(dir, fmt.Sprintf("f%d.txt", n%10))
			wg.Go(func() {
				switch n % 8 {
				case 0:
					te.ok("write", map[string]any{"path": f, "content": fmt.Sprintf("line %d\n", n)})
				case 1:
					te.ok("write", map[string]any{"path": f, "content": big})
				case 2:
					te.call("read", map[string]any{"path": f})
				case 3:
					te.ok("bash", map[string]any{"command": fmt.Sprintf("echo %d", n)})
				case 4:
					te.call("grep", map[string]any{"pattern": "line"})
				case 5:
					te.ok("find", map[string]any{"pattern": "*.txt"})
				case 6:
					m := te.call("bash", map[string]any{"command": "sleep 30", "timeout": 1})
					assert.True(t, m.IsError, "timed out")
				case 7:
					ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
					defer cancel()
					m := te.callCtx(ctx, "bash", map[string]any{"command": "sleep 30"})
					assert.True(t, m.IsError, "aborted")
				}
			})
		}
		wg.Wait()
	}
	assert.Equal(t, opened, h.SessionsOpened(), "no session opened by a warm connection")
}

// Many more concurrent commands than the host allows sessions all succeed:
// 64 at once against MaxSessions 3.
func TestManyCommandsFewSessions(t *testing.T) {
	t.Parallel()
	srv := sshd.Start(t, sshd.Options{Config: []string{"MaxSessions 3"}})
	h := host(t, srv, rssh.HostOptions{})
	const n = 64
	var wg sync.WaitGroup
	errs := make([]error, n)
	outs := make([]strings.Builder, n)
	for i := range n {
		wg.Go(func() {
			errs[i] = h.Exec(t.Context(), ops.Command{Script: fmt.Sprintf("echo %d; sleep 0.1", i), Output: &outs[i]})
		})
	}
	wg.Wait()
	for i := range n {
		require.NoError(t, errs[i], "call %d", i)
		assert.Equal(t, fmt.Sprintf("%d\n", i), outs[i].String())
	}
}

// The mutation order holds over a link with latency, where the canonical
// paths of a batch's edits are now asked for concurrently: x→y→z through
// two spellings, 200 times, and 200 edits of one file through three
// spellings in one batch, at 5 ms of added round-trip time.
func TestMutationOrderOverLatency(t *testing.T) {
	t.Parallel()
	srv := sshd.Start(t, sshd.Options{})
	p := netfault.Start(t, srv.Addr)
	p.SetRTT(5 * time.Millisecond)
	cfg := viaProxy(t, srv, p)
	toolstest.RunQueue(t, toolstest.Harness{New: func(t *testing.T) ops.Operations {
		h := rssh.New(cfg, rssh.HostOptions{})
		t.Cleanup(func() { h.Close() })
		return h
	}})
}
