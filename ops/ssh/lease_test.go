//go:build unix

package ssh

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

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
			job[7] = "3"
			start := time.Now()
			require.NoError(t, l.send(call("run_job", job...)))
			var out bytes.Buffer
			done := make(chan string, 1)
			go func() {
				status, err := l.readUntilMarker(&out)
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
			cache := t.TempDir()
			runs := filepath.Join(cache, "runs.log")
			first := startLocal(t, sh, true, "XDG_CACHE_HOME="+cache)
			job := newJob("date >>" + shellquote.Quote(runs) + "; echo started; sleep 30; echo finished")
			job[7] = "2"
			first.stream(t, job)
			first.readUntil(t, "started\n")
			// As sshd does when the connection goes.
			first.cmd.Process.Signal(syscall.SIGHUP)
			first.close()
			time.Sleep(5 * time.Second)
			second := startLocal(t, sh, true, "XDG_CACHE_HOME="+cache)
			var out bytes.Buffer
			assert.Equal(t, "137 lease", second.do(t, &out, "attach_job", job[0], "0", "", "", "", "2"))
			assert.Equal(t, "started\n", out.String())
			// A start sent again (its answer lost) attaches to it too.
			out.Reset()
			assert.Equal(t, "137 lease", second.do(t, &out, "run_job", job...))
			log, err := os.ReadFile(runs)
			require.NoError(t, err)
			assert.Equal(t, 1, bytes.Count(log, []byte("\n")), "the command ran once")
			// Collected: the client forgets it.
			assert.Equal(t, "0", second.do(t, io.Discard, "call", "forget", job[0]))
			matches, _ := filepath.Glob(filepath.Join(cache, "pi-remote", "jobs", job[0]+".*"))
			assert.Empty(t, matches)
		})
	}
}

// A lease that runs out as the command ends on its own kills nothing and
// says nothing: 60 jobs of a batch, never renewed (TTL 3 s), exit 7 after
// 3.7 to 4.5 s, around the lease's kill. Each status is the command's own
// ("7") or the lease's kill ("137 lease"), never "7 lease": the kill is
// sent only while the keeper has not reaped the command.
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
				require.NoError(t, l.send(call("add_job", randomHex(8), script, "", "", "", "", "lease edge")))
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
