//go:build unix

package ssh

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pi-remote/pi-remote/ops/ssh/internal/hostproto"
)

// A batch of one (run_jobs with a job's words) under a demanding client:
// words a model may write, a kill or a let-go at any moment of the answer,
// a client gone at any moment, output fast and much, or none at all.
func TestBatchOfOneHolds(t *testing.T) {
	t.Parallel()
	for _, sh := range testShells(t) {
		t.Run(strings.Join(sh, " "), func(t *testing.T) {
			t.Parallel()
			t.Run("a script of wide characters in a UTF-8 locale runs whatever its length", func(t *testing.T) {
				t.Parallel()
				cache := cacheDir(t)
				l := startLocal(t, sh, true, "XDG_CACHE_HOME="+cache, "LC_ALL=C.UTF-8")
				// 50,000 characters of 3 bytes: 150,000 bytes, more than one
				// argument may hold (128 KiB), though fewer characters than
				// the 65,536 bytes a script may have to go as one. The
				// command gets the locale it was started with.
				var out bytes.Buffer
				job := newJob("x='" + strings.Repeat("€", 50000) + "'; echo \"$LC_ALL ok\"")
				assert.Equal(t, "0", l.runJob(t, &out, job))
				assert.Equal(t, "C.UTF-8 ok\n", out.String())
				job = newJob("echo \"$LC_ALL short\"")
				out.Reset()
				assert.Equal(t, "0", l.runJob(t, &out, job))
				assert.Equal(t, "C.UTF-8 short\n", out.String())
			})
			t.Run("odd words reach the command as they are", func(t *testing.T) {
				t.Parallel()
				cache := cacheDir(t)
				l := startLocal(t, sh, true, "XDG_CACHE_HOME="+cache)
				// A directory and a save path with a newline, quotes, a
				// "$nl" of their own, a leading dash in a name.
				odd := "-d'ir\n$nl \"x\" \\ %s"
				dir := filepath.Join(l.tmp, odd)
				require.NoError(t, os.Mkdir(dir, 0o700))
				job := newJob(`pwd; printf '%s|' 'a$nl' "$nl" '\n' "'"; echo`)
				job.Dir = dir
				job.Label = "label\nsecond line %s $nl"
				var out bytes.Buffer
				assert.Equal(t, "0", l.runJob(t, &out, job))
				assert.Equal(t, dir+"\n"+`a$nl||\n|'|`+"\n", out.String())

				save := filepath.Join(l.tmp, "-s'ave\n$nl")
				job = newJob("echo one; echo two")
				job.Save, job.SaveBytes, job.SaveLines = save, "1", "100"
				out.Reset()
				assert.Equal(t, "0 saved", l.runJob(t, &out, job))
				assert.Equal(t, "one\ntwo\n", out.String())
				saved, err := os.ReadFile(save)
				require.NoError(t, err)
				assert.Equal(t, "one\ntwo\n", string(saved))

				// "-" and "--" are directories that are not there, not
				// $OLDPWD or an option.
				for _, d := range []string{"-", "--", "-P"} {
					job = newJob("echo ran")
					job.Dir = d
					assert.Equal(t, "!ENOENT", l.runJob(t, io.Discard, job), d)
				}
				status, got := l.run(t, "echo still serving")
				assert.Equal(t, "0", status)
				assert.Equal(t, "still serving\n", got)
			})
			t.Run("a kill at any moment kills, and the server stays in step", func(t *testing.T) {
				t.Parallel()
				l := startLocal(t, sh, true)
				arg := sleeper(t)
				for _, stream := range []bool{false, true} {
					for _, pause := range []time.Duration{0, time.Millisecond, 5 * time.Millisecond, 20 * time.Millisecond, 100 * time.Millisecond, 300 * time.Millisecond} {
						job := newJob("echo started; sleep " + arg + "; echo never")
						require.NoError(t, l.send(startJob(job)))
						if stream {
							require.NoError(t, l.control(hostproto.Stream))
						}
						time.Sleep(pause)
						require.NoError(t, l.control(hostproto.Kill))
						var out bytes.Buffer
						status := l.nextJobAnswer(t, &out, job.ID)
						assert.Equal(t, "137", status, "stream %v, after %v", stream, pause)
						assert.NotContains(t, out.String(), "never")
						assert.Eventually(t, func() bool { return len(sleeping(t, arg)) == 0 }, 5*time.Second, 10*time.Millisecond, "stream %v, after %v", stream, pause)
					}
				}
				// A kill of a command that ends at once comes after its
				// answer: nothing is killed, the next request is answered.
				for range 5 {
					job := newJob("echo quick")
					require.NoError(t, l.send(startJob(job)))
					require.NoError(t, l.control(hostproto.Kill))
					require.NoError(t, l.control(hostproto.Stream))
					require.NoError(t, l.control(hostproto.LetGo))
					var out bytes.Buffer
					status := l.nextJobAnswer(t, &out, job.ID)
					if status != "!DETACHED" {
						assert.Contains(t, []string{"0", "137"}, status)
					}
				}
				status, got := l.run(t, "echo still serving")
				assert.Equal(t, "0", status)
				assert.Equal(t, "still serving\n", got)
			})
			t.Run("a let-go at any moment leaves the job to attach to", func(t *testing.T) {
				t.Parallel()
				cache := cacheDir(t)
				l := startLocal(t, sh, true, "XDG_CACHE_HOME="+cache)
				for _, pause := range []time.Duration{0, 5 * time.Millisecond, 50 * time.Millisecond, 300 * time.Millisecond} {
					job := newJob(printLines(5, "0.1", 4))
					require.NoError(t, l.send(startJob(job)))
					time.Sleep(pause)
					require.NoError(t, l.control(hostproto.LetGo))
					var out bytes.Buffer
					status := l.nextJobAnswer(t, &out, job.ID)
					if status == "!DETACHED" {
						assert.Equal(t, "4", l.attachJob(t, &out, job.ID, strconv.Itoa(out.Len()), "", "", "", "60"), "after %v", pause)
					} else {
						assert.Equal(t, "4", status, "after %v", pause)
					}
					assert.Equal(t, numberedLines(5), out.String(), "after %v", pause)
				}
			})
			t.Run("much output, fast, whole or streamed, killed or not", func(t *testing.T) {
				t.Parallel()
				l := startLocal(t, sh, true)
				const size = 8 << 20
				fill := fmt.Sprintf("head -c %d /dev/zero | tr '\\0' a", size)
				var out bytes.Buffer
				assert.Equal(t, "0", l.runJob(t, &out, newJob(fill)))
				assert.Equal(t, size, out.Len())
				assert.Equal(t, strings.Repeat("a", size), out.String())

				out.Reset()
				streamed := newJob(fill + "; echo; echo end")
				l.stream(t, streamed)
				assert.Equal(t, "0", l.nextJobAnswer(t, &out, streamed.ID))
				assert.Equal(t, size+5, out.Len())

				// Killed while it streams: the frames stay whole.
				arg := sleeper(t)
				job := newJob("yes 0123456789 | head -c 50000000; sleep " + arg)
				l.stream(t, job)
				out.Reset()
				got := l.readUntil(t, "0123456789\n0123456789\n")
				require.NoError(t, l.control(hostproto.Kill))
				rest := l.nextJobAnswer(t, &out, job.ID)
				assert.Contains(t, []string{"137", "141"}, rest)
				assert.True(t, strings.HasPrefix(strings.Repeat("0123456789\n", (got.Len()+out.Len())/11+1), got.String()+out.String()), "the output in order")
				status, s := l.run(t, "echo still serving")
				assert.Equal(t, "0", status)
				assert.Equal(t, "still serving\n", s)
			})
			t.Run("a command that closes its output early is answered at its end", func(t *testing.T) {
				t.Parallel()
				l := startLocal(t, sh, true)
				for _, stream := range []bool{false, true} {
					job := newJob("echo before; exec >&- 2>&-; sleep 1; exit 3")
					start := time.Now()
					require.NoError(t, l.send(startJob(job)))
					if stream {
						require.NoError(t, l.control(hostproto.Stream))
					}
					var out bytes.Buffer
					assert.Equal(t, "3", l.nextJobAnswer(t, &out, job.ID))
					assert.Equal(t, "before\n", out.String())
					assert.Greater(t, time.Since(start), 900*time.Millisecond)
				}
			})
			t.Run("a client gone at any moment leaves a job to attach to", func(t *testing.T) {
				t.Parallel()
				cache := cacheDir(t)
				for _, step := range []string{"at once", "before long", "once long", "while it streams", "killed at once", "killed once long"} {
					l := startLocal(t, sh, true, "XDG_CACHE_HOME="+cache)
					job := newJob(printLines(6, "0.1", 2))
					require.NoError(t, l.send(startJob(job)))
					var got bytes.Buffer
					switch step {
					case "before long":
						time.Sleep(2 * time.Millisecond)
					case "once long", "killed once long":
						saidLong(t, filepath.Join(cache, "pi-remote", "jobs"), job.ID)
					case "while it streams":
						require.NoError(t, l.control(hostproto.Stream))
						got.Write(l.readUntil(t, "line 2\n").Bytes())
					}
					pid := l.cmd.Process.Pid
					if strings.HasPrefix(step, "killed") {
						l.close()
					} else {
						l.stdin.Close()
					}
					// The server goes (at once, or once the job it waits
					// for in its first moments has ended).
					assert.Eventually(t, func() bool { return syscall.Kill(pid, 0) != nil }, 5*time.Second, 10*time.Millisecond, step)
					other := startLocal(t, sh, true, "XDG_CACHE_HOME="+cache)
					// As Exec does: the start sent again attaches to the
					// job, or runs it if it never began (a server killed at
					// once may not have read its request).
					var status string
					for range 3 {
						status = other.runJob(t, &got, job)
						if status == "!ATTACH" {
							status = other.attachJob(t, &got, job.ID, strconv.Itoa(got.Len()), "", "", "", "60")
						}
						if status != "!NOJOB" || got.Len() > 0 {
							break
						}
					}
					assert.Equal(t, "2", status, step)
					assert.Equal(t, numberedLines(6), got.String(), step)
					status, s := other.run(t, "echo still serving")
					assert.Equal(t, "0", status)
					assert.Equal(t, "still serving\n", s)
				}
			})
			t.Run("a server gone in the middle of a frame leaves the rest to attach to", func(t *testing.T) {
				t.Parallel()
				cache := cacheDir(t)
				const size = 4000000
				for _, stream := range []bool{false, true} {
					l := startLocal(t, sh, true, "XDG_CACHE_HOME="+cache)
					job := newJob(fmt.Sprintf("head -c %d /dev/zero | tr '\\0' a; sleep 0.3; exit 2", size))
					require.NoError(t, l.send(startJob(job)))
					if stream {
						require.NoError(t, l.control(hostproto.Stream))
					}
					// The frame's header and a part of its bytes, then the
					// server goes.
					line, err := l.stdout.ReadString('\n')
					require.NoError(t, err)
					require.True(t, strings.HasPrefix(line, "D "+job.ID+" "), "%q", line)
					var got bytes.Buffer
					_, err = io.CopyN(&got, l.stdout, 1000)
					require.NoError(t, err)
					l.close()
					other := startLocal(t, sh, true, "XDG_CACHE_HOME="+cache)
					assert.Equal(t, "!ATTACH", other.runJob(t, io.Discard, job))
					assert.Equal(t, "2", other.attachJob(t, &got, job.ID, strconv.Itoa(got.Len()), "", "", "", "60"))
					assert.Equal(t, size, got.Len())
					assert.Equal(t, strings.Repeat("a", size), got.String())
				}
			})
			t.Run("a client gone once a quick command is answered leaves its result", func(t *testing.T) {
				t.Parallel()
				cache := cacheDir(t)
				l := startLocal(t, sh, true, "XDG_CACHE_HOME="+cache)
				job := newJob("echo quick; exit 2")
				require.NoError(t, l.send(startJob(job)))
				l.stdin.Close()
				pid := l.cmd.Process.Pid
				assert.Eventually(t, func() bool { return syscall.Kill(pid, 0) != nil }, 5*time.Second, 10*time.Millisecond)
				other := startLocal(t, sh, true, "XDG_CACHE_HOME="+cache)
				assert.Equal(t, "!ATTACH", other.runJob(t, io.Discard, job))
				var out bytes.Buffer
				assert.Equal(t, "2", other.attachJob(t, &out, job.ID, "0", "", "", "", "60"))
				assert.Equal(t, "quick\n", out.String())
			})
		})
	}
}
