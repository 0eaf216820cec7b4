//go:build unix

package ssh

import (
	"bytes"
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

	"github.com/pi-remote/pi-remote/internal/randhex"
	"github.com/pi-remote/pi-remote/ops/ssh/internal/hostproto"
)

// Hosts that share a home directory (NFS) share the jobs directory: a job
// of another host, whose pids mean nothing here, is neither swept, nor
// called lost or unstarted, nor killed (jobs kill and a late cancel say
// why); the job of this host before it rebooted is lost, and swept, and so
// are the FIFOs of that boot.
func TestJobsOfAnotherHostAreLeftToIt(t *testing.T) {
	t.Parallel()
	name, boot := thisHost(t)
	for _, sh := range testShells(t) {
		t.Run(strings.Join(sh, " "), func(t *testing.T) {
			t.Parallel()
			cache := cacheDir(t)
			jobs := filepath.Join(cache, "pi-remote", "jobs")
			victim := startBystander(t)
			dead := strconv.Itoa(goneProcess(t))
			running, starting, rebooted := randhex.String(8), randhex.String(8), randhex.String(8)
			// Its server and waiter are dead here: pids of the other host.
			plantJob(t, jobs, running, goneProcess(t), "elsewhere "+otherBoot, dead, victim.pid())
			plantJob(t, jobs, starting, goneProcess(t), "elsewhere "+otherBoot, "", "")
			plantJob(t, jobs, rebooted, goneProcess(t), name+" "+otherBoot, dead, victim.pid())
			// Ended an hour ago, past its lease: its client collects it on
			// its own host.
			ended := randhex.String(8)
			plantJob(t, jobs, ended, goneProcess(t), "elsewhere "+otherBoot, dead, victim.pid())
			endedStatus := filepath.Join(jobs, ended+".status")
			require.NoError(t, os.WriteFile(endedStatus, []byte("0\n"), 0o600))
			hourAgo := time.Now().Add(-time.Hour)
			require.NoError(t, os.Chtimes(endedStatus, hourAgo, hourAgo))
			fifo := func(dir string) string {
				require.NoError(t, os.MkdirAll(filepath.Join(jobs, dir), 0o700))
				p := filepath.Join(jobs, dir, "fifo-1-1")
				require.NoError(t, syscall.Mkfifo(p, 0o600))
				old := time.Now().Add(-time.Hour)
				require.NoError(t, os.Chtimes(p, old, old))
				return p
			}
			othersFIFO := fifo(".host." + otherBoot + ".elsewhere")
			earlierBootFIFO := fifo(".host." + otherBoot + "." + name)

			l := startLocal(t, sh, true, "XDG_CACHE_HOME="+cache)
			// The start's sweep, in the background.
			here := filepath.Join(jobs, ".host."+boot+"."+name)
			require.EventuallyWithT(t, func(c *assert.CollectT) {
				assert.FileExists(c, filepath.Join(here, "swept"))
				assert.NoDirExists(c, filepath.Join(here, "sweeping"))
			}, 10*time.Second, 20*time.Millisecond)
			for _, id := range []string{running, starting, ended} {
				assert.FileExists(t, filepath.Join(jobs, id+".out"), "another host's job is not swept")
			}
			assert.NoFileExists(t, filepath.Join(jobs, rebooted+".out"), "this host's job before the reboot is swept")
			assert.FileExists(t, othersFIFO)
			assert.NoFileExists(t, earlierBootFIFO)

			var list bytes.Buffer
			l.do(t, &list, "call", "list_jobs")
			assert.Contains(t, list.String(), running+"\trunning\t")
			assert.Contains(t, list.String(), starting+"\trunning\t")

			var out bytes.Buffer
			l.do(t, &out, "call", "stop_job", running)
			assert.Equal(t, "E EIO job "+running+" runs on elsewhere, another host sharing the jobs directory\n", out.String())
			out.Reset()
			l.do(t, &out, "call", "cancel_job", running)
			assert.True(t, strings.HasPrefix(out.String(), "E EIO job "+running+" runs on elsewhere"), "got %q", out.String())

			// Followed, neither is taken for lost nor unstarted: the
			// client lets go of them.
			for _, id := range []string{running, starting} {
				require.NoError(t, l.send(call("attach_jobs", "60", id, "0", "", "", "")))
				require.NoError(t, l.control(hostproto.LetGo))
				assert.Equal(t, "!DETACHED", l.nextJobAnswer(t, io.Discard, id), "attach_jobs %s", id)
			}
			require.NoError(t, l.send(call("attach_jobs", "60", running, "0", "", "", "", starting, "0", "", "", "")))
			require.NoError(t, l.write("d\n"))
			ends := map[string]string{}
			status, err := readAttach(l.server, func(string) io.Writer { return io.Discard }, func(id, status string) { ends[id] = status })
			require.NoError(t, err)
			assert.Equal(t, "!DETACHED", status)
			assert.Empty(t, ends)

			for _, id := range []string{running, starting} {
				assert.FileExists(t, filepath.Join(jobs, id+".out"))
				// (Its lease is watched on its own host: a watcher here
				// would kill by the other host's pid.)
				assert.NoFileExists(t, filepath.Join(jobs, id+".lease.watched"), "a lease watcher here")
			}
			assert.True(t, victim.survived(t))
		})
	}
}
