package integration

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
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

// psWithEnv lists the host's processes with the environment entry kv:
// everything a session of a test's sshd started, through any number of
// forks, carries the SetEnv values it was given (the host is this machine).
func psWithEnv(t *testing.T, kv string) []string {
	t.Helper()
	procs, err := os.ReadDir("/proc")
	require.NoError(t, err)
	var found []string
	for _, p := range procs {
		if p.Name()[0] < '0' || p.Name()[0] > '9' {
			continue
		}
		env, err := os.ReadFile(filepath.Join("/proc", p.Name(), "environ"))
		if err != nil || !slices.Contains(strings.Split(string(env), "\x00"), kv) {
			continue // gone meanwhile, or not ours
		}
		args, _ := os.ReadFile(filepath.Join("/proc", p.Name(), "cmdline"))
		found = append(found, p.Name()+" "+strings.ReplaceAll(string(args), "\x00", " "))
	}
	return found
}

// bash with a timeout leaves nothing of its command on the host.
func TestBashTimeoutKillsRemoteGroup(t *testing.T) {
	t.Parallel()
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

// jobsLeft lists what jobs left in the jobs directory of the cache
// directory cache: the files of jobs, and in the host's own directory
// (.host.BOOT.NAME) anything but the marks of the sweeps and the epochs
// of clients' connections (FIFOs made ahead for jobs, servers' busy
// marks), as paths under the jobs directory.
func jobsLeft(cache string) []string {
	jobs := filepath.Join(cache, "pi-remote", "jobs")
	entries, _ := os.ReadDir(jobs)
	var left []string
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), ".host.") {
			left = append(left, e.Name())
			continue
		}
		inside, _ := os.ReadDir(filepath.Join(jobs, e.Name()))
		for _, f := range inside {
			switch {
			case f.Name() == "swept" || f.Name() == "sweeping":
			case strings.HasPrefix(f.Name(), "client."):
				marks, _ := os.ReadDir(filepath.Join(jobs, e.Name(), f.Name()))
				for _, m := range marks {
					if !strings.HasPrefix(m.Name(), "epoch.") {
						left = append(left, filepath.Join(e.Name(), f.Name(), m.Name()))
					}
				}
			default:
				left = append(left, filepath.Join(e.Name(), f.Name()))
			}
		}
	}
	return left
}

// sleepers are the processes "sleep ARG" on the host.
func sleepers(t *testing.T, arg string) []string {
	var found []string
	for _, l := range psMatching(t, "sleep "+arg) {
		if _, cmd, _ := strings.Cut(l, " "); strings.HasPrefix(strings.TrimSpace(cmd), "sleep "+arg) {
			found = append(found, l)
		}
	}
	return found
}

// A client killed mid-command leaves its job to its lease: with a lease of
// 5 s, the job's whole process group is gone within the lease and a few
// seconds. Its output and status stay for a client that comes back, and
// pi-remote jobs says it was killed by its lease.
func TestLeaseExpiryKillsAnOrphanedJob(t *testing.T) {
	t.Parallel()
	cache := hostCache(t)
	srv := sshd.Start(t, sshd.Options{Config: []string{"SetEnv XDG_CACHE_HOME=" + cache}})
	marker := fmt.Sprintf("300.%d", time.Now().UnixNano()%1000000007)
	t.Cleanup(func() { exec.Command("pkill", "-f", "sleep "+marker).Run() })

	args := append(srv.Flags(), "--cwd", t.TempDir(), "--lease-ttl", "5s", "--reattach-timeout", "5s", "tool", "bash",
		fmt.Sprintf(`{"command":"sleep %s & sleep %s; echo never"}`, marker, marker))
	client := exec.Command(binary, args...)
	require.NoError(t, client.Start())
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		assert.Len(c, sleepers(t, marker), 2)
	}, 10*time.Second, 50*time.Millisecond)
	jobFiles := func() []string { return jobsLeft(cache) }
	require.Contains(t, strings.Join(jobFiles(), " "), ".out", "the command is a job")
	require.NoError(t, client.Process.Kill())
	client.Wait()

	killed := time.Now()
	time.Sleep(2 * time.Second)
	assert.Len(t, sleepers(t, marker), 2, "the job outlives its client for a while")
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		assert.Empty(c, sleepers(t, marker), "the whole group is killed")
	}, 15*time.Second, 100*time.Millisecond)
	t.Logf("gone %v after the client was killed (lease 5s)", time.Since(killed).Round(100*time.Millisecond))
	assert.Less(t, time.Since(killed), 9*time.Second)
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		assert.Contains(c, strings.Join(jobFiles(), " "), ".status", "its status is kept for its client")
	}, 5*time.Second, 100*time.Millisecond)
	code, out, stderr := cli(t, "", append(srv.Flags(), "jobs")...)
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, out, "killed by its lease (no client renewed it)", "pi-remote jobs says why it ended")
}

// Close forgets every job whose result its client collected, however
// many: none is left listed on the host.
func TestCloseForgetsEveryCollectedJob(t *testing.T) {
	t.Parallel()
	cache := hostCache(t)
	srv := sshd.Start(t, sshd.Options{Config: []string{"SetEnv XDG_CACHE_HOME=" + cache}})
	h := rssh.New(srv.Config(), rssh.HostOptions{})
	var wg sync.WaitGroup
	for range 100 {
		wg.Go(func() { assert.NoError(t, h.Exec(t.Context(), ops.Command{Script: "true"})) })
	}
	wg.Wait()
	require.NoError(t, h.Close())
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		assert.Empty(c, jobsLeft(cache))
	}, 10*time.Second, 100*time.Millisecond)
}

// Close forgets the collected jobs over a new connection when the last
// one dropped (a reset): the host keeps none of their files. (One that
// went silent is not dialled again: Close would wait for nothing.)
func TestCloseAfterADropForgetsCollectedJobs(t *testing.T) {
	t.Parallel()
	cache := hostCache(t)
	srv := sshd.Start(t, sshd.Options{Config: []string{"SetEnv XDG_CACHE_HOME=" + cache}})
	p := netfault.Start(t, srv.Addr)
	// (The default connect timeout: a login on a loaded machine may take
	// more than the 2 s reattachingHost gives it.)
	h := rssh.New(viaProxy(t, srv, p), rssh.HostOptions{})
	t.Cleanup(func() { h.Close() })
	for range 3 {
		require.NoError(t, h.Exec(t.Context(), ops.Command{Script: "true"}))
	}
	require.NotEmpty(t, jobsLeft(cache), "the last job is forgotten with a later request")
	p.Reset()
	require.Eventually(t, h.Down, 10*time.Second, 10*time.Millisecond)
	require.NoError(t, h.Close())
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		assert.Empty(c, jobsLeft(cache), "Close forgot the jobs over a new connection")
	}, 10*time.Second, 100*time.Millisecond)
}

// A command that writes without end is stopped at the output cap, and the
// result says so.
func TestRunawayOutputStoppedAtCap(t *testing.T) {
	t.Parallel()
	cache := hostCache(t)
	srv := sshd.Start(t, sshd.Options{Config: []string{"SetEnv XDG_CACHE_HOME=" + cache}})
	h := rssh.New(srv.Config(), rssh.HostOptions{OutputCap: 4 << 20})
	t.Cleanup(func() { h.Close() })
	te := newToolEnv(t, h, "capped", t.TempDir())
	res := te.call("bash", map[string]any{"command": "yes runaway"})
	require.True(t, res.IsError)
	text := res.Content.Text()
	assert.Contains(t, text, "Command stopped: its output passed the cap of 4 MiB (exit code 141).")
	assert.Contains(t, text, "runaway\n")
	assert.Empty(t, psMatching(t, "yes runaway"), "stopped")
	// The complete output (up to the cap, and less than a block past it)
	// was saved for paging.
	assert.Regexp(t, `Full output \(4\.[01]MB\)`, text)
}
