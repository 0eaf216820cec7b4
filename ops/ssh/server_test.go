//go:build unix

// The host side is run directly under the local dash, bash and BusyBox sh.

package ssh

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pi-remote/pi-remote/internal/randhex"
	"github.com/pi-remote/pi-remote/internal/shellquote"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pi-remote/pi-remote/ops/ssh/internal/hostproto"

	"github.com/pi-remote/pi-remote/internal/slowio"
)

// testShells are the shells the server program must run under: dash (Debian's
// /bin/sh), bash in POSIX mode and BusyBox sh. In CI a missing one fails
// the test; elsewhere it is left out, saying so.
func testShells(t *testing.T) [][]string {
	t.Helper()
	var shells [][]string
	all := [][]string{{"dash"}, {"bash", "--posix"}, {"busybox", "sh"}}
	if testing.Short() {
		all = all[:1] // the fast tier: dash only
	}
	for _, sh := range all {
		if _, err := exec.LookPath(sh[0]); err != nil {
			if os.Getenv("CI") != "" {
				t.Fatalf("%s is not installed; CI installs it to run the server program under it", sh[0])
			}
			t.Logf("%s is not installed: the server program is not tested under it", sh[0])
			continue
		}
		shells = append(shells, sh)
	}
	require.NotEmpty(t, shells)
	return shells
}

// localServer is the server program run by a shell of this machine over pipes, as
// sshd would run it: in a session of its own, with TMPDIR a fresh
// directory.
type localServer struct {
	*server
	cmd *exec.Cmd
	tmp string
}

func startLocal(t *testing.T, sh []string, useSetsid bool, env ...string) *localServer {
	t.Helper()
	return startLocalIn(t, sh, useSetsid, t.TempDir(), nil, env...)
}

// startLocalIn is startLocal with TMPDIR tmp, run as the user cred (nil:
// this process's).
func startLocalIn(t *testing.T, sh []string, useSetsid bool, tmp string, cred *syscall.Credential, env ...string) *localServer {
	t.Helper()
	l := launchLocal(t, sh, tmp, cred, env...)
	require.NoError(t, l.handshake(t.Context(), useSetsid))
	return l
}

// launchLocal starts the shell of startLocalIn, which waits for the
// program: the caller's handshake sends it.
func launchLocal(t *testing.T, sh []string, tmp string, cred *syscall.Credential, env ...string) *localServer {
	t.Helper()
	l := &localServer{tmp: tmp}
	l.cmd = exec.Command(sh[0], append(sh[1:], "-c", bootstrapScript)...)
	l.cmd.Env = append(append(os.Environ(), "TMPDIR="+l.tmp), env...)
	l.cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Credential: cred}
	stdin, err := l.cmd.StdinPipe()
	require.NoError(t, err)
	stdout, err := l.cmd.StdoutPipe()
	require.NoError(t, err)
	end := func() error {
		stdin.Close()
		return l.cmd.Process.Kill()
	}
	l.server = &server{stdin: stdin, stdout: bufio.NewReader(stdout), stderr: &tailBuffer{max: 4096}, end: end}
	l.cmd.Stderr = l.stderr
	require.NoError(t, l.cmd.Start())
	// Reaped as soon as it exits, as sshd does: a zombie still answers
	// kill -0, and the server script tells a dead server by that.
	done := make(chan struct{})
	go func() {
		l.cmd.Wait()
		close(done)
	}()
	t.Cleanup(func() {
		// As a client leaves: the end of the request stream, and the
		// server's own cleanup; killed only if it does not go.
		stdin.Close()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			l.close()
			<-done
		}
	})
	return l
}

// do sends one request and returns its status, the output going to w.
func (l *localServer) do(t *testing.T, w io.Writer, fn string, args ...string) string {
	t.Helper()
	require.NoError(t, l.send(call(fn, args...)))
	status, err := l.readUntilMarker(w)
	require.NoError(t, err, "stderr: %s", l.stderr.suffix())
	return status
}

// runJob starts job (a batch of one) and returns its status, its output
// going to w (see readJobAnswer).
func (l *localServer) runJob(t *testing.T, w io.Writer, job testJob) string {
	t.Helper()
	require.NoError(t, l.send(startJob(job)))
	return l.jobAnswer(t, w, job.ID)
}

// attachJob follows job id from byte offset on (attach_jobs of one job)
// and returns its status, its output going to w (see readJobAnswer).
func (l *localServer) attachJob(t *testing.T, w io.Writer, id, offset, save, saveBytes, saveLines, ttl string) string {
	t.Helper()
	require.NoError(t, l.send(call("attach_jobs", ttl, id, offset, save, saveBytes, saveLines)))
	return l.jobAnswer(t, w, id)
}

// jobAnswer reads the answer to a request about job id sent earlier (see
// readJobAnswer), however long it takes.
func (l *localServer) jobAnswer(t *testing.T, w io.Writer, id string) string {
	t.Helper()
	status, err := l.readJobAnswer(w, id)
	require.NoError(t, err, "stderr: %s", l.stderr.suffix())
	return status
}

// readJobAnswer reads the answer to a request about one job, id (a batch of
// one, or attach_jobs of one job), its output going to w. It returns the
// status of the job's "X" frame, or, where none came, the answer's own
// status (an attach let go of: "!DETACHED"). An answer with a frame of
// another job, with two "X" frames, or that ends "OK" with none is an
// error.
func (l *localServer) readJobAnswer(w io.Writer, id string) (string, error) {
	var ended []string
	var stranger string
	status, err := readAttach(l.server,
		func(got string) io.Writer {
			if got != id {
				stranger = got
				return io.Discard
			}
			return w
		},
		func(got, status string) {
			if got != id {
				stranger = got
				return
			}
			ended = append(ended, status)
		})
	switch {
	case err != nil:
		return "", err
	case stranger != "":
		return "", fmt.Errorf("a frame of job %s in the answer about job %s", stranger, id)
	case len(ended) > 1:
		return "", fmt.Errorf("job %s ended %d times: %q", id, len(ended), ended)
	case len(ended) == 1 && status != "OK":
		return "", fmt.Errorf("job %s ended %q, and then the answer %q", id, ended[0], status)
	case len(ended) == 1:
		return ended[0], nil
	case status == "OK":
		return "", fmt.Errorf("the answer about job %s ended OK without its X frame", id)
	}
	return status, nil
}

// stream starts job and asks for its output as it comes ("s"), as the
// client does once a command has run for a moment.
func (l *localServer) stream(t *testing.T, job testJob) {
	t.Helper()
	require.NoError(t, l.send(startJob(job)))
	require.NoError(t, l.control(hostproto.Stream))
}

// readUntil reads the "D" frames of the answer in progress, the output of
// the job it streams, up to the one that completes text (no further: the
// rest stays on the stream), and returns the output they held.
func (l *localServer) readUntil(t *testing.T, text string) *bytes.Buffer {
	t.Helper()
	var got bytes.Buffer
	for !strings.Contains(got.String(), text) {
		line, err := l.stdout.ReadString('\n')
		require.NoError(t, err, "stderr: %s", l.stderr.suffix())
		f := strings.Fields(line)
		require.True(t, len(f) == 3 && f[0] == "D", "a D frame before %q; got %q after %q", text, line, got.String())
		n, err := strconv.ParseInt(f[2], 10, 64)
		require.NoError(t, err, "frame %q", line)
		_, err = io.CopyN(&got, l.stdout, n)
		require.NoError(t, err)
	}
	return &got
}

// run runs a command and returns its status and output.
func (l *localServer) run(t *testing.T, script string) (string, string) {
	t.Helper()
	var out bytes.Buffer
	status := l.runJob(t, &out, newJob(script))
	return status, out.String()
}

// following lists the processes whose command line names file.
func following(t *testing.T, file string) []string {
	out, err := exec.Command("ps", "-eo", "pid=,args=").Output()
	require.NoError(t, err)
	var found []string
	for line := range strings.Lines(string(out)) {
		if strings.Contains(line, file) {
			found = append(found, strings.TrimSpace(line))
		}
	}
	return found
}

// inSession lists the processes of session sid.
func inSession(t *testing.T, sid int) []string {
	return psWhere(t, "pid=,sess=,args=", func(f []string) bool { return len(f) > 2 && f[1] == strconv.Itoa(sid) })
}

// sleeping lists the processes running `sleep arg`.
func sleeping(t *testing.T, arg string) []string {
	return psWhere(t, "pid=,args=", func(f []string) bool { return len(f) == 3 && f[1] == "sleep" && f[2] == arg })
}

// soleSleeper waits for `sleep arg` to run, once, and returns its pid.
func soleSleeper(t *testing.T, arg string) int {
	t.Helper()
	var found []string
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		found = sleeping(t, arg)
		assert.Len(c, found, 1, "the command runs")
	}, 5*time.Second, 10*time.Millisecond)
	pid, err := strconv.Atoi(strings.Fields(found[0])[0])
	require.NoError(t, err)
	return pid
}

// waiterOf waits for job id's waiter to write its pid (the third line of
// ID.server) and returns it.
func waiterOf(t *testing.T, jobs, id string) int {
	t.Helper()
	var waiter int
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		b, err := os.ReadFile(filepath.Join(jobs, id+".server"))
		require.NoError(c, err)
		lines := strings.Split(strings.TrimSpace(string(b)), "\n")
		require.GreaterOrEqual(c, len(lines), 3)
		waiter, err = strconv.Atoi(lines[2])
		require.NoError(c, err)
	}, 5*time.Second, 10*time.Millisecond)
	return waiter
}

// saidLong waits until the waiter of job id in jobs has said on the news
// FIFO that its job runs on past its first moments (it closes the FIFO,
// its fd 8, then), and returns the waiter's pid.
func saidLong(t *testing.T, jobs, id string) int {
	t.Helper()
	waiter := waiterOf(t, jobs, id)
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		news, _ := os.Readlink(fmt.Sprintf("/proc/%d/fd/8", waiter))
		assert.NotEqual(c, "news", filepath.Base(news), "the waiter has said the job runs on")
	}, 5*time.Second, 10*time.Millisecond)
	return waiter
}

// jobFiles lists the files of job id in jobs.
func jobFiles(jobs, id string) []string {
	matches, _ := filepath.Glob(filepath.Join(jobs, id+".*"))
	return matches
}

// holding lists the processes that have a file open whose path holds
// name, as "PID PATH".
func holding(name string) []string {
	var found []string
	fds, _ := filepath.Glob("/proc/[0-9]*/fd/*")
	for _, fd := range fds {
		if target, err := os.Readlink(fd); err == nil && strings.Contains(target, name) {
			found = append(found, strings.Split(fd, "/")[2]+" "+target)
		}
	}
	return found
}

// cacheDir is a temporary XDG_CACHE_HOME whose removal, at the test's
// end, waits until no process works in it any more: a job's waiter writes
// its status after its command is killed, and a server's sweep runs on in
// the background after the server has gone; a removal that raced them
// would fail ("directory not empty").
func cacheDir(t *testing.T) string {
	dir := t.TempDir()
	// (Cleanups run last-registered first: this one after the test's
	// own, which kill its commands, and before the removal.)
	t.Cleanup(func() {
		assert.Eventually(t, func() bool { return len(using(dir)) == 0 }, 10*time.Second, 20*time.Millisecond, "processes still work in %s", dir)
	})
	return dir
}

// using lists the processes whose working directory or an open file is
// under dir, as "PID PATH".
func using(dir string) []string {
	var found []string
	links, _ := filepath.Glob("/proc/[0-9]*/cwd")
	fds, _ := filepath.Glob("/proc/[0-9]*/fd/*")
	for _, link := range append(links, fds...) {
		if target, err := os.Readlink(link); err == nil && (target == dir || strings.HasPrefix(target, dir+"/")) {
			found = append(found, strings.Split(link, "/")[2]+" "+target)
		}
	}
	return found
}

// psWhere lists the lines of ps -eo FORMAT whose fields match.
func psWhere(t *testing.T, format string, match func(fields []string) bool) []string {
	t.Helper()
	out, err := exec.Command("ps", "-eo", format).Output()
	require.NoError(t, err)
	var found []string
	for line := range strings.Lines(string(out)) {
		if match(strings.Fields(line)) {
			found = append(found, strings.TrimSpace(line))
		}
	}
	return found
}

func TestServerScript(t *testing.T) {
	t.Parallel()
	for _, sh := range testShells(t) {
		t.Run(strings.Join(sh, " "), func(t *testing.T) {
			t.Parallel()
			t.Run("background output stays with its command", func(t *testing.T) {
				t.Parallel()
				l := startLocal(t, sh, true)
				status, out := l.run(t, `(sleep 2; echo LEAKED-FROM-A) & echo A-done`)
				assert.Equal(t, "0", status)
				assert.Equal(t, "A-done\n", out)
				status, out = l.run(t, `sleep 3; echo B-done`)
				assert.Equal(t, "0", status)
				assert.Equal(t, "B-done\n", out, "nothing of the first command's child")
			})
			t.Run("a relay slower than the grace loses no output", func(t *testing.T) {
				t.Parallel()
				// As on a busy host, the relay copies the output long after
				// the command has exited: the command stops the relay's dd
				// for a second (a process of another session lets it go
				// on), fills the FIFO and exits. Nothing of its group is
				// left to write: the grace must not cut the relay short.
				cache := cacheDir(t)
				l := startLocal(t, sh, true, "XDG_CACHE_HOME="+cache)
				job := newJob("")
				job.Cap = "1000000" // the relay copies with dd
				output := filepath.Join(cache, "pi-remote", "jobs", job.ID+".out")
				away := filepath.Join(l.tmp, "away")
				// The relay's dd is the process named dd writing to the
				// job's output.
				job.Script = fmt.Sprintf(`dd=
while [ -z "$dd" ]; do
	for p in /proc/[0-9]*; do
		[ "$p/fd/1" -ef %[1]s ] && read -r name <"$p/comm" && [ "$name" = dd ] && dd=${p#/proc/}
	done
done
kill -s STOP "$dd"
setsid sh -c ': >"$1"; sleep 1; kill -s CONT "$2"' sh %[2]s "$dd" </dev/null >/dev/null 2>&1 &
while [ ! -e %[2]s ]; do sleep 0.01; done
i=1; while [ $i -le 2000 ]; do echo "line $i"; i=$((i+1)); done`, shellquote.Quote(output), shellquote.Quote(away))
				var out bytes.Buffer
				start := time.Now()
				status := l.runJob(t, &out, job)
				assert.Equal(t, "0", status)
				assert.Equal(t, numberedLines(2000), out.String())
				assert.Greater(t, time.Since(start), time.Second, "the relay was held up")
			})
			t.Run("a job outlives its server and is attached to from an offset", func(t *testing.T) {
				t.Parallel()
				cache := cacheDir(t)
				first := startLocal(t, sh, true, "XDG_CACHE_HOME="+cache)
				job := newJob(printLines(30, "0.02", 5))
				first.stream(t, job)
				// Read the first lines, then the server goes, as with a
				// dropped connection.
				got := first.readUntil(t, "line 3\n")
				first.close()

				second := startLocal(t, sh, true, "XDG_CACHE_HOME="+cache)
				offset := strconv.Itoa(got.Len())
				// Its start sent again finds it; the client attaches from
				// where its output stopped.
				assert.Equal(t, "!ATTACH", second.runJob(t, io.Discard, job), "a start sent again")
				var rest bytes.Buffer
				status := second.attachJob(t, &rest, job.ID, offset, "", "", "", "60")
				assert.Equal(t, "5", status, "the true exit status")
				assert.Equal(t, numberedLines(30), got.String()+rest.String(), "every byte once")

				// The answer lost, the same again: the end is sent again.
				assert.Equal(t, "!ATTACH", second.runJob(t, io.Discard, job), "a start sent again, once more")
				var again bytes.Buffer
				status = second.attachJob(t, &again, job.ID, offset, "", "", "", "60")
				assert.Equal(t, "5", status, "sent again")
				assert.Equal(t, rest.String(), again.String())
				// Once the client says it has the result, the job is gone.
				other := newJob("true")
				other.Forget = job.ID
				assert.Equal(t, "0", second.runJob(t, io.Discard, other))
				require.EventuallyWithT(t, func(c *assert.CollectT) {
					matches, _ := filepath.Glob(filepath.Join(cache, "pi-remote", "jobs", job.ID+".*"))
					assert.Empty(c, matches)
				}, 5*time.Second, 20*time.Millisecond)
				assert.Equal(t, "!NOJOB", second.attachJob(t, io.Discard, job.ID, offset, "", "", "", "60"), "forgotten: gone")
				status, out := second.run(t, "echo next")
				assert.Equal(t, "0", status)
				assert.Equal(t, "next\n", out)
			})
			t.Run("a request forgets many jobs at once, and only jobs", func(t *testing.T) {
				t.Parallel()
				cache := cacheDir(t)
				jobs := filepath.Join(cache, "pi-remote", "jobs")
				l := startLocal(t, sh, true, "XDG_CACHE_HOME="+cache)
				var ids []string
				for i := range 20 {
					job := newJob(fmt.Sprintf("echo %d", i))
					assert.Equal(t, "0", l.runJob(t, io.Discard, job))
					ids = append(ids, job.ID)
				}
				// A word that is not a job id names no file: "..", a
				// path, a quote, an expansion.
				keep := filepath.Join(jobs, "keep.out")
				require.NoError(t, os.WriteFile(keep, nil, 0o600))
				bad := []string{"..", "../keep", "keep", `x"y`, "$(touch " + filepath.Join(l.tmp, "ran") + ")"}
				other := newJob("true")
				other.Forget = strings.Join(append(bad, ids...), " ")
				assert.Equal(t, "0", l.runJob(t, io.Discard, other))
				require.EventuallyWithT(t, func(c *assert.CollectT) {
					for _, id := range ids {
						assert.Empty(c, jobFiles(jobs, id), id)
					}
				}, 5*time.Second, 20*time.Millisecond)
				assert.FileExists(t, keep)
				assert.NoFileExists(t, filepath.Join(l.tmp, "ran"))
				matches, _ := filepath.Glob(filepath.Join(jobs, other.ID+".*"))
				assert.NotEmpty(t, matches, "the job not forgotten stays")
			})
			t.Run("collected jobs go at once, whatever the request that names them does", func(t *testing.T) {
				t.Parallel()
				// The files of the jobs a request names go with the rm the
				// waiter of the job it starts becomes as it ends: at once
				// all the same when that job runs on, or starts not at all.
				cache := cacheDir(t)
				jobs := filepath.Join(cache, "pi-remote", "jobs")
				l := startLocal(t, sh, true, "XDG_CACHE_HOME="+cache)
				var ids []string
				for i := range 2 {
					job := newJob(fmt.Sprintf("echo %d", i))
					assert.Equal(t, "0", l.runJob(t, io.Discard, job))
					ids = append(ids, job.ID)
				}
				gone := func(id string) func(c *assert.CollectT) {
					return func(c *assert.CollectT) { assert.Empty(c, jobFiles(jobs, id), id) }
				}
				long := newJob("sleep 4; echo slept")
				long.Forget = ids[0]
				require.NoError(t, l.send(startJob(long)))
				start := time.Now()
				require.EventuallyWithT(t, gone(ids[0]), 3*time.Second, 20*time.Millisecond, "while the next command runs")
				assert.Less(t, time.Since(start), 3*time.Second)
				var out bytes.Buffer
				assert.Equal(t, "0", l.nextJobAnswer(t, &out, long.ID))
				assert.Equal(t, "slept\n", out.String())

				failing := newJob("true")
				failing.Dir = filepath.Join(l.tmp, "no-such-dir")
				failing.Forget = ids[1] + " " + long.ID
				assert.Equal(t, "!ENOENT", l.runJob(t, io.Discard, failing))
				require.EventuallyWithT(t, gone(ids[1]), 3*time.Second, 20*time.Millisecond, "after a start that failed")
				require.EventuallyWithT(t, gone(long.ID), 3*time.Second, 20*time.Millisecond, "after a start that failed")
			})
			t.Run("a job whose server died before it said so is started again", func(t *testing.T) {
				t.Parallel()
				// A server killed between a job's first files and
				// JOB.server leaves a job with no server to see die: an
				// attacher that waited seconds for one judges it unstarted
				// (as with a server seen dead) instead of waiting forever.
				cache := cacheDir(t)
				jobs := filepath.Join(cache, "pi-remote", "jobs")
				l := startLocal(t, sh, true, "XDG_CACHE_HOME="+cache)
				assert.Equal(t, "0", l.runJob(t, io.Discard, newJob("true")))
				for _, kind := range []string{"a start sent again", "attach_jobs"} {
					job := newJob("echo ran")
					require.NoError(t, os.WriteFile(filepath.Join(jobs, job.ID+".out"), nil, 0o600))
					require.NoError(t, os.WriteFile(filepath.Join(jobs, job.ID+".lease"), []byte("60\n"), 0o600))
					start := time.Now()
					var out bytes.Buffer
					if kind == "a start sent again" {
						// It finds the job, and the client attaches.
						assert.Equal(t, "!ATTACH", l.runJob(t, io.Discard, job))
						assert.Equal(t, "!NOJOB", l.attachJob(t, io.Discard, job.ID, "0", "", "", "", "60"))
					} else {
						assert.Equal(t, "OK", l.do(t, &out, "attach_jobs", "60", job.ID, "0", "", "", ""))
						assert.Equal(t, "X "+job.ID+" !NOJOB\n", out.String())
					}
					assert.Less(t, time.Since(start), 20*time.Second)
					assert.Empty(t, jobFiles(jobs, job.ID), "its files go: the client starts it again")
					out.Reset()
					assert.Equal(t, "0", l.runJob(t, &out, job))
					assert.Equal(t, "ran\n", out.String())
				}
			})
			t.Run("a kill cut short by the job's end leaves nothing stopped", func(t *testing.T) {
				t.Parallel()
				// "k" as the job's waiter dies: the server, done waiting,
				// must not stop its watcher in the middle of the kill (the
				// job's processes frozen by it, never killed).
				cache := cacheDir(t)
				jobs := filepath.Join(cache, "pi-remote", "jobs")
				arg := fmt.Sprintf("31.%06d", rand.IntN(1000000))
				for range 3 {
					l := startLocal(t, sh, true, "XDG_CACHE_HOME="+cache)
					job := newJob("sleep " + arg)
					require.NoError(t, l.send(startJob(job)))
					waiter := waiterOf(t, jobs, job.ID)
					require.EventuallyWithT(t, func(c *assert.CollectT) {
						assert.NotEmpty(c, sleeping(t, arg), "the command runs")
					}, 5*time.Second, 10*time.Millisecond)
					require.NoError(t, syscall.Kill(waiter, syscall.SIGKILL))
					require.NoError(t, l.write("k\n"))
					// (The answer comes once a kill begun has ended: a
					// process still stopped now stays so.)
					l.nextJobAnswer(t, io.Discard, job.ID)
					stopped := psWhere(t, "pid=,stat=,args=", func(f []string) bool {
						return len(f) == 4 && strings.HasPrefix(f[1], "T") && f[2] == "sleep" && f[3] == arg
					})
					assert.Empty(t, stopped, "frozen by a kill never finished")
					for _, line := range sleeping(t, arg) {
						pid, _ := strconv.Atoi(strings.Fields(line)[0])
						syscall.Kill(pid, syscall.SIGKILL)
					}
				}
			})
			t.Run("a job whose waiter was killed ends without a status, not as exit 0", func(t *testing.T) {
				t.Parallel()
				cache := cacheDir(t)
				jobs := filepath.Join(cache, "pi-remote", "jobs")
				l := startLocal(t, sh, true, "XDG_CACHE_HOME="+cache)
				job := newJob("sleep 3")
				require.NoError(t, l.send(startJob(job)))
				waiter := waiterOf(t, jobs, job.ID)
				require.NoError(t, syscall.Kill(waiter, syscall.SIGKILL))
				assert.Equal(t, "!EIO the job ended without a status (its waiter was killed)", l.nextJobAnswer(t, io.Discard, job.ID))
				// Killed at any moment, even before it opened the job's
				// FIFO, the waiter leaves nothing waiting for it: the
				// command ends (sleep 3), and nothing holds the job's files.
				require.EventuallyWithT(t, func(c *assert.CollectT) {
					assert.Empty(c, holding(job.ID))
				}, 10*time.Second, 100*time.Millisecond)
			})
			t.Run("a job whose waiter is killed once the job runs on is answered too", func(t *testing.T) {
				t.Parallel()
				// Past its first moments, the waiter has said so on the
				// news FIFO (and closed it): the answer then waits on its
				// events for the waiter's end, which a killed waiter never
				// says. (run_job answered at once; its batch of one once
				// waited for good.)
				cache := cacheDir(t)
				jobs := filepath.Join(cache, "pi-remote", "jobs")
				l := startLocal(t, sh, true, "XDG_CACHE_HOME="+cache)
				job := newJob("exec sleep " + sleeper(t))
				require.NoError(t, l.send(startJob(job)))
				waiter := saidLong(t, jobs, job.ID)
				require.NoError(t, syscall.Kill(waiter, syscall.SIGKILL))
				assert.Equal(t, "!EIO the job ended without a status (its waiter was killed)", l.nextJobAnswer(t, io.Discard, job.ID))
			})
			t.Run("a job has four files, and its status says its output's size", func(t *testing.T) {
				t.Parallel()
				cache := cacheDir(t)
				jobs := filepath.Join(cache, "pi-remote", "jobs")
				l := startLocal(t, sh, true, "XDG_CACHE_HOME="+cache)
				arg := fmt.Sprintf("31.%06d", rand.IntN(1000000))
				job := newJob("echo out; exec 2>/dev/null; sleep " + arg + "; echo more")
				job.Cap = "1000" // the relay counts the output
				require.NoError(t, l.send(startJob(job)))
				suffixes := func() []string {
					var found []string
					for _, f := range jobFiles(jobs, job.ID) {
						found = append(found, strings.TrimPrefix(filepath.Base(f), job.ID))
					}
					return found
				}
				sleep := soleSleeper(t, arg)
				var server []string
				require.EventuallyWithT(t, func(c *assert.CollectT) {
					b, err := os.ReadFile(filepath.Join(jobs, job.ID+".server"))
					require.NoError(c, err)
					server = strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
					assert.Len(c, server, 4, "server and host, label, waiter, command")
				}, 5*time.Second, 10*time.Millisecond)
				assert.Equal(t, []string{".lease", ".out", ".server", ".status"}, suffixes())
				// The fourth line is the command's pid: the sleep's parent.
				stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", sleep))
				require.NoError(t, err)
				fields := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
				assert.Equal(t, server[3], fields[1])
				require.NoError(t, syscall.Kill(sleep, syscall.SIGKILL))
				var out bytes.Buffer
				assert.Equal(t, "0", l.nextJobAnswer(t, &out, job.ID))
				assert.Equal(t, "out\nmore\n", out.String())
				assert.Equal(t, []string{".lease", ".out", ".server", ".status"}, suffixes())
				status, err := os.ReadFile(filepath.Join(jobs, job.ID+".status"))
				require.NoError(t, err)
				size := "9"
				if sh[0] == "busybox" {
					size = "" // (BusyBox's dd counts records only)
				}
				assert.Equal(t, "0\n"+size+"\n", string(status), "the status, then the output's size")
			})
			t.Run("an ended job stays until its client says it has the result", func(t *testing.T) {
				t.Parallel()
				cache := cacheDir(t)
				jobs := filepath.Join(cache, "pi-remote", "jobs")
				l := startLocal(t, sh, true, "XDG_CACHE_HOME="+cache)
				first := newJob("echo one")
				assert.Equal(t, "0", l.runJob(t, io.Discard, first))
				assert.FileExists(t, filepath.Join(jobs, first.ID+".out"), "a start sent again finds it done")
				second := newJob("echo two")
				second.Forget = first.ID + " not/an-id"
				assert.Equal(t, "0", l.runJob(t, io.Discard, second))
				require.EventuallyWithT(t, func(c *assert.CollectT) {
					entries, err := os.ReadDir(jobs)
					require.NoError(c, err)
					for _, e := range entries {
						// (And this host's directory: the FIFO made ahead for
						// this server's next job.)
						if !strings.HasPrefix(e.Name(), ".host.") {
							assert.True(c, strings.HasPrefix(e.Name(), second.ID+"."), "only the second job's files: %s", e.Name())
						}
					}
				}, 5*time.Second, 20*time.Millisecond)
			})
			t.Run("an ended job nobody collects is swept once its lease is past", func(t *testing.T) {
				t.Parallel()
				cache := cacheDir(t)
				jobs := filepath.Join(cache, "pi-remote", "jobs")
				l := startLocal(t, sh, true, "XDG_CACHE_HOME="+cache)
				// Servers sweep as they start, in the background, at most
				// once a minute: the first one's sweep is over before the
				// stale job looks stale (on a busy host it may begin
				// late, and would rightly take the job).
				here := hostDir(t, jobs)
				require.EventuallyWithT(t, func(c *assert.CollectT) {
					assert.FileExists(c, filepath.Join(here, "swept"), "the first server's sweep began")
					assert.NoDirExists(c, filepath.Join(here, "sweeping"), "the first server's sweep is over")
				}, 5*time.Second, 20*time.Millisecond)
				stale, fresh := newJob("echo stale"), newJob("echo fresh")
				assert.Equal(t, "0", l.runJob(t, io.Discard, stale))
				assert.Equal(t, "0", l.runJob(t, io.Discard, fresh))
				// A job that runs has an empty status as old as its start:
				// it is not swept, however long it runs (its waiter holds
				// its lease).
				arg := fmt.Sprintf("32.%06d", rand.IntN(1000000))
				t.Cleanup(func() { exec.Command("pkill", "-x", "-f", "sleep "+arg).Run() })
				running := newJob("sleep " + arg)
				require.NoError(t, startLocal(t, sh, true, "XDG_CACHE_HOME="+cache).send(startJob(running)))
				require.EventuallyWithT(t, func(c *assert.CollectT) {
					assert.NotEmpty(c, sleeping(t, arg))
				}, 5*time.Second, 10*time.Millisecond)
				// The stale job's client vanished 3 minutes ago (its TTL is
				// 60 s); the fresh one's may still come back for it.
				old := time.Now().Add(-3 * time.Minute)
				for _, f := range []string{".lease", ".status"} {
					require.NoError(t, os.Chtimes(filepath.Join(jobs, stale.ID+f), old, old))
					require.NoError(t, os.Chtimes(filepath.Join(jobs, running.ID+f), old, old))
				}
				startLocal(t, sh, true, "XDG_CACHE_HOME="+cache).run(t, "true")
				time.Sleep(300 * time.Millisecond)
				assert.FileExists(t, filepath.Join(jobs, stale.ID+".out"), "not swept again within the minute")
				require.NoError(t, os.Chtimes(filepath.Join(here, "swept"), old, old))
				startLocal(t, sh, true, "XDG_CACHE_HOME="+cache)
				// Buried: its tombstone (its status) stays, so that a
				// start of it that comes late runs nothing and learns how
				// it ended.
				require.EventuallyWithT(t, func(c *assert.CollectT) {
					assert.Equal(c, []string{filepath.Join(jobs, stale.ID+".status")}, jobFiles(jobs, stale.ID))
				}, 5*time.Second, 20*time.Millisecond)
				assert.FileExists(t, filepath.Join(jobs, fresh.ID+".out"))
				assert.FileExists(t, filepath.Join(jobs, running.ID+".out"), "a job that runs is not swept")
				assert.NotEmpty(t, sleeping(t, arg), "nor killed")
				again := stale
				again.Script = "echo ran again >>" + shellquote.Quote(filepath.Join(cache, "again"))
				assert.Equal(t, "!GONE 0", l.runJob(t, io.Discard, again), "a start sent again")
				assert.Equal(t, "!GONE 0", l.attachJob(t, io.Discard, again.ID, "5", "", "", "", "60"))
				assert.NoFileExists(t, filepath.Join(cache, "again"), "the buried job ran again")
				// Two days after its end the tombstone goes too. (Once the
				// last sweep is over: a server that starts while another
				// sweeps leaves the sweep to it.)
				require.EventuallyWithT(t, func(c *assert.CollectT) {
					assert.NoDirExists(c, filepath.Join(here, "sweeping"), "the last sweep is over")
				}, 10*time.Second, 20*time.Millisecond)
				older := time.Now().Add(-49 * time.Hour)
				require.NoError(t, os.Chtimes(filepath.Join(jobs, stale.ID+".status"), older, older))
				require.NoError(t, os.Chtimes(filepath.Join(here, "swept"), old, old))
				startLocal(t, sh, true, "XDG_CACHE_HOME="+cache)
				require.EventuallyWithT(t, func(c *assert.CollectT) {
					matches, _ := filepath.Glob(filepath.Join(jobs, stale.ID+".*"))
					assert.Empty(c, matches)
				}, 5*time.Second, 20*time.Millisecond)
			})
			t.Run("jobs kill of an ended job leaves its tombstone", func(t *testing.T) {
				t.Parallel()
				// A client lost its connection as its job ended; a person
				// kills (forgets) the job meanwhile. The client's start,
				// sent again, learns how it ended and runs nothing.
				cache := cacheDir(t)
				jobs := filepath.Join(cache, "pi-remote", "jobs")
				l := startLocal(t, sh, true, "XDG_CACHE_HOME="+cache)
				runs := filepath.Join(cache, "runs")
				job := newJob("echo ran >>" + shellquote.Quote(runs))
				assert.Equal(t, "0", l.runJob(t, io.Discard, job))
				for range 2 {
					var out bytes.Buffer
					l.do(t, &out, "call", "stop_job", job.ID)
					assert.Equal(t, "OK removed\n", out.String())
					assert.Equal(t, []string{filepath.Join(jobs, job.ID+".status")}, jobFiles(jobs, job.ID))
				}
				assert.Equal(t, "!GONE 0", l.runJob(t, io.Discard, job), "a start sent again")
				ran, err := os.ReadFile(runs)
				require.NoError(t, err)
				assert.Equal(t, "ran\n", string(ran), "the job ran once")
			})
			t.Run("output past the cap stops the command", func(t *testing.T) {
				t.Parallel()
				l := startLocal(t, sh, true)
				job := newJob(`yes 0123456789abcdef; echo not reached`)
				job.Cap = "100000"
				var out bytes.Buffer
				status := l.runJob(t, &out, job)
				assert.Equal(t, "141 capped", status)
				assert.Greater(t, out.Len(), 100000, "past the cap")
				assert.Less(t, out.Len(), 100000+64<<10, "by less than a block")
				assert.True(t, strings.HasPrefix(out.String(), "0123456789abcdef\n0123456789abcdef\n"))

				// One that ignores SIGPIPE and exits 0 is capped all the
				// same: its output is cut.
				job = newJob(`trap '' PIPE; while echo 0123456789abcdef; do :; done 2>/dev/null; exit 0`)
				job.Cap = "100000"
				out.Reset()
				assert.Equal(t, "0 capped", l.runJob(t, &out, job))
				assert.Greater(t, out.Len(), 100000, "past the cap")
				assert.Less(t, out.Len(), 100000+64<<10, "by less than a block")

				job = newJob(`printf %0100000d 0`)
				job.Cap = "100000"
				out.Reset()
				assert.Equal(t, "0", l.runJob(t, &out, job), "exactly the cap is allowed")
				assert.Equal(t, 100000, out.Len())

				// Past the cap by less than a block, all of it in one
				// read, and then ended: nothing was cut.
				job = newJob(`printf 0123456789AB`)
				job.Cap = "10"
				out.Reset()
				assert.Equal(t, "0", l.runJob(t, &out, job), "nothing cut")
				assert.Equal(t, "0123456789AB", out.String())
			})
			t.Run("the cap holds when a sweep took the relay's report", func(t *testing.T) {
				t.Parallel()
				// The job's server is gone and its FIFO's files are a
				// minute old: a sweep removes them while the job runs.
				cache := cacheDir(t)
				jobs := filepath.Join(cache, "pi-remote", "jobs")
				l := startLocal(t, sh, true, "XDG_CACHE_HOME="+cache)
				arg := fmt.Sprintf("33.%06d", rand.IntN(1000000))
				job := newJob("echo start; exec 2>/dev/null; sleep " + arg + "; head -c 3000000 /dev/zero")
				job.Cap = "1000"
				require.NoError(t, l.send(startJob(job)))
				sleep := soleSleeper(t, arg)
				reports, err := filepath.Glob(filepath.Join(hostDir(t, jobs), "fifo-*.dd"))
				require.NoError(t, err)
				require.Len(t, reports, 1, "the relay's report")
				require.NoError(t, os.Remove(reports[0]))
				require.NoError(t, syscall.Kill(sleep, syscall.SIGKILL))
				var out bytes.Buffer
				assert.Equal(t, "141 capped", l.nextJobAnswer(t, &out, job.ID))
				assert.Greater(t, out.Len(), 1000, "past the cap")
				assert.Less(t, out.Len(), 1000+64<<10, "by less than a block")
			})
			t.Run("where sleep takes whole seconds, a command's children still get their grace", func(t *testing.T) {
				t.Parallel()
				// The grace (0.3 s) is a fraction: such a sleep failed at
				// once, and the output a background child wrote a moment
				// after its command ended was cut.
				shim := t.TempDir()
				sleep, err := exec.LookPath("sleep")
				require.NoError(t, err)
				script := "#!/bin/sh\ncase $1 in *.*) echo \"sleep: invalid time interval '$1'\" >&2; exit 1 ;; esac\nexec " + sleep + " \"$@\"\n"
				require.NoError(t, os.WriteFile(filepath.Join(shim, "sleep"), []byte(script), 0o755))
				l := startLocal(t, sh, true, "PATH="+shim+string(os.PathListSeparator)+os.Getenv("PATH"))
				status, out := l.run(t, "(echo early; "+sleep+" 0.15; echo late) & echo ended")
				assert.Equal(t, "0", status)
				assert.Contains(t, out, "late\n", "written after its command ended, within the grace")
			})
			t.Run("a jobs directory others may read is made the user's alone", func(t *testing.T) {
				t.Parallel()
				// (Made by hand, or by another program: the jobs' files
				// are made under the login's umask.)
				cache := cacheDir(t)
				jobs := filepath.Join(cache, "pi-remote", "jobs")
				require.NoError(t, os.MkdirAll(jobs, 0o700))
				require.NoError(t, os.Chmod(jobs, 0o755))
				l := startLocal(t, sh, true, "XDG_CACHE_HOME="+cache)
				assert.False(t, l.privateJobs, "the jobs directory is used")
				fi, err := os.Stat(jobs)
				require.NoError(t, err)
				assert.Equal(t, fs.FileMode(0o700), fi.Mode().Perm())
				status, out := l.run(t, "echo kept")
				assert.Equal(t, "0", status)
				assert.Equal(t, "kept\n", out)
			})
			t.Run("a running job's claim stays new", func(t *testing.T) {
				t.Parallel()
				// A sweep of an earlier version of the script took an old
				// status file for an ended job's: the waiter's ticks
				// (every second for a lease of 3 s) keep it new.
				cache := cacheDir(t)
				jobs := filepath.Join(cache, "pi-remote", "jobs")
				l := startLocal(t, sh, true, "XDG_CACHE_HOME="+cache)
				arg := fmt.Sprintf("34.%06d", rand.IntN(1000000))
				t.Cleanup(func() { exec.Command("pkill", "-x", "-f", "sleep "+arg).Run() })
				job := newJob("sleep " + arg)
				job.TTL = "3"
				require.NoError(t, l.send(startJob(job)))
				status := filepath.Join(jobs, job.ID+".status")
				require.EventuallyWithT(t, func(c *assert.CollectT) {
					assert.NotEmpty(c, sleeping(t, arg))
				}, 5*time.Second, 10*time.Millisecond)
				old := time.Now().Add(-3 * time.Minute)
				require.NoError(t, os.Chtimes(status, old, old))
				require.EventuallyWithT(t, func(c *assert.CollectT) {
					fi, err := os.Stat(status)
					require.NoError(c, err)
					assert.Zero(c, fi.Size(), "still running")
					assert.WithinDuration(c, time.Now(), fi.ModTime(), 10*time.Second)
				}, 5*time.Second, 50*time.Millisecond)
			})
			t.Run("a job whose server goes at once still runs", func(t *testing.T) {
				t.Parallel()
				// The connection lost the moment the job started: its
				// server and private directory go before the job may have
				// opened its output FIFO.
				cache := cacheDir(t)
				for range 5 {
					first := startLocal(t, sh, true, "XDG_CACHE_HOME="+cache)
					job := newJob("echo ran; exit 3")
					first.stream(t, job)
					// As sshd does when the connection goes.
					first.cmd.Process.Signal(syscall.SIGHUP)
					first.close()
					var out bytes.Buffer
					second := startLocal(t, sh, true, "XDG_CACHE_HOME="+cache)
					status := second.runJob(t, &out, job)
					if status == "!ATTACH" {
						// (Its start sent again finds it: the client attaches.)
						status = second.attachJob(t, &out, job.ID, "0", "", "", "", "60")
					}
					if status == "!NOJOB" {
						// The first server died before the job began: the
						// host dropped it, and the client starts it again.
						status = second.runJob(t, &out, job)
					}
					assert.Equal(t, "3", status)
					assert.Equal(t, "ran\n", out.String())
					// Nothing of the first server's stream is left following it.
					require.EventuallyWithT(t, func(c *assert.CollectT) {
						assert.Empty(c, following(t, job.ID+".out"))
					}, 5*time.Second, 50*time.Millisecond)
				}
			})
			t.Run("several jobs are attached to in one request", func(t *testing.T) {
				t.Parallel()
				cache := cacheDir(t)
				first := startLocal(t, sh, true, "XDG_CACHE_HOME="+cache)
				// Three jobs outlive their servers: one still printing, one
				// ended, one that will be killed.
				printing := newJob(printLines(40, "0.02", 5))
				first.stream(t, printing)
				got := first.readUntil(t, "line 3\n")
				first.close()
				ended := newJob("echo ended; exit 2")
				l := startLocal(t, sh, true, "XDG_CACHE_HOME="+cache)
				l.runJob(t, io.Discard, ended)
				sleeper := newJob("echo sleeping; exec sleep 30")
				other := startLocal(t, sh, true, "XDG_CACHE_HOME="+cache)
				other.stream(t, sleeper)
				require.Equal(t, "sleeping\n", other.readUntil(t, "sleeping\n").String())
				other.close()

				outs := map[string]*bytes.Buffer{}
				ends := map[string]string{}
				missing := randhex.String(8)
				args := []string{"60", printing.ID, strconv.Itoa(got.Len()), "", "", "", ended.ID, "0", "", "", "", sleeper.ID, "9", "", "", "", missing, "0", "", "", ""}
				require.NoError(t, l.send(call("attach_jobs", args...)))
				require.NoError(t, l.write("k "+sleeper.ID+"\n"))
				status, err := readAttach(l.server, bufferPer(outs), func(id, status string) { ends[id] = status })
				require.NoError(t, err)
				assert.Equal(t, "OK", status)
				assert.Equal(t, numberedLines(40), got.String()+outs[printing.ID].String(), "every byte once")
				assert.Equal(t, "5", ends[printing.ID])
				assert.Equal(t, "ended\n", outs[ended.ID].String())
				assert.Equal(t, "2", ends[ended.ID])
				assert.Nil(t, outs[sleeper.ID], "nothing past its offset")
				assert.Equal(t, "137", ends[sleeper.ID], "killed")
				assert.Equal(t, "!NOJOB", ends[missing])
				assert.Len(t, ends, 4)
				status, out := l.run(t, "echo next")
				assert.Equal(t, "0", status, "the server serves on")
				assert.Equal(t, "next\n", out)
			})
			t.Run("a job let go of runs on and joins a running attach request", func(t *testing.T) {
				t.Parallel()
				cache := cacheDir(t)
				l := startLocal(t, sh, true, "XDG_CACHE_HOME="+cache)
				// Let go of while its output streams.
				printing := newJob(printLines(40, "0.05", 4))
				l.stream(t, printing)
				got := l.readUntil(t, "line 3\n")
				require.NoError(t, l.control(hostproto.LetGo))
				assert.Equal(t, "!DETACHED", l.jobAnswer(t, got, printing.ID))
				assert.NotContains(t, got.String(), "line 40\n", "it runs on")
				// Let go of at once, before its output would stream.
				quiet := newJob("sleep 1; echo late")
				require.NoError(t, l.send(startJob(quiet)))
				require.NoError(t, l.control(hostproto.LetGo))
				var none bytes.Buffer
				assert.Equal(t, "!DETACHED", l.jobAnswer(t, &none, quiet.ID))
				assert.Empty(t, none.String())
				// The server is free for the next request.
				status, out := l.run(t, "echo next")
				assert.Equal(t, "0", status)
				assert.Equal(t, "next\n", out)

				sleeper := newJob("exec sleep 30")
				other := startLocal(t, sh, true, "XDG_CACHE_HOME="+cache)
				require.NoError(t, other.send(startJob(sleeper)))
				require.NoError(t, other.control(hostproto.LetGo))
				assert.Equal(t, "!DETACHED", other.jobAnswer(t, io.Discard, sleeper.ID))

				// One attach request for the sleeper; the other two join it.
				outs := map[string]*bytes.Buffer{}
				ends := map[string]string{}
				require.NoError(t, l.send(call("attach_jobs", "60", sleeper.ID, "0", "", "", "")))
				require.NoError(t, l.write(fmt.Sprintf("a %s %d   \n", printing.ID, got.Len())))
				require.NoError(t, l.write("a "+quiet.ID+" 0   \n"))
				status, err := readAttach(l.server, bufferPer(outs), func(id, status string) {
					ends[id] = status
					if len(ends) == 2 {
						l.write("k " + sleeper.ID + "\n")
					}
				})
				require.NoError(t, err)
				assert.Equal(t, "OK", status)
				assert.Equal(t, numberedLines(40), got.String()+outs[printing.ID].String(), "every byte once")
				assert.Equal(t, "4", ends[printing.ID])
				assert.Equal(t, "late\n", outs[quiet.ID].String())
				assert.Equal(t, "0", ends[quiet.ID])
				assert.Equal(t, "137", ends[sleeper.ID], "killed once the others ended")
			})
			t.Run("an attach request let go of ends early, its jobs running on", func(t *testing.T) {
				t.Parallel()
				cache := cacheDir(t)
				l := startLocal(t, sh, true, "XDG_CACHE_HOME="+cache)
				sleeper := newJob("echo sleeping; exec sleep 30")
				l.stream(t, sleeper)
				l.readUntil(t, "sleeping\n")
				require.NoError(t, l.control(hostproto.LetGo))
				require.Equal(t, "!DETACHED", l.jobAnswer(t, io.Discard, sleeper.ID))

				require.NoError(t, l.send(call("attach_jobs", "60", sleeper.ID, "9", "", "", "")))
				require.NoError(t, l.write("d\n"))
				ends := map[string]string{}
				status, err := readAttach(l.server, func(string) io.Writer { return io.Discard }, func(id, status string) { ends[id] = status })
				require.NoError(t, err)
				assert.Equal(t, "!DETACHED", status)
				assert.Empty(t, ends, "no job ended")
				status, out := l.run(t, "echo next")
				assert.Equal(t, "0", status, "the server serves on")
				assert.Equal(t, "next\n", out)
				// The job runs on: a later attach request kills it.
				require.NoError(t, l.send(call("attach_jobs", "60", sleeper.ID, "9", "", "", "")))
				require.NoError(t, l.write("k "+sleeper.ID+"\n"))
				status, err = readAttach(l.server, func(string) io.Writer { return io.Discard }, func(id, status string) { ends[id] = status })
				require.NoError(t, err)
				assert.Equal(t, "OK", status)
				assert.Equal(t, "137", ends[sleeper.ID])
			})
			t.Run("a batch's jobs run in one request, each answered as it ends", func(t *testing.T) {
				t.Parallel()
				cache := cacheDir(t)
				jobs := filepath.Join(cache, "pi-remote", "jobs")
				l := startLocal(t, sh, true, "XDG_CACHE_HOME="+cache)
				// A job of an earlier request, whose result the client has.
				earlier := newJob("echo earlier")
				assert.Equal(t, "0", l.runJob(t, io.Discard, earlier))
				big := strings.Repeat("0123456789abcdef", 20000) // 320 KB: more than a pipe holds
				add := func(id, script, dir, save string) {
					t.Helper()
					require.NoError(t, l.send(call("add_job", id, script, dir, save, "100", "1000", "batch job")))
				}
				fast, failing, large, slow, nodir, sleeper, saved := randhex.String(8), randhex.String(8), randhex.String(8), randhex.String(8), randhex.String(8), randhex.String(8), randhex.String(8)
				savePath := filepath.Join(t.TempDir(), "saved-output")
				marker := fmt.Sprintf("30.%d", time.Now().UnixNano()%1000000007)
				t.Cleanup(func() { exec.Command("pkill", "-f", "sleep "+marker).Run() })
				require.NoError(t, l.send(call("run_jobs", "60", "", earlier.ID)))
				add(slow, "sleep 0.4; echo slow", "", "")
				add(fast, "echo fast", "", "")
				add(failing, "printf 'no newline'; exit 3", "", "")
				add(large, "printf '%s' "+big, "", "")
				add(nodir, "echo never", filepath.Join(cache, "no", "such"), "")
				add(sleeper, "exec sleep "+marker, "", "")
				add(saved, "i=0; while [ $i -lt 200 ]; do echo line $i; i=$((i+1)); done", "", savePath)

				outs := map[string]*bytes.Buffer{}
				var order []string
				ends := map[string]string{}
				status, err := readAttach(l.server, bufferPer(outs), func(id, status string) {
					ends[id] = status
					order = append(order, id)
					if len(ends) == 6 {
						// The sleeper is the one left: let go of it.
						l.write("d " + sleeper + "\n")
					}
					if len(ends) == 7 {
						l.write("e\n")
					}
				})
				require.NoError(t, err)
				assert.Equal(t, "OK", status)
				assert.Equal(t, "fast\n", outs[fast].String())
				assert.Equal(t, "0", ends[fast])
				assert.Equal(t, "no newline", outs[failing].String())
				assert.Equal(t, "3", ends[failing])
				assert.Equal(t, big, outs[large].String(), "every byte once")
				assert.Equal(t, "0", ends[large])
				assert.Equal(t, "slow\n", outs[slow].String())
				assert.Equal(t, "!ENOENT", ends[nodir])
				assert.Nil(t, outs[nodir])
				assert.Equal(t, "!DETACHED", ends[sleeper])
				assert.Equal(t, "0 saved", ends[saved], "200 lines are more than 100 bytes")
				assert.FileExists(t, savePath)
				assert.Equal(t, sleeper, order[6], "the sleeper after the six that end")
				assert.Less(t, slices.Index(order, fast), slices.Index(order, slow), "each as it ends, not in the order sent")
				require.EventuallyWithT(t, func(c *assert.CollectT) {
					matches, _ := filepath.Glob(filepath.Join(jobs, earlier.ID+".*"))
					assert.Empty(c, matches, "the forgotten job's files")
				}, 5*time.Second, 20*time.Millisecond)

				// The jobs' FIFOs, made ahead, went with the answer, all but
				// the one of the job let go of, which runs on.
				assert.Len(t, batchFIFOs(t, jobs), 2, "the sleeper's FIFO and its mark")

				// The server serves on; the job let go of runs on, and is
				// followed (and killed) by an attach request.
				status, out := l.run(t, "echo next")
				assert.Equal(t, "0", status)
				assert.Equal(t, "next\n", out)
				assert.NotEmpty(t, sleeping(t, marker), "let go of, it runs on")
				require.NoError(t, l.send(call("attach_jobs", "60", sleeper, "0", "", "", "")))
				require.NoError(t, l.write("k "+sleeper+"\n"))
				ends = map[string]string{}
				status, err = readAttach(l.server, func(string) io.Writer { return io.Discard }, func(id, status string) { ends[id] = status })
				require.NoError(t, err)
				assert.Equal(t, "OK", status)
				assert.Equal(t, "137", ends[sleeper])

				// A start sent again finds its job (the client attaches);
				// "k ID" kills a job of the batch.
				require.NoError(t, l.send(call("run_jobs", "60", "", "")))
				add(fast, "echo again", "", "")
				killed := randhex.String(8)
				add(killed, "exec sleep "+marker, "", "")
				require.NoError(t, l.write("k "+killed+"\n"))
				ends = map[string]string{}
				status, err = readAttach(l.server, func(string) io.Writer { return io.Discard }, func(id, status string) {
					ends[id] = status
					if len(ends) == 2 {
						l.write("e\n")
					}
				})
				require.NoError(t, err)
				assert.Equal(t, "OK", status)
				assert.Equal(t, "!ATTACH", ends[fast])
				assert.Equal(t, "137", ends[killed])
				assert.Empty(t, sleeping(t, marker))
				// (The sleeper's waiter removed its FIFO as it ended.)
				require.EventuallyWithT(t, func(c *assert.CollectT) {
					assert.Empty(c, batchFIFOs(t, jobs))
				}, 5*time.Second, 20*time.Millisecond)
			})
			t.Run("chatty jobs with a cap end by themselves, not by a lease they hold", func(t *testing.T) {
				t.Parallel()
				// Their waiters' relays end and restart often (a small cap:
				// dd's count), and the timers of a short lease end every
				// second: BusyBox's builtins, cut short by the trap, once
				// made a waiter take its command for ended and kill it
				// for its lease.
				l := startLocal(t, sh, true, "XDG_CACHE_HOME="+t.TempDir())
				type chatty struct {
					script string
					n      int
					status string
				}
				loop := func(n int, nap, end string) string {
					return fmt.Sprintf(`i=0; while [ $i -lt %d ]; do printf z; %s i=$((i+1)); done; %s`, n, nap, end)
				}
				jobs := []chatty{
					{loop(250, "", "exit 0"), 250, "0"},
					{loop(14, "sleep 0.003;", "kill -s KILL $$"), 14, "137"},
					{loop(234, "sleep 0.001;", "exit 7"), 234, "7"},
					{loop(293, "sleep 0.006;", "exit 127"), 293, "127"},
					{loop(124, "", "kill -s ALRM $$"), 124, "142"},
				}
				for range 2 {
					start := time.Now()
					require.NoError(t, l.send(call("run_jobs", "3", "60000", "")))
					ids := map[string]chatty{}
					for _, job := range jobs {
						id := randhex.String(8)
						ids[id] = job
						require.NoError(t, l.send(call("add_job", id, job.script, "", "", "", "", "chatty")))
					}
					outs := map[string]*bytes.Buffer{}
					ends := map[string]string{}
					took := map[string]time.Duration{}
					status, err := readAttach(l.server, bufferPer(outs), func(id, status string) {
						ends[id] = status
						took[id] = time.Since(start)
						if len(ends) == len(jobs) {
							l.write("e\n")
						}
					})
					require.NoError(t, err)
					assert.Equal(t, "OK", status)
					for id, job := range ids {
						// (A host slowed down by other work may make a job
						// outlive its lease: killed then, not before.)
						if ends[id] == "137 lease" && took[id] >= 3*time.Second {
							continue
						}
						assert.Equal(t, job.status, ends[id], "%s (ended after %v)", job.script, took[id])
						if assert.NotNil(t, outs[id], "%s", job.script) {
							assert.Equal(t, strings.Repeat("z", job.n), outs[id].String(), "%s", job.script)
						}
					}
				}
			})
			t.Run("a batch's jobs go on when the client goes", func(t *testing.T) {
				t.Parallel()
				cache := cacheDir(t)
				jobs := filepath.Join(cache, "pi-remote", "jobs")
				l := startLocal(t, sh, true, "XDG_CACHE_HOME="+cache)
				id := randhex.String(8)
				require.NoError(t, l.send(call("run_jobs", "60", "", "")))
				require.NoError(t, l.send(call("add_job", id, "sleep 0.5; echo done", "", "", "", "", "batch job")))
				require.EventuallyWithT(t, func(c *assert.CollectT) {
					assert.FileExists(c, filepath.Join(jobs, id+".status"), "its waiter began")
				}, 5*time.Second, 10*time.Millisecond)
				l.close()
				require.EventuallyWithT(t, func(c *assert.CollectT) {
					status, _ := os.ReadFile(filepath.Join(jobs, id+".status"))
					// (No size on its second line: without a cap, its
					// relay is a cat, which does not count.)
					assert.Equal(c, "0\n\n", string(status))
				}, 10*time.Second, 20*time.Millisecond)
				out, err := os.ReadFile(filepath.Join(jobs, id+".out"))
				require.NoError(t, err)
				assert.Equal(t, "done\n", string(out))
			})
			t.Run("a job whose server died before it began is started again", func(t *testing.T) {
				t.Parallel()
				cache := cacheDir(t)
				jobs := filepath.Join(cache, "pi-remote", "jobs")
				require.NoError(t, os.MkdirAll(jobs, 0o700))
				gone := exec.Command("true")
				require.NoError(t, gone.Run())
				// As its server left it: created, then nothing.
				claim := func(id string) {
					require.NoError(t, os.WriteFile(filepath.Join(jobs, id+".out"), nil, 0o600))
					require.NoError(t, os.WriteFile(filepath.Join(jobs, id+".server"), []byte(strconv.Itoa(gone.Process.Pid)+"\n"), 0o600))
				}
				l := startLocal(t, sh, true, "XDG_CACHE_HOME="+cache)
				job := newJob("echo ran; exit 3")
				claim(job.ID)
				var out bytes.Buffer
				assert.Equal(t, "!ATTACH", l.runJob(t, &out, job), "a start finds it")
				assert.Equal(t, "!NOJOB", l.attachJob(t, &out, job.ID, "0", "", "", "", "60"), "dropped, not waited for")
				assert.Equal(t, "3", l.runJob(t, &out, job), "started anew")
				assert.Equal(t, "ran\n", out.String())

				other := randhex.String(8)
				claim(other)
				ends := map[string]string{}
				require.NoError(t, l.send(call("attach_jobs", "60", other, "0", "", "", "")))
				status, err := readAttach(l.server, func(string) io.Writer { return io.Discard }, func(id, status string) { ends[id] = status })
				require.NoError(t, err)
				assert.Equal(t, "OK", status)
				assert.Equal(t, "!NOJOB", ends[other])
			})
			t.Run("a server that cannot catch USR1 streams and lets go all the same", func(t *testing.T) {
				t.Parallel()
				// A login shell that ignores USR1 hands that on, and no
				// trap can undo it: run_job's answer once woke on USR1 to
				// stream or let go. Whatever the answer waits on, it must
				// not need a signal the login shell may have ignored.
				wrapped := append([]string{"sh", "-c", `trap '' USR1; exec "$0" "$@"`, sh[0]}, sh[1:]...)
				l := startLocal(t, wrapped, true)
				dir := t.TempDir()
				// waits for FILE, 20 s at most, and says which came first.
				waitFor := func(file string) string {
					return fmt.Sprintf(`i=0; until [ -e %[1]s ] || [ $i -ge 400 ]; do sleep 0.05; i=$((i+1)); done; [ -e %[1]s ] && echo seen || echo timed-out`, file)
				}
				streamed := filepath.Join(dir, "streamed")
				streaming := newJob("echo start; " + waitFor(streamed))
				l.stream(t, streaming)
				l.readUntil(t, "start\n")
				require.NoError(t, os.WriteFile(streamed, nil, 0o600))
				var rest bytes.Buffer
				assert.Equal(t, "0", l.jobAnswer(t, &rest, streaming.ID))
				assert.Equal(t, "seen\n", rest.String(), "the output came while the command ran")

				let := filepath.Join(dir, "let-go")
				job := newJob(waitFor(let))
				require.NoError(t, l.send(startJob(job)))
				require.NoError(t, l.control(hostproto.LetGo))
				assert.Equal(t, "!DETACHED", l.jobAnswer(t, io.Discard, job.ID), "let go of while it ran")
				require.NoError(t, os.WriteFile(let, nil, 0o600))
				status, out := l.run(t, "echo next")
				assert.Equal(t, "0", status, "the server serves on")
				assert.Equal(t, "next\n", out)
			})
			t.Run("a server hung up while streaming leaves nothing behind", func(t *testing.T) {
				t.Parallel()
				l := startLocal(t, sh, true)
				job := newJob("echo started; sleep 0.5; echo done")
				l.stream(t, job)
				// The stream is running.
				l.readUntil(t, "started\n")
				sid := l.cmd.Process.Pid // started with a session of its own
				l.cmd.Process.Signal(syscall.SIGHUP)
				require.EventuallyWithT(t, func(c *assert.CollectT) {
					assert.Empty(c, following(t, job.ID+".out"))
				}, 5*time.Second, 50*time.Millisecond)
				// Nor anything else once the job has ended: its watcher,
				// whose writes into the private directory the server
				// removed fail, ends too (BusyBox's went round for ever,
				// a core's worth of CPU). (15 s: a fresh-clone CI under
				// load once saw two of its ended processes still unreaped
				// at 5 s.)
				require.EventuallyWithT(t, func(c *assert.CollectT) {
					assert.Empty(c, inSession(t, sid))
				}, 15*time.Second, 50*time.Millisecond)
			})
			t.Run("a start sent twice runs once", func(t *testing.T) {
				t.Parallel()
				cache := cacheDir(t)
				l := startLocal(t, sh, true, "XDG_CACHE_HOME="+cache)
				counter := filepath.Join(t.TempDir(), "runs")
				job := newJob("echo run >>" + counter + "; sleep 0.3; echo done")
				other := startLocal(t, sh, true, "XDG_CACHE_HOME="+cache)
				require.NoError(t, l.send(startJob(job)))
				require.EventuallyWithT(t, func(c *assert.CollectT) {
					assert.FileExists(c, counter, "the job began")
				}, 5*time.Second, 10*time.Millisecond)
				var out bytes.Buffer
				assert.Equal(t, "!ATTACH", other.runJob(t, &out, job), "the job started before")
				assert.Equal(t, "0", other.attachJob(t, &out, job.ID, "0", "", "", "", "60"), "attached")
				assert.Equal(t, "done\n", out.String())
				out.Reset()
				assert.Equal(t, "0", l.jobAnswer(t, &out, job.ID), "the start that ran it")
				assert.Equal(t, "done\n", out.String())
				runs, _ := os.ReadFile(counter)
				assert.Equal(t, "run\n", string(runs))
			})
			t.Run("a slow reader gets all of the output", func(t *testing.T) {
				t.Parallel()
				l := startLocal(t, sh, true)
				w := &slowio.Writer{Pause: 20 * time.Millisecond}
				status := l.runJob(t, w, newJob(`awk 'BEGIN { for (i = 1; i <= 100000; i++) print i }'; echo END-MARKER`))
				assert.Equal(t, "0", status)
				lines := strings.Split(strings.TrimSuffix(w.String(), "\n"), "\n")
				require.Len(t, lines, 100001)
				assert.Equal(t, "100000", lines[99999])
				assert.Equal(t, "END-MARKER", lines[100000])
			})
			for _, setsid := range []bool{true, false} {
				t.Run(fmt.Sprintf("cancel kills the command and its children, setsid %v", setsid), func(t *testing.T) {
					l := startLocal(t, sh, setsid)
					marker := fmt.Sprintf("300.%d", time.Now().UnixNano()%1000000007)
					t.Cleanup(func() { exec.Command("pkill", "-f", "sleep "+marker).Run() })
					// Two children, and one that took a session of its own
					// (setsid) with a child of its own.
					job := newJob(fmt.Sprintf("echo started; sleep %s & sleep %s & setsid sh -c 'sleep %s & sleep %s; :' & wait", marker, marker, marker, marker))
					require.NoError(t, l.send(startJob(job)))
					require.Eventually(t, func() bool { return len(sleeping(t, marker)) == 4 }, 5*time.Second, 10*time.Millisecond)
					require.NoError(t, l.control(hostproto.Kill))
					var out bytes.Buffer
					l.jobAnswer(t, &out, job.ID)
					assert.Equal(t, "started\n", out.String())
					// SIGKILL is sent before the answer; the processes end a
					// moment later.
					assert.Eventually(t, func() bool { return len(sleeping(t, marker)) == 0 }, 5*time.Second, 10*time.Millisecond, "no process of the command is left")
					status, out2 := l.run(t, "echo still serving")
					assert.Equal(t, "0", status)
					assert.Equal(t, "still serving\n", out2)
				})
			}
			t.Run("a cancel after the end is ignored", func(t *testing.T) {
				t.Parallel()
				l := startLocal(t, sh, true)
				l.run(t, "true")
				require.NoError(t, l.control(hostproto.Kill))
				status, out := l.run(t, "echo next")
				assert.Equal(t, "0", status)
				assert.Equal(t, "next\n", out)
			})
			t.Run("a request of 30,000 lines is read in linear time", func(t *testing.T) {
				t.Parallel()
				l := startLocal(t, sh, true)
				target := filepath.Join(t.TempDir(), "quotes")
				content := strings.Repeat("'\n", 30000)
				start := time.Now()
				var out bytes.Buffer
				l.do(t, &out, "call", "write_inline", target, "644", "", "0123", printfFormat([]byte(content)), "-")
				assert.Equal(t, "OK\n", out.String())
				assert.Less(t, time.Since(start), 20*time.Second, "quadratic parsing took 68 s")
				got, err := os.ReadFile(target)
				require.NoError(t, err)
				assert.Equal(t, content, string(got))
			})
			t.Run("raw data after a request is read exactly", func(t *testing.T) {
				t.Parallel()
				l := startLocal(t, sh, true)
				dir := t.TempDir()
				var out bytes.Buffer
				require.Equal(t, "0", l.do(t, &out, "call", "create_temp", filepath.Join(dir, "f"), "666", "0123", "-"))
				status, payload, _ := strings.Cut(out.String(), "\n")
				require.Equal(t, "OK", status)
				fields := strings.SplitN(payload, " ", 3)
				require.Len(t, fields, 3)
				inode, tmp := fields[0], fields[2]
				data := make([]byte, 3<<20)
				for i := range data {
					data[i] = byte(i * 7)
				}
				out.Reset()
				require.NoError(t, l.send(hostproto.Request{Name: "call", Args: []string{"receive_temp", tmp, inode, fmt.Sprint(len(data))}, Data: data}))
				_, err := l.readUntilMarker(&out)
				require.NoError(t, err)
				assert.Equal(t, "OK\n", out.String())
				got, err := os.ReadFile(tmp)
				require.NoError(t, err)
				assert.True(t, bytes.Equal(data, got), "the bytes, all of them")
				// A failed write still reads its data: the next request
				// comes whole.
				out.Reset()
				require.NoError(t, l.send(hostproto.Request{Name: "call", Args: []string{"receive_temp", filepath.Join(dir, "no", "such"), inode, "5"}, Data: []byte("12345")}))
				_, err = l.readUntilMarker(&out)
				require.NoError(t, err)
				assert.True(t, strings.HasPrefix(out.String(), "E ENOENT"), "got %q", out.String())
				status, echo := l.run(t, "echo in step")
				assert.Equal(t, "0", status)
				assert.Equal(t, "in step\n", echo)
			})
			t.Run("a failed temporary file is an error answer", func(t *testing.T) {
				t.Parallel()
				l := startLocal(t, sh, true)
				dir := "/sys" // not writable, even for root
				if os.Geteuid() != 0 {
					dir = t.TempDir()
					require.NoError(t, os.Chmod(dir, 0o555))
				}
				var out bytes.Buffer
				l.do(t, &out, "call", "write_inline", filepath.Join(dir, "pi-remote-test"), "644", "", "0123", "SECRET CONTENT", "-")
				assert.True(t, strings.HasPrefix(out.String(), "E EACCES "), "got %q", out.String())
				assert.NotContains(t, out.String(), "SECRET")
				status, echo := l.run(t, "echo alive")
				assert.Equal(t, "0", status)
				assert.Equal(t, "alive\n", echo)
			})
			t.Run("the temporary file is synced before the rename", func(t *testing.T) {
				t.Parallel()
				if out, _ := exec.Command(sh[0], append(sh[1:], "-c", "command -v sync")...).Output(); !strings.HasPrefix(string(out), "/") {
					t.Skipf("%s runs its own sync, which cannot be watched from PATH", sh[0])
				}
				// A sync that notes what it is asked to sync.
				shim := t.TempDir()
				journal := filepath.Join(shim, "journal")
				real, err := exec.LookPath("sync")
				require.NoError(t, err)
				script := "#!/bin/sh\nprintf '%s\\n' \"$PWD/$*\" >>" + journal + "\nexec " + real + " \"$@\"\n"
				require.NoError(t, os.WriteFile(filepath.Join(shim, "sync"), []byte(script), 0o755))
				l := startLocal(t, sh, true, "PATH="+shim+":"+os.Getenv("PATH"))
				target := filepath.Join(t.TempDir(), "f")
				var out bytes.Buffer
				l.do(t, &out, "call", "write_inline", target, "644", "", "0123", "data", "-")
				require.Equal(t, "OK\n", out.String())
				synced, err := os.ReadFile(journal)
				require.NoError(t, err)
				assert.Contains(t, string(synced), filepath.Join(filepath.Dir(target), ".f.pi-remote-0123"))
			})
			t.Run("private directories", func(t *testing.T) {
				t.Parallel()
				tmp := t.TempDir()
				stale := filepath.Join(tmp, ".pi-remote.999999999.dead")
				require.NoError(t, os.MkdirAll(filepath.Join(stale, "sub"), 0o700))
				cmd := exec.Command(sh[0], append(sh[1:], "-c", bootstrapScript)...)
				cmd.Env = append(os.Environ(), "TMPDIR="+tmp)
				cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
				stdin, err := cmd.StdinPipe()
				require.NoError(t, err)
				stdout, err := cmd.StdoutPipe()
				require.NoError(t, err)
				require.NoError(t, cmd.Start())
				s := &server{stdin: stdin, stdout: bufio.NewReader(stdout), stderr: &tailBuffer{max: 4096}, end: func() error { return cmd.Process.Kill() }}
				require.NoError(t, s.handshake(t.Context(), true))
				entries, err := os.ReadDir(tmp)
				require.NoError(t, err)
				require.Len(t, entries, 1, "the dead server's directory is swept, ours made")
				assert.NotEqual(t, filepath.Base(stale), entries[0].Name())
				// A server whose client stopped reading dies of SIGPIPE
				// on its next answer; its directory goes with it.
				stdout.Close()
				require.NoError(t, s.send(startJob(newJob("echo bye"))))
				done := make(chan error, 1)
				go func() { done <- cmd.Wait() }()
				select {
				case <-done:
				case <-time.After(10 * time.Second):
					cmd.Process.Kill()
					t.Fatal("the server did not exit")
				}
				entries, err = os.ReadDir(tmp)
				require.NoError(t, err)
				assert.Empty(t, entries)
			})
		})
	}
}

// A server goes on after its client's context ends mid-handshake: the
// handshake gives up with the context's error.
func TestServerHandshakeHonoursContext(t *testing.T) {
	cmd := exec.Command("sleep", "30")
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	s := &server{stdin: stdin, stdout: bufio.NewReader(stdout), stderr: &tailBuffer{max: 4096}, end: func() error { return cmd.Process.Kill() }}
	ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
	defer cancel()
	assert.ErrorIs(t, s.handshake(ctx, true), context.DeadlineExceeded)
}

// The printf format survives the shells that run the server program, as one line.
func TestPrintfFormatRoundTrip(t *testing.T) {
	content := "line 1\nit's 100% \\ done\n\x00\x01\x1e\xff caf\xc3\xa9\n-dash\n'\n\t\n"
	for _, sh := range testShells(t) {
		cmd := exec.Command(sh[0], append(sh[1:], "-c", `IFS= read -r f; printf "$f"`)...)
		format := printfFormat([]byte(content))
		assert.NotContains(t, format, "\n")
		cmd.Stdin = strings.NewReader(format + "\n")
		out, err := cmd.Output()
		require.NoError(t, err, "%v", sh)
		assert.Equal(t, content, string(out), "%v", sh)
	}
}

// batchFIFOs lists the FIFOs run_jobs made in jobs (and their marks).
func batchFIFOs(t *testing.T, jobs string) []string {
	t.Helper()
	matches, err := filepath.Glob(filepath.Join(hostDir(t, jobs), "fifo-*-g*"))
	require.NoError(t, err)
	return matches
}

// hostDir is this host's directory among the jobs in jobs (serve.sh's
// host_dir): the one there is, made by the servers of this test.
func hostDir(t *testing.T, jobs string) string {
	t.Helper()
	matches, err := filepath.Glob(filepath.Join(jobs, ".host.*"))
	require.NoError(t, err)
	require.Len(t, matches, 1)
	return matches[0]
}

// testJob is a job as the tests start it: the words of its batch of one
// ("run_jobs TTL CAP FORGET ID SCRIPT DIR SAVE SAVE_BYTES SAVE_LINES
// LABEL"), as the server reads them.
type testJob struct {
	hostproto.Job
	TTL    string // its lease, in seconds
	Cap    string // the most bytes of output it may write ("": no cap)
	Forget string // the IDs of jobs whose results the client has, space-separated
}

// newJob is a new job running script in the home directory, its output
// not saved, with a lease of a minute.
func newJob(script string) testJob {
	return testJob{Job: hostproto.Job{ID: randhex.String(8), Script: script, Label: "test job"}, TTL: "60"}
}

// startJob is the request that starts job: a batch of one, whose answer
// ends by itself once the job has its "X" frame.
func startJob(job testJob) hostproto.Request {
	return call("run_jobs", job.TTL, job.Cap, job.Forget, job.ID, job.Script, job.Dir, job.Save, job.SaveBytes, job.SaveLines, job.Label)
}

// printLines is a script that prints numberedLines(n), a line every nap
// seconds, and exits with code.
func printLines(n int, nap string, code int) string {
	return fmt.Sprintf(`i=1; while [ $i -le %d ]; do echo "line $i"; i=$((i+1)); sleep %s; done; exit %d`, n, nap, code)
}

// numberedLines is "line 1\n" to "line n\n".
func numberedLines(n int) string {
	var b strings.Builder
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, "line %d\n", i)
	}
	return b.String()
}

// bufferPer gives readAttach a buffer per job in outs, made on its first
// frame.
func bufferPer(outs map[string]*bytes.Buffer) func(id string) io.Writer {
	return func(id string) io.Writer {
		if outs[id] == nil {
			outs[id] = &bytes.Buffer{}
		}
		return outs[id]
	}
}
