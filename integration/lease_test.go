package integration

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
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
)

// A command killed by its lease while its link was down is reported as
// such once the host is back, with the output it wrote, and never started
// again: its files stay for the client that comes back (before, they went
// with the kill, the client was told the host had no such job, and, having
// had no output yet, ran the command a second time, reporting a clean end).
func TestCommandKilledByItsLeaseDuringAnOutageRunsOnce(t *testing.T) {
	t.Parallel()
	cache := hostCache(t)
	srv := sshd.Start(t, sshd.Options{Config: []string{"SetEnv XDG_CACHE_HOME=" + cache}})
	p := netfault.Start(t, srv.Addr)
	cfg := viaProxy(t, srv, p)
	cfg.KeepaliveInterval, cfg.KeepaliveCount = time.Second, 3
	cfg.ConnectTimeout = 2 * time.Second
	h := rssh.New(cfg, rssh.HostOptions{ReattachTimeout: time.Minute, LeaseTTL: 3 * time.Second})
	t.Cleanup(func() { h.Close() })
	runs := filepath.Join(t.TempDir(), "runs.log")
	go func() {
		// Once the command runs (its start is not in the black hole).
		for {
			if _, err := os.Stat(runs); err == nil {
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
		// Until its lease has killed it (or for a minute: the call then
		// says it was not).
		p.Blackhole(true)
		waitFor(t.Context(), func() bool { return killedByLease(cache) > 0 })
		p.Reset()
		p.Blackhole(false)
	}()
	var out bytes.Buffer
	err := h.Exec(t.Context(), ops.Command{Script: "date >>" + runs + "; sleep 20; echo finished", Output: &out})
	var exit *ops.ExitError
	require.True(t, errors.As(err, &exit), "%v (output %q)", err, out.String())
	assert.Equal(t, 137, exit.Code)
	assert.Equal(t, "killed by its lease after 3s without a client", exit.Reason)
	assert.NotContains(t, out.String(), "finished")
	log, err := os.ReadFile(runs)
	require.NoError(t, err)
	assert.Equal(t, 1, strings.Count(string(log), "\n"), "the command ran once")
}

// killedByLease counts the jobs on the host whose cache directory is
// cache that their lease killed: their status says so ("137 lease").
func killedByLease(cache string) int {
	statuses, _ := filepath.Glob(filepath.Join(cache, "pi-remote", "jobs", "*.status"))
	n := 0
	for _, f := range statuses {
		if content, _ := os.ReadFile(f); strings.HasPrefix(string(content), "137 lease\n") {
			n++
		}
	}
	return n
}

// A command's lease holds from its start: three commands black-holed
// right after they started (the host never hears their connection end,
// and no client renews anything) are killed once their lease of 3 s has
// passed, while the link is still down.
func TestLeaseHoldsForCommandsNobodyFollows(t *testing.T) {
	t.Parallel()
	srv := sshd.Start(t, sshd.Options{})
	p := netfault.Start(t, srv.Addr)
	cfg := viaProxy(t, srv, p)
	cfg.KeepaliveInterval, cfg.KeepaliveCount = time.Second, 3
	h := rssh.New(cfg, rssh.HostOptions{ReattachTimeout: -1, LeaseTTL: 3 * time.Second})
	t.Cleanup(func() { h.Close() })
	marker := fmt.Sprintf("240.%d", time.Now().UnixNano()%1000000007)
	t.Cleanup(func() { exec.Command("pkill", "-f", "sleep "+marker).Run() })
	var wg sync.WaitGroup
	for range 3 {
		wg.Go(func() { h.Exec(t.Context(), ops.Command{Script: "sleep " + marker}) })
	}
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		assert.Len(c, sleepers(t, marker), 3)
	}, 10*time.Second, 20*time.Millisecond)
	p.Blackhole(true)
	holed := time.Now()
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		assert.Empty(c, sleepers(t, marker))
	}, 15*time.Second, 100*time.Millisecond, "the commands run on without a lease")
	t.Logf("killed %v after the black hole (lease 3 s)", time.Since(holed).Round(100*time.Millisecond))
	p.Blackhole(false)
	wg.Wait()
}

// A person following a job with `jobs attach` holds its lease: a job whose
// client went away, with a lease of 5 s, runs its 14 s to the end while
// another client attaches to it.
func TestAttachingToAJobHoldsItsLease(t *testing.T) {
	t.Parallel()
	srv := sshd.Start(t, sshd.Options{Config: []string{"SetEnv XDG_CACHE_HOME=" + hostCache(t)}})
	opts := rssh.HostOptions{LeaseTTL: 5 * time.Second}
	first := rssh.New(srv.Config(), opts)
	started := make(chan struct{})
	go func() {
		first.Exec(t.Context(), ops.Command{Script: "echo started; sleep 14; echo done", Output: writerFunc(func(p []byte) (int, error) {
			select {
			case <-started:
			default:
				close(started)
			}
			return len(p), nil
		})})
	}()
	<-started
	jobs, err := first.Jobs(t.Context())
	require.NoError(t, err)
	require.Len(t, jobs, 1)
	// The client goes: the job runs on, its lease no longer renewed.
	first.Close()
	second := rssh.New(srv.Config(), opts)
	t.Cleanup(func() { second.Close() })
	var out bytes.Buffer
	require.NoError(t, second.AttachJob(t.Context(), jobs[0].ID, &out))
	assert.Equal(t, "started\ndone\n", out.String())
}

// Where the jobs directory is not the user's alone (here, its parent is
// group-writable), each server keeps its commands in its private
// directory, and they cannot outlive the connection: a reset ends the call
// with an error that says so, the command is stopped on the host, and it
// is never started again (it ran once).
func TestCommandsWithoutAJobsDirectoryEndWithTheirConnection(t *testing.T) {
	t.Parallel()
	cache := sharedJobsCache(t)
	srv := sshd.Start(t, sshd.Options{Config: []string{"SetEnv XDG_CACHE_HOME=" + cache}})
	p := netfault.Start(t, srv.Addr)
	cfg := viaProxy(t, srv, p)
	cfg.KeepaliveInterval, cfg.KeepaliveCount = time.Second, 3
	cfg.ConnectTimeout = 2 * time.Second
	h := rssh.New(cfg, rssh.HostOptions{ReattachTimeout: time.Minute})
	t.Cleanup(func() { h.Close() })
	runs := filepath.Join(t.TempDir(), "runs.log")
	marker := fmt.Sprintf("30.%d", time.Now().UnixNano()%1000000007)
	t.Cleanup(func() { exec.Command("pkill", "-f", "sleep "+marker).Run() })
	errc := make(chan error, 1)
	go func() {
		errc <- h.Exec(t.Context(), ops.Command{Script: "echo ran >>" + runs + "; sleep " + marker})
	}()
	// (A loaded machine took more than 10 s to start it.)
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		assert.Len(c, sleepers(t, marker), 1)
	}, 30*time.Second, 10*time.Millisecond)
	p.Reset()
	select {
	case err := <-errc:
		require.Error(t, err)
		assert.ErrorIs(t, err, ops.ErrConnectionLost)
		assert.Contains(t, err.Error(), "cannot outlive")
	case <-time.After(30 * time.Second):
		t.Fatal("the call did not end")
	}
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		assert.Empty(c, sleepers(t, marker))
	}, 10*time.Second, 50*time.Millisecond, "the command is stopped with its server")
	// A command after the reset runs on the new connection.
	var out bytes.Buffer
	require.NoError(t, h.Exec(t.Context(), ops.Command{Script: "echo again", Output: &out}))
	assert.Equal(t, "again\n", out.String())
	log, err := os.ReadFile(runs)
	require.NoError(t, err)
	assert.Equal(t, "ran\n", string(log), "the command ran once")
}

// Where commands live in their server's private directory, a command is
// never let go of for another request and followed from another server
// (which would not find it, and start it again): with two channels and
// commands that keep them busy, each of eight calls ends as its command
// did, and each command runs once.
func TestCommandsWithoutAJobsDirectoryKeepTheirServer(t *testing.T) {
	t.Parallel()
	cache := sharedJobsCache(t)
	srv := sshd.Start(t, sshd.Options{Config: []string{"SetEnv XDG_CACHE_HOME=" + cache}})
	h := host(t, srv, rssh.HostOptions{MaxSessions: 2})
	require.NoError(t, h.Exec(t.Context(), ops.Command{Script: "true"}))
	runs := filepath.Join(t.TempDir(), "runs.log")
	var wg sync.WaitGroup
	errs := make([]error, 8)
	for i := range errs {
		script := fmt.Sprintf("echo %d >>%s", i, runs)
		if i < 4 {
			script += "; sleep 3"
		}
		wg.Go(func() { errs[i] = h.Exec(t.Context(), ops.Command{Script: script}) })
		// The next call once this one's command runs.
		require.EventuallyWithT(t, func(c *assert.CollectT) {
			log, _ := os.ReadFile(runs)
			assert.Contains(c, strings.Fields(string(log)), strconv.Itoa(i))
		}, 10*time.Second, 10*time.Millisecond)
	}
	wg.Wait()
	for i, err := range errs {
		assert.NoError(t, err, "call %d", i)
	}
	log, err := os.ReadFile(runs)
	require.NoError(t, err)
	lines := strings.Fields(string(log))
	slices.Sort(lines)
	assert.Equal(t, []string{"0", "1", "2", "3", "4", "5", "6", "7"}, lines, "each command ran once")
}

// sharedJobsCache is a cache directory whose pi-remote directory is
// group-writable (0770): the jobs directory there is not the user's alone,
// and servers keep their commands in their private directories.
func sharedJobsCache(t *testing.T) string {
	t.Helper()
	cache := hostCache(t)
	require.NoError(t, os.Mkdir(filepath.Join(cache, "pi-remote"), 0o770))
	require.NoError(t, os.Chmod(filepath.Join(cache, "pi-remote"), 0o770))
	return cache
}
