package integration

import (
	"fmt"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pi-remote/pi-remote/integration/sshd"
	"github.com/pi-remote/pi-remote/ops"
	rssh "github.com/pi-remote/pi-remote/ops/ssh"
)

// psMatching lists the host's processes whose command line contains s,
// with ps (the host is this machine).
func psMatching(t *testing.T, s string) []string {
	t.Helper()
	out, err := exec.Command("ps", "-eo", "pid,args").Output()
	require.NoError(t, err)
	var found []string
	for _, line := range strings.Split(string(out), "\n") {
		if strings.Contains(line, s) {
			found = append(found, strings.TrimSpace(line))
		}
	}
	return found
}

// bash with a timeout leaves nothing of its command on the host.
func TestBashTimeoutKillsRemoteGroup(t *testing.T) {
	srv := sshd.Start(t, sshd.Options{})
	te := newToolEnv(t, host(t, srv, rssh.HostOptions{}), "box", t.TempDir())
	marker := fmt.Sprintf("300.%d", time.Now().UnixNano()%1000000007)
	t.Cleanup(func() { exec.Command("pkill", "-f", "sleep "+marker).Run() })

	start := time.Now()
	m := te.call("bash", map[string]any{"command": fmt.Sprintf("sleep %s & sleep %s", marker, marker), "timeout": 1})
	require.True(t, m.IsError)
	assert.Contains(t, m.Content.Text(), "timed out")
	assert.Less(t, time.Since(start), 10*time.Second)
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		assert.Empty(c, psMatching(t, "sleep "+marker), "ps on the host shows no process of the command")
	}, 5*time.Second, 100*time.Millisecond)
}

// A host that allows fewer sessions than we assume still serves every
// parallel call: the pool shrinks to what the server accepts.
func TestMaxSessionsAdapts(t *testing.T) {
	t.Parallel()
	srv := sshd.Start(t, sshd.Options{Config: []string{"MaxSessions 3"}})
	h := host(t, srv, rssh.HostOptions{})
	var wg sync.WaitGroup
	errs := make([]error, 12)
	outs := make([]strings.Builder, 12)
	for i := range 12 {
		wg.Go(func() {
			errs[i] = h.Exec(t.Context(), ops.Command{Script: fmt.Sprintf("sleep 0.2; echo %d", i), Output: &outs[i]})
		})
	}
	wg.Wait()
	for i := range 12 {
		require.NoError(t, errs[i], "call %d", i)
		assert.Equal(t, fmt.Sprintf("%d\n", i), outs[i].String())
	}
}
