//go:build unix

package ssh

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pi-remote/pi-remote/internal/randhex"
	"github.com/pi-remote/pi-remote/internal/shellquote"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A job's lease holds from its start, whoever follows it: a client that
// went silent the moment it started a job (a black hole: its server never
// hears the stream end) renews nothing, and the job is killed once its
// TTL has passed. The answer still comes, on the server that waited.
func TestLeaseHoldsFromTheStart(t *testing.T) {
	for _, sh := range testShells(t) {
		t.Run(strings.Join(sh, " "), func(t *testing.T) {
			t.Parallel()
			l := startLocal(t, sh, true)
			job := newJob("echo started; sleep 30; echo finished")
			job.TTL = "3"
			start := time.Now()
			require.NoError(t, l.send(startJob(job)))
			var out bytes.Buffer
			done := make(chan string, 1)
			go func() {
				status, err := l.readJobAnswer(&out, job.ID)
				assert.NoError(t, err)
				done <- status
			}()
			select {
			case status := <-done:
				assert.Equal(t, "137 lease", status)
				assert.Equal(t, "started\n", out.String())
				// Looked at every second for a TTL of 3 s: killed after 3
				// to 4 s of silence (more on a busy machine).
				assert.GreaterOrEqual(t, time.Since(start), 3*time.Second)
			case <-time.After(20 * time.Second):
				t.Fatal("the job ran on without a lease renewed")
			}
		})
	}
}

// A job killed by its lease while its client was away stays, with its
// output and a status that says so, until a client comes back for it (or
// its TTL passes once more): the client learns why it ended, and never
// takes it for a job that did not start.
func TestJobKilledByItsLeaseIsKeptForItsClient(t *testing.T) {
	for _, sh := range testShells(t) {
		t.Run(strings.Join(sh, " "), func(t *testing.T) {
			t.Parallel()
			cache := cacheDir(t)
			runs := filepath.Join(cache, "runs.log")
			first := startLocal(t, sh, true, "XDG_CACHE_HOME="+cache)
			job := newJob("date >>" + shellquote.Quote(runs) + "; echo started; sleep 30; echo finished")
			job.TTL = "2"
			first.stream(t, job)
			first.readUntil(t, "started\n")
			// As sshd does when the connection goes.
			first.cmd.Process.Signal(syscall.SIGHUP)
			first.close()
			time.Sleep(5 * time.Second)
			second := startLocal(t, sh, true, "XDG_CACHE_HOME="+cache)
			var out bytes.Buffer
			assert.Equal(t, "137 lease", second.attachJob(t, &out, job.ID, "0", "", "", "", "2"))
			assert.Equal(t, "started\n", out.String())
			// A start sent again (its answer lost) finds it too, and the
			// client attaches.
			assert.Equal(t, "!ATTACH", second.runJob(t, io.Discard, job))
			out.Reset()
			assert.Equal(t, "137 lease", second.attachJob(t, &out, job.ID, "0", "", "", "", "2"))
			assert.Equal(t, "started\n", out.String())
			log, err := os.ReadFile(runs)
			require.NoError(t, err)
			assert.Equal(t, 1, bytes.Count(log, []byte("\n")), "the command ran once")
			// Collected: the client forgets it.
			assert.Equal(t, "0", second.do(t, io.Discard, "call", "forget", job.ID))
			matches, _ := filepath.Glob(filepath.Join(cache, "pi-remote", "jobs", job.ID+".*"))
			assert.Empty(t, matches)
		})
	}
}

// A lease that runs out as the command ends on its own kills nothing and
// says nothing: 60 jobs of a batch, never renewed (TTL 3 s), exit 7 after
// 3.7 to 4.5 s, around the lease's kill. Each status is the command's own
// ("7") or the lease's kill ("137 lease"), never "7 lease": the kill is
// sent only while the command has not ended (the waiter's own child, alive
// and no zombie; or, where it has a keeper, not reaped by it).
func TestLeaseKillAsTheCommandEnds(t *testing.T) {
	t.Parallel()
	const n = 60
	for _, sh := range testShells(t) {
		t.Run(strings.Join(sh, " "), func(t *testing.T) {
			t.Parallel()
			l := startLocal(t, sh, true, "XDG_CACHE_HOME="+t.TempDir())
			require.NoError(t, l.send(call("run_jobs", "3", "", "")))
			for i := range n {
				script := fmt.Sprintf("sleep %.3f; exit 7", 3.7+float64(i)*0.8/n)
				require.NoError(t, l.send(call("add_job", randhex.String(8), script, "", "", "", "", "lease edge")))
			}
			ends := map[string]string{}
			status, err := readAttach(l.server, func(string) io.Writer { return io.Discard }, func(id, status string) {
				ends[id] = status
				if len(ends) == n {
					require.NoError(t, l.write("e\n"))
				}
			})
			require.NoError(t, err)
			require.Equal(t, "OK", status)
			require.Len(t, ends, n)
			killed := 0
			for _, s := range ends {
				if s == "137 lease" {
					killed++
				}
			}
			t.Logf("%d of %d killed by their lease", killed, n)
			for id, s := range ends {
				assert.Contains(t, []string{"7", "137 lease"}, s, "job %s", id)
			}
		})
	}
}

// The lease holds when the job's files go while it runs: a host whose jobs
// directory is not the user's alone keeps jobs in the server's private
// directory; that server is killed (no exit trap) and the next server's
// start sweeps dead servers' directories. It leaves the one whose job
// still runs, and the job is killed by its lease of 3 s all the same.
func TestLeaseHoldsForAJobOfAKilledServer(t *testing.T) {
	t.Parallel()
	for _, sh := range testShells(t) {
		t.Run(strings.Join(sh, " "), func(t *testing.T) {
			t.Parallel()
			cache, tmp := t.TempDir(), t.TempDir()
			require.NoError(t, os.Mkdir(filepath.Join(cache, "pi-remote"), 0o770))
			require.NoError(t, os.Chmod(filepath.Join(cache, "pi-remote"), 0o770))
			a := startLocalIn(t, sh, true, tmp, nil, "XDG_CACHE_HOME="+cache)
			require.True(t, a.privateJobs, "jobs in the private directory")
			marker := fmt.Sprintf("300.%d", time.Now().UnixNano()%1000000007)
			t.Cleanup(func() { exec.Command("pkill", "-f", "sleep "+marker).Run() })
			job := newJob("sleep " + marker)
			job.TTL = "3"
			require.NoError(t, a.send(startJob(job)))
			require.Eventually(t, func() bool { return len(sleeping(t, marker)) == 1 }, 5*time.Second, 20*time.Millisecond)
			require.NoError(t, a.cmd.Process.Kill())
			require.Eventually(t, func() bool { return syscall.Kill(a.cmd.Process.Pid, 0) != nil }, 5*time.Second, 10*time.Millisecond)
			started := time.Now()
			startLocalIn(t, sh, true, tmp, nil, "XDG_CACHE_HOME="+cache) // sweeps dead servers' directories
			require.EventuallyWithT(t, func(c *assert.CollectT) {
				assert.Empty(c, sleeping(t, marker))
			}, 10*time.Second, 100*time.Millisecond, "the job runs on past its lease")
			t.Logf("killed %v after its server", time.Since(started).Round(100*time.Millisecond))
		})
	}
}
