package integration

import (
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pi-remote/pi-remote/integration/sshd"
	"github.com/pi-remote/pi-remote/internal/tier"
	rssh "github.com/pi-remote/pi-remote/ops/ssh"
)

// Chaos soak: 60 tool calls (300 in the soak tier, PI_REMOTE_SOAK=1) —
// writes (some too large for one request), edits and bash — one after
// another while the proxy resets the link at random moments,
// sometimes refusing connections for a while after, and sometimes
// partitions it until after the client gave up on it (what the partition
// held then reaches the host late). Every call succeeds; every edit is
// applied exactly once (the files equal a replay of the calls in order);
// every bash result is complete, and every command ran once. Afterwards
// nothing of ours is left on the host: no job files, no temporary files,
// no private directories, no processes.
//
// Two more edges: the lease is 4 s, and now and then (at least once a
// run) the host is cut off once a 30 s command runs, until its lease
// kills it (the call says so, and the command ran once); and the jobs
// directory is shared with another host (an NFS home), whose jobs (one
// running, one ended and not collected) nothing here touches.
func TestChaosSoak(t *testing.T) {
	t.Parallel()
	cache, tmp := t.TempDir(), t.TempDir()
	jobs := filepath.Join(cache, "pi-remote", "jobs")
	bystander := exec.Command("sleep", "600")
	require.NoError(t, bystander.Start())
	t.Cleanup(func() { bystander.Process.Kill(); bystander.Wait() })
	gone := exec.Command("true")
	require.NoError(t, gone.Run())
	dead := strconv.Itoa(gone.Process.Pid)
	others := map[string]string{}
	for _, id := range []string{"0123456789abcdef", "fedcba9876543210"} {
		files := map[string]string{
			".out":    "the other host's output\n",
			".lease":  "4\n",
			".server": dead + " otherhost 0f0f0f0f-0000-4000-8000-000000000000\nits job\n" + dead + "\n",
			".pid":    strconv.Itoa(bystander.Process.Pid) + "\n",
		}
		if id[0] == 'f' {
			files[".status"] = "0\n"
		}
		require.NoError(t, os.MkdirAll(jobs, 0o700))
		for suffix, content := range files {
			others[id+suffix] = content
			require.NoError(t, os.WriteFile(filepath.Join(jobs, id+suffix), []byte(content), 0o600))
		}
	}
	p, h := reattachingHostOpts(t, sshd.Options{Config: []string{"SetEnv XDG_CACHE_HOME=" + cache + " TMPDIR=" + tmp}},
		rssh.HostOptions{ReattachTimeout: time.Minute, LeaseTTL: 4 * time.Second})
	dir := t.TempDir()
	te := newToolEnv(t, h, "soak", dir)
	runs := filepath.Join(t.TempDir(), "runs")

	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 1))
	chaos := rand.New(rand.NewPCG(seed, 2))
	token := fmt.Sprintf("soak%d", seed%1000000007)

	var resets, partitions, calls atomic.Int64
	var faults sync.Mutex // held while a fault is on
	var healing sync.WaitGroup
	stop := make(chan struct{})
	chaosDone := make(chan struct{})
	go func() {
		defer close(chaosDone)
		for {
			// A link that drops again before any call got through is no
			// link: on a loaded machine a reconnect (handshake, login, the
			// first server) can outlast the gaps. Each fault waits for one
			// to three calls to end after the one before (most take a few
			// milliseconds, some seconds), then for its random moment,
			// within the next call or between calls.
			since := calls.Load() + 1 + int64(chaos.IntN(3))
			for calls.Load() < since {
				select {
				case <-stop:
					return
				case <-time.After(5 * time.Millisecond):
				}
			}
			time.Sleep(time.Duration(chaos.IntN(60)) * time.Millisecond)
			faults.Lock()
			if chaos.IntN(4) == 0 {
				// Healed after the keepalives declared it dead (3 s) and
				// the client went on over a new connection, or while it
				// reconnects.
				// (Healed in the background: the calls go on over a new
				// connection meanwhile, and so do the faults.)
				heal := p.Partition()
				partitions.Add(1)
				healing.Add(1)
				go func(after time.Duration) {
					defer healing.Done()
					time.Sleep(after)
					heal()
				}(time.Duration(3500+chaos.IntN(3000)) * time.Millisecond)
				faults.Unlock()
				continue
			}
			refuse := chaos.IntN(3) == 0
			p.Refuse(refuse)
			p.Reset()
			resets.Add(1)
			if refuse {
				time.Sleep(time.Duration(chaos.IntN(1500)) * time.Millisecond)
				p.Refuse(false)
			}
			faults.Unlock()
		}
	}()
	// outage cuts the host off for longer than the lease once call i's
	// command runs on the host (its line is in runs; a start held up by a
	// fault may come seconds into the call, and a command started after
	// the outage owes nothing to its lease) and any random fault on then
	// is over: the link is partitioned and new connections are refused
	// until the lease has killed the command (its status says so: the
	// lease counts its silence in ticks of a second, which a loaded host
	// runs late; the kill comes 5-6 s after the last renewal, later under
	// load), or for a minute (by then the command has ended on its own,
	// and the call says so).
	outage := func(i int, after time.Duration) {
		line := "\n" + strconv.Itoa(i) + "\n"
		deadline := time.Now().Add(25 * time.Second)
		for content, _ := os.ReadFile(runs); !strings.HasSuffix("\n"+string(content), line); content, _ = os.ReadFile(runs) {
			if time.Now().After(deadline) {
				t.Errorf("call %d: its command did not start within 25 s", i)
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
		time.Sleep(after)
		faults.Lock()
		defer faults.Unlock()
		killed := killedByLease(cache)
		p.Refuse(true)
		heal := p.Partition()
		waitFor(t.Context(), func() bool { return killedByLease(cache) > killed })
		heal()
		p.Refuse(false)
	}

	n := tier.Rounds(60, 60, 300)
	var ran []string // the bash calls, in order
	leaseKills := 0
	const nfiles = 4
	want := map[string]string{}
	counter := map[string]int{}
	for i := range n {
		if i > 0 {
			calls.Add(1)
		}
		f := fmt.Sprintf("f%d.txt", rng.IntN(nfiles))
		kind := rng.IntN(3)
		if _, ok := want[f]; !ok {
			kind = 0 // a file is written before it is edited
		}
		switch kind {
		case 0:
			body := fmt.Sprintf("call %d\n", i)
			if rng.IntN(8) == 0 {
				body += strings.Repeat(fmt.Sprintf("padding of call %d\n", i), 8000) // ~160 KB: create, upload, commit
			}
			content := fmt.Sprintf("counter: %d\n%s", counter[f], body)
			res := te.call("write", map[string]any{"path": f, "content": content})
			require.False(t, res.IsError, "call %d: write %s: %s", i, f, res.Content.Text())
			want[f] = content
		case 1:
			old := fmt.Sprintf("counter: %d\n", counter[f])
			res := te.call("edit", map[string]any{"path": f, "edits": []map[string]string{{"oldText": old, "newText": fmt.Sprintf("counter: %d\n", counter[f]+1)}}})
			require.False(t, res.IsError, "call %d: edit %s: %s", i, f, res.Content.Text())
			counter[f]++
			want[f] = strings.Replace(want[f], old, fmt.Sprintf("counter: %d\n", counter[f]), 1)
		case 2:
			lines := 5 + rng.IntN(30)
			if rng.IntN(20) == 0 || leaseKills == 0 && i >= n/2 {
				// Killed by its lease during an outage: the call says so,
				// and the command is not run again. (At least once: in
				// 60 calls one in twenty bash calls may be none.)
				go outage(i, time.Duration(rng.IntN(1000))*time.Millisecond)
				res := te.call("bash", map[string]any{"command": fmt.Sprintf(`echo %d >>%s; sleep 30; echo "%s call %d not killed"`, i, runs, token, i)})
				ran = append(ran, strconv.Itoa(i))
				assert.True(t, res.IsError, "call %d: the command outlived its lease: %s", i, res.Content.Text())
				assert.Contains(t, res.Content.Text(), "killed by its lease after 4s without a client", "call %d", i)
				leaseKills++
				continue
			}
			res := te.call("bash", map[string]any{"command": fmt.Sprintf(`echo %d >>%s; i=1; while [ $i -le %d ]; do echo "%s call %d line $i"; i=$((i+1)); sleep 0.01; done; exit %d`, i, runs, lines, token, i, i%4)})
			ran = append(ran, strconv.Itoa(i))
			var out strings.Builder
			for l := 1; l <= lines; l++ {
				fmt.Fprintf(&out, "%s call %d line %d\n", token, i, l)
			}
			if i%4 != 0 {
				fmt.Fprintf(&out, "\n[Command exited with code %d.]", i%4)
			} else {
				out.WriteString("")
			}
			assert.Equal(t, strings.TrimSuffix(out.String(), "\n"), strings.TrimSuffix(res.Content.Text(), "\n"), "call %d: bash output complete, once", i)
		}
	}
	close(stop)
	<-chaosDone
	healing.Wait()
	// A fault may have come after the last call; a partition then leaves
	// the connection declared dead for want of an answer, and Close does
	// not dial a silent host again. One more call (over a new connection)
	// lets Close forget what was collected.
	res := te.call("bash", map[string]any{"command": "true"})
	require.False(t, res.IsError, "a call after the faults: %s", res.Content.Text())
	p.Refuse(false)
	t.Logf("%d resets, %d partitions, %d connections, %d commands killed by their lease", resets.Load(), partitions.Load(), p.Accepted(), leaseKills)
	assert.Greater(t, resets.Load(), int64(n/15), "the link was cut often")
	assert.Greater(t, partitions.Load(), int64(n/100), "and partitioned")
	// What partitions held has reached the host by now (late requests
	// act on nothing).
	time.Sleep(2 * time.Second)
	if len(ran) > 0 {
		assert.Equal(t, strings.Join(ran, "\n")+"\n", readFile(t, runs), "every command ran once, in order")
	}

	for f, content := range want {
		assert.Equal(t, content, readFile(t, filepath.Join(dir, f)), "%s equals a replay of the calls in order", f)
	}
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	assert.Len(t, entries, len(want), "no temporary files: %v", entries)

	require.NoError(t, h.Close())
	// The servers of partitioned connections are gone once the network
	// is: sshd, which never saw their connections end, sees them reset.
	p.Reset()
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		var left []string
		for _, f := range jobsLeft(cache) {
			if _, ok := others[f]; !ok {
				left = append(left, f)
			}
		}
		assert.Empty(c, left, "job files")
		private, _ := os.ReadDir(tmp)
		assert.Empty(c, private, "the servers' private directories")
		assert.Empty(c, psMatching(t, token), "processes")
		// Servers of connections the proxy reset, and their jobs' cleanup,
		// end on their own; until they have, they may still write here.
		assert.Empty(c, psWithEnv(t, "XDG_CACHE_HOME="+cache), "the host's processes")
	}, 30*time.Second, 200*time.Millisecond)
	for f, content := range others {
		assert.Equal(t, content, readFile(t, filepath.Join(jobs, f)), "the other host's %s is untouched", f)
	}
	assert.NoError(t, bystander.Process.Signal(syscall.Signal(0)), "the process the other host's job names is alive")
}
