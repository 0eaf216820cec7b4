//go:build unix

package ssh

import (
	"bytes"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
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

// plantJob writes the files of a job that has no status into jobs, as a
// server of host ("NAME BOOT") left them: started by server, its waiter
// waiter ("": none yet), its command's pid pid ("": none yet).
func plantJob(t *testing.T, jobs, id string, server int, host string, waiter, pid string) {
	t.Helper()
	require.NoError(t, os.MkdirAll(jobs, 0o700))
	record := strconv.Itoa(server) + " " + host + "\nplanted job\n"
	if waiter != "" {
		record += waiter + "\n"
		if pid != "" {
			record += pid + "\n"
		}
	}
	files := map[string]string{".out": "", ".lease": "60\n", ".server": record, ".status": ""}
	for suffix, content := range files {
		require.NoError(t, os.WriteFile(filepath.Join(jobs, id+suffix), []byte(content), 0o600))
	}
}

// sweptJustNow marks the jobs in jobs as swept by this host a moment ago:
// the next minute's server starts do not sweep them.
func sweptJustNow(t *testing.T, jobs string) {
	t.Helper()
	name, boot := thisHost(t)
	dir := filepath.Join(jobs, ".host."+boot+"."+name)
	require.NoError(t, os.MkdirAll(dir, 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "swept"), nil, 0o600))
}

// goneProcess is the pid of a process that has ended (and been reaped).
func goneProcess(t *testing.T) int {
	t.Helper()
	gone := exec.Command("true")
	require.NoError(t, gone.Run())
	return gone.Process.Pid
}

// bystander is a process of the test's that no job owns.
type bystander struct {
	cmd *exec.Cmd
}

func startBystander(t *testing.T) *bystander {
	t.Helper()
	b := &bystander{cmd: exec.Command("sleep", "300")}
	require.NoError(t, b.cmd.Start())
	t.Cleanup(func() {
		b.cmd.Process.Kill()
		b.cmd.Wait()
	})
	return b
}

func (b *bystander) pid() string { return strconv.Itoa(b.cmd.Process.Pid) }

// survived says whether the bystander was alive until now: the test ends
// it with SIGTERM, and it must die of that (not of a SIGKILL sent before).
func (b *bystander) survived(t *testing.T) bool {
	t.Helper()
	require.NoError(t, b.cmd.Process.Signal(syscall.SIGTERM))
	err := b.cmd.Wait()
	var exit *exec.ExitError
	require.True(t, errors.As(err, &exit), "got %v", err)
	ws := exit.Sys().(syscall.WaitStatus)
	return ws.Signaled() && ws.Signal() == syscall.SIGTERM
}

// A job's command pid (the fourth line of its .server) is trusted only
// while the job's waiter lives and the pid is its child: jobs kill
// (stop_job), a client's late cancel (cancel_job) and the attach
// request's "k" leave alone the process a stale record names; a job whose
// waiter is gone is lost, and only its files go.
func TestStalePidFileKillsNothing(t *testing.T) {
	t.Parallel()
	host := thisHostRecord(t)
	for _, sh := range testShells(t) {
		t.Run(strings.Join(sh, " "), func(t *testing.T) {
			t.Parallel()
			for _, tc := range []struct {
				name        string
				waiterAlive bool
				request     func(t *testing.T, l *localServer, id string) string
				want        string // the answer's output, or its prefix
				filesGo     bool
			}{
				{"jobs kill, waiter gone", false, callFile("stop_job"), "OK removed\n", true},
				{"jobs kill, waiter alive", true, callFile("stop_job"), "E EIO ", false},
				{"late cancel, waiter gone", false, callFile("cancel_job"), "OK\n", true},
				{"late cancel, waiter alive", true, callFile("cancel_job"), "OK\n", true},
				{"k of an attach request, waiter alive", true, killInAttach, "!DETACHED", false},
				{"k of an attach request, waiter gone", false, killInAttach, "X ", false},
			} {
				t.Run(tc.name, func(t *testing.T) {
					t.Parallel()
					cache := cacheDir(t)
					jobs := filepath.Join(cache, "pi-remote", "jobs")
					victim := startBystander(t)
					waiter := strconv.Itoa(goneProcess(t))
					if tc.waiterAlive {
						waiter = startBystander(t).pid()
					}
					id := randhex.String(8)
					plantJob(t, jobs, id, goneProcess(t), host, waiter, victim.pid())
					// (Swept a moment ago: the server's start leaves the
					// lost job to the request.)
					sweptJustNow(t, jobs)
					l := startLocal(t, sh, true, "XDG_CACHE_HOME="+cache)

					got := tc.request(t, l, id)
					assert.True(t, strings.HasPrefix(got, tc.want), "got %q, want %q...", got, tc.want)
					if tc.filesGo {
						assert.NoFileExists(t, filepath.Join(jobs, id+".out"))
					}
					assert.True(t, victim.survived(t), "the process the record names was killed")
				})
			}
			t.Run("a job's own process is still killed", func(t *testing.T) {
				t.Parallel()
				cache := cacheDir(t)
				l := startLocal(t, sh, true, "XDG_CACHE_HOME="+cache)
				job := newJob("echo started; exec sleep 300")
				l.stream(t, job)
				l.readUntil(t, "started\n")
				require.NoError(t, l.control(hostproto.LetGo))
				require.Equal(t, "!DETACHED", l.nextJobAnswer(t, io.Discard, job.ID))
				assert.Equal(t, "OK killed\n", callFile("stop_job")(t, l, job.ID))
				assert.Equal(t, "137 killed", l.attachJob(t, io.Discard, job.ID, "8", "", "", "", "60"))
			})
		})
	}
}

// callFile is a request of the file function fn for a job: its answer's
// output.
func callFile(fn string) func(t *testing.T, l *localServer, id string) string {
	return func(t *testing.T, l *localServer, id string) string {
		var out bytes.Buffer
		l.do(t, &out, "call", fn, id)
		return out.String()
	}
}

// killInAttach attaches to job id and asks for its kill ("k ID"), then
// lets go of the request: its "X" frame for the job, if any, or the
// status.
func killInAttach(t *testing.T, l *localServer, id string) string {
	require.NoError(t, l.send(call("attach_jobs", "60", id, "0", "", "", "")))
	// (The request's watcher reads these in order: a kill, if any, is
	// sent before "d" ends the answer.)
	require.NoError(t, l.write("k "+id+"\nd\n"))
	ends := map[string]string{}
	status, err := readAttach(l.server, func(string) io.Writer { return io.Discard }, func(id, status string) { ends[id] = status })
	require.NoError(t, err)
	if st, ok := ends[id]; ok {
		return "X " + st
	}
	return status
}

// Without /proc (a chroot; macOS) a job's pid is proven by ps where it
// takes -o and -p (not BusyBox's), and otherwise only by the waiter this
// server started and waits for; anything else is refused.
func TestJobProcessWithoutProc(t *testing.T) {
	t.Parallel()
	noPS := t.TempDir() // a PATH without ps
	for _, sh := range testShells(t) {
		t.Run(strings.Join(sh, " "), func(t *testing.T) {
			t.Parallel()
			out, _ := exec.Command(sh[0], append(sh[1:], "-c", `ps -o pid= -o ppid= -p $$`)...).Output()
			psWorks := len(strings.Fields(string(out))) == 2
			waiter := startBystander(t)
			victim := startBystander(t) // the test's child, as a job's command is its waiter's
			for _, tc := range []struct {
				name, waiter, own, path string
				want                    string
			}{
				{"ps: not the waiter's child", waiter.pid(), "", "", map[bool]string{true: "refused ended", false: "refused unproven"}[psWorks]},
				{"ps: the waiter's child", strconv.Itoa(os.Getpid()), "", "", map[bool]string{true: "proven " + victim.pid(), false: "refused unproven"}[psWorks]},
				{"no ps", waiter.pid(), "", noPS, "refused unproven"},
				{"no ps, this server's own waiter", waiter.pid(), waiter.pid(), noPS, "proven " + victim.pid()},
			} {
				t.Run(tc.name, func(t *testing.T) {
					jobs := t.TempDir()
					id := randhex.String(8)
					plantJob(t, jobs, id, goneProcess(t), "h b", tc.waiter, victim.pid())
					script := hostproto.Program + `
host_name=h boot_id=b host_id="h b" procfs=
if job_process "$1" "$2"; then echo "proven $job_process_pid"; else echo "refused $job_process_why"; fi`
					cmd := exec.Command(sh[0], append(sh[1:], "-c", script, "sh", filepath.Join(jobs, id), tc.own)...)
					if tc.path != "" {
						cmd.Env = append(os.Environ(), "PATH="+tc.path)
					}
					got, err := cmd.Output()
					require.NoError(t, err)
					assert.Equal(t, tc.want+"\n", string(got))
				})
			}
			assert.True(t, victim.survived(t), "a pid is only judged here, never killed")
		})
	}
}

// waitWaiter waits (up to 10 s) for the waiter of job id to end: it
// writes into the jobs directory until then.
func waitWaiter(t *testing.T, jobs, id string) {
	t.Helper()
	pid := waiterOf(t, jobs, id)
	require.Eventually(t, func() bool { return syscall.Kill(pid, 0) != nil }, 10*time.Second, 10*time.Millisecond, "the waiter ends")
}

// A job whose waiter was killed, with its server, between its claim (the
// empty status) and writing its pid is lost once the claim is a minute
// old: its command never began, and a request for it answers instead of
// waiting for good. Younger, it is taken for one starting.
func TestJobKilledAtItsClaimIsLost(t *testing.T) {
	t.Parallel()
	host := thisHostRecord(t)
	for _, sh := range testShells(t) {
		t.Run(strings.Join(sh, " "), func(t *testing.T) {
			t.Parallel()
			cache := cacheDir(t)
			jobs := filepath.Join(cache, "pi-remote", "jobs")
			plant := func(age time.Duration) string {
				id := randhex.String(8)
				plantJob(t, jobs, id, goneProcess(t), host, "", "")
				then := time.Now().Add(-age)
				require.NoError(t, os.Chtimes(filepath.Join(jobs, id+".status"), then, then))
				return id
			}
			attached, stopped, young := plant(2*time.Minute), plant(2*time.Minute), plant(0)
			sweptJustNow(t, jobs)
			l := startLocal(t, sh, true, "XDG_CACHE_HOME="+cache)

			assert.Equal(t, "!EIO the job ended without a status (its waiter was killed)",
				l.attachJob(t, io.Discard, attached, "0", "", "", "", "60"))
			assert.Equal(t, "OK removed\n", callFile("stop_job")(t, l, stopped))
			assert.Equal(t, []string{filepath.Join(jobs, stopped+".status")}, jobFiles(jobs, stopped), "its tombstone")
			status, err := os.ReadFile(filepath.Join(jobs, stopped+".status"))
			require.NoError(t, err)
			assert.Equal(t, "lost\n", string(status))
			assert.True(t, strings.HasPrefix(callFile("stop_job")(t, l, young), "E EIO "), "a job starting is not lost")
			assert.FileExists(t, filepath.Join(jobs, young+".out"))
		})
	}
}

// A job an earlier version of the script saved (JOB.saved, its output a
// link to the saved file) whose answer was lost is answered again as
// saved, and its saved output stays where it is.
func TestSavedJobOfAnEarlierScript(t *testing.T) {
	t.Parallel()
	host := thisHostRecord(t)
	for _, sh := range testShells(t) {
		t.Run(strings.Join(sh, " "), func(t *testing.T) {
			t.Parallel()
			cache := cacheDir(t)
			jobs := filepath.Join(cache, "pi-remote", "jobs")
			save := filepath.Join(t.TempDir(), "saved-output")
			require.NoError(t, os.WriteFile(save, []byte("line 1\nline 2\n"), 0o600))
			id := randhex.String(8)
			plantJob(t, jobs, id, goneProcess(t), host, strconv.Itoa(goneProcess(t)), "")
			for suffix, content := range map[string]string{".status": "0\n", ".saved": "saved\n", ".pid": "1\n"} {
				require.NoError(t, os.WriteFile(filepath.Join(jobs, id+suffix), []byte(content), 0o600))
			}
			require.NoError(t, os.Remove(filepath.Join(jobs, id+".out")))
			require.NoError(t, os.Symlink(save, filepath.Join(jobs, id+".out")))
			sweptJustNow(t, jobs)
			l := startLocal(t, sh, true, "XDG_CACHE_HOME="+cache)
			for range 2 {
				var out bytes.Buffer
				assert.Equal(t, "0 saved", l.attachJob(t, &out, id, "0", save, "1", "1", "60"))
				assert.Equal(t, "line 1\nline 2\n", out.String())
				fi, err := os.Lstat(save)
				require.NoError(t, err)
				assert.True(t, fi.Mode().IsRegular(), "the saved output is where it was")
			}
		})
	}
}

// A lost job's tombstone ("lost", no exit status) is written a moment
// before its other files go (sweep_jobs, stop_job): an attacher that reads
// it then answers that the status was lost, never "lost" as a status,
// which no client can parse.
func TestALostJobsTombstoneIsNoStatus(t *testing.T) {
	t.Parallel()
	host := thisHostRecord(t)
	for _, sh := range testShells(t) {
		t.Run(strings.Join(sh, " "), func(t *testing.T) {
			t.Parallel()
			cache := cacheDir(t)
			jobs := filepath.Join(cache, "pi-remote", "jobs")
			single, batch := randhex.String(8), randhex.String(8)
			for _, id := range []string{single, batch} {
				plantJob(t, jobs, id, goneProcess(t), host, strconv.Itoa(goneProcess(t)), "")
				require.NoError(t, os.WriteFile(filepath.Join(jobs, id+".status"), []byte("lost\n"), 0o600))
			}
			sweptJustNow(t, jobs)
			l := startLocal(t, sh, true, "XDG_CACHE_HOME="+cache)
			want := "!EIO the job ended without a status (its waiter was killed)"
			assert.Equal(t, want, l.attachJob(t, io.Discard, single, "0", "", "", "", "60"))
			require.NoError(t, l.send(call("attach_jobs", "60", batch, "0", "", "", "")))
			ends := map[string]string{}
			status, err := readAttach(l.server, func(string) io.Writer { return io.Discard }, func(id, status string) { ends[id] = status })
			require.NoError(t, err)
			assert.Equal(t, "OK", status)
			assert.Equal(t, want, ends[batch])
		})
	}
}

// A late cancel of a job the host does not have (its start never came, or
// its client collected it) answers at once: it took about 7 s, taken for a
// job that was starting. A start that arrives after it never runs.
func TestCancelOfAnUnknownJobAnswersAtOnce(t *testing.T) {
	t.Parallel()
	for _, sh := range testShells(t) {
		t.Run(strings.Join(sh, " "), func(t *testing.T) {
			t.Parallel()
			l := startLocal(t, sh, true, "XDG_CACHE_HOME="+t.TempDir())
			ran := filepath.Join(t.TempDir(), "ran")
			job := newJob("touch " + ran)
			start := time.Now()
			assert.Equal(t, "OK\n", callFile("cancel_job")(t, l, job.ID))
			assert.Less(t, time.Since(start), 3*time.Second)
			assert.Equal(t, "!GONE lost", l.runJob(t, io.Discard, job), "the start that came late")
			assert.NoFileExists(t, ran)
		})
	}
}
