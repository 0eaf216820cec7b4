//go:build unix

package ssh

import (
	"fmt"
	"io"
	"math/rand/v2"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pi-remote/pi-remote/internal/randhex"
	"github.com/pi-remote/pi-remote/ops/ssh/internal/hostproto"
)

// The control lines have one grammar (read_control in serve.sh): a letter
// means the same in every request, an ID names one job of the answer, and
// a line without one is about every job of the answer.
func TestControlLines(t *testing.T) {
	t.Parallel()
	for _, sh := range testShells(t) {
		t.Run(strings.Join(sh, " "), func(t *testing.T) {
			t.Parallel()
			t.Run("one job: a line naming another job is ignored, one naming it is honoured", func(t *testing.T) {
				t.Parallel()
				l := startLocal(t, sh, true, "XDG_CACHE_HOME="+t.TempDir())
				arg := sleeper(t)
				job := newJob("exec sleep " + arg)
				require.NoError(t, l.send(startJob(job)))
				// Were "d OTHER" taken for this job, its status would be
				// "!DETACHED" (it runs on).
				require.NoError(t, l.write("d "+randhex.String(8)+"\nk "+job.ID+"\n"))
				assert.Equal(t, "137", l.nextJobAnswer(t, io.Discard, job.ID))
				assert.Empty(t, sleeping(t, arg))
			})
			t.Run("a batch: k and d without an ID are about each of its jobs", func(t *testing.T) {
				t.Parallel()
				l := startLocal(t, sh, true, "XDG_CACHE_HOME="+t.TempDir())
				arg := sleeper(t)
				batch := func(line string) map[string]string {
					t.Helper()
					ids := []string{randhex.String(8), randhex.String(8)}
					require.NoError(t, l.send(call("run_jobs", "60", "", "")))
					for _, id := range ids {
						require.NoError(t, l.send(call("add_job", id, "exec sleep "+arg, "", "", "", "", "control")))
					}
					require.NoError(t, l.write(line))
					ends := map[string]string{}
					status, err := readAttach(l.server, func(string) io.Writer { return io.Discard }, func(id, status string) {
						ends[id] = status
						if len(ends) == len(ids) {
							l.write("e\n")
						}
					})
					require.NoError(t, err)
					assert.Equal(t, "OK", status)
					return ends
				}
				for _, end := range batch("k\n") {
					assert.Equal(t, "137", end, "killed")
				}
				assert.Empty(t, sleeping(t, arg))
				let := batch("d\n")
				for _, end := range let {
					assert.Equal(t, "!DETACHED", end, "let go of")
				}
				require.EventuallyWithT(t, func(c *assert.CollectT) {
					assert.Len(c, sleeping(t, arg), 2, "let go of, they run on")
				}, 5*time.Second, 20*time.Millisecond)
				// Followed together, and killed together.
				var args []string
				for id := range let {
					args = append(args, id, "0", "", "", "")
				}
				require.NoError(t, l.send(call("attach_jobs", append([]string{"60"}, args...)...)))
				require.NoError(t, l.write("k\n"))
				ends := map[string]string{}
				status, err := readAttach(l.server, func(string) io.Writer { return io.Discard }, func(id, status string) { ends[id] = status })
				require.NoError(t, err)
				assert.Equal(t, "OK", status)
				assert.Len(t, ends, 2)
				for _, end := range ends {
					assert.Equal(t, "137", end, "killed")
				}
				assert.Empty(t, sleeping(t, arg))
			})
		})
	}
}

// A line that is not of the grammar is no control line: trailing words or
// blanks, an ID that is not hex, an ID on "r" or "e". Before the grammar
// was one, each watcher compared whole lines, so none of these did
// anything; they must not now either (a stray "k " is no "kill them all",
// and "k x/ID" must not become "k ID").
func TestControlLinesMalformedIgnored(t *testing.T) {
	t.Parallel()
	for _, sh := range testShells(t) {
		t.Run(strings.Join(sh, " "), func(t *testing.T) {
			t.Parallel()
			controlLinesMalformed(t, sh)
		})
	}
}

func controlLinesMalformed(t *testing.T, sh []string) {
	// end kills job id, let go of, and waits for its end: its waiter is
	// done with the jobs directory before the test removes it.
	end := func(t *testing.T, l *localServer, id string) {
		require.NoError(t, l.send(call("attach_jobs", "60", id, "0", "", "", "")))
		require.NoError(t, l.write("k "+id+"\n"))
		ends := map[string]string{}
		status, err := readAttach(l.server, func(string) io.Writer { return io.Discard }, func(id, status string) { ends[id] = status })
		require.NoError(t, err)
		assert.Equal(t, "OK", status)
		assert.Equal(t, map[string]string{id: "137"}, ends)
	}
	t.Run("run_jobs, a batch of one", func(t *testing.T) {
		t.Parallel()
		l := startLocal(t, sh, true, "XDG_CACHE_HOME="+t.TempDir())
		arg := sleeper(t)
		job := newJob("exec sleep " + arg)
		require.NoError(t, l.send(startJob(job)))
		// Then a "d" the job is let go of with: had a line before it
		// killed it, its status would be the kill's.
		require.NoError(t, l.write("k \nk "+job.ID+" \nk "+job.ID+" more\nd "+job.ID+"x\nd\n"))
		assert.Equal(t, "!DETACHED", l.nextJobAnswer(t, io.Discard, job.ID))
		assert.Len(t, sleeping(t, arg), 1, "it runs on")
		end(t, l, job.ID)
	})
	t.Run("run_jobs", func(t *testing.T) {
		t.Parallel()
		l := startLocal(t, sh, true, "XDG_CACHE_HOME="+t.TempDir())
		arg := sleeper(t)
		a, b := randhex.String(8), randhex.String(8)
		require.NoError(t, l.send(call("run_jobs", "60", "", "")))
		for _, id := range []string{a, b} {
			require.NoError(t, l.send(call("add_job", id, "exec sleep "+arg, "", "", "", "", "control")))
		}
		// None of these may touch a; "k B" ends b, and then "d A" says
		// whether a still runs.
		require.NoError(t, l.write("k \nd \nk x/"+a+"\nk "+a+" \nk "+a+" more\nd ../"+a+"\ne "+a+"\nk "+b+"\n"))
		ends := map[string]string{}
		status, err := readAttach(l.server, func(string) io.Writer { return io.Discard }, func(id, status string) {
			ends[id] = status
			switch len(ends) {
			case 1:
				l.write("d " + a + "\n")
			case 2:
				l.write("e\n")
			}
		})
		require.NoError(t, err)
		assert.Equal(t, "OK", status)
		assert.Equal(t, map[string]string{a: "!DETACHED", b: "137"}, ends)
		end(t, l, a)
	})
	t.Run("attach_jobs", func(t *testing.T) {
		t.Parallel()
		l := startLocal(t, sh, true, "XDG_CACHE_HOME="+t.TempDir())
		arg := sleeper(t)
		job := newJob("exec sleep " + arg)
		require.NoError(t, l.send(startJob(job)))
		require.NoError(t, l.control(hostproto.LetGo))
		require.Equal(t, "!DETACHED", l.nextJobAnswer(t, io.Discard, job.ID))
		require.NoError(t, l.send(call("attach_jobs", "60", job.ID, "0", "", "", "")))
		require.NoError(t, l.write("k \nk "+job.ID+" more\nk x/"+job.ID+"\nd\n"))
		ends := map[string]string{}
		status, err := readAttach(l.server, func(string) io.Writer { return io.Discard }, func(id, status string) { ends[id] = status })
		require.NoError(t, err)
		assert.Equal(t, "!DETACHED", status)
		assert.Empty(t, ends, "nothing killed")
		assert.Len(t, sleeping(t, arg), 1, "it runs on")
		end(t, l, job.ID)
	})
}

// sleeper returns the argument of a sleep only this test runs, whose
// processes are killed at the end should a step fail.
func sleeper(t *testing.T) string {
	arg := fmt.Sprintf("32.%06d", rand.IntN(1000000))
	t.Cleanup(func() {
		for _, line := range sleeping(t, arg) {
			pid, _ := strconv.Atoi(strings.Fields(line)[0])
			syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	return arg
}
