//go:build unix

package ssh

import (
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pi-remote/pi-remote/internal/randhex"
	"github.com/pi-remote/pi-remote/internal/shellquote"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// startFenced starts a server for connection epoch of client, its jobs
// and fences under cache.
func startFenced(t *testing.T, sh []string, cache, client, epoch string) (*localServer, error) {
	t.Helper()
	l := launchLocal(t, sh, t.TempDir(), nil, "XDG_CACHE_HOME="+cache)
	return l, l.handshake(t.Context(), true, client, epoch)
}

// Requests that reach a server of a connection its client gave up on (the
// kernel delivers them once a partition heals) act on nothing once a
// newer connection of the client has started a server: neither a write's
// commit, nor a job's start, nor any other; the old server exits. A
// server of the old connection that starts late is refused.
func TestRequestsOfAnOlderConnectionActOnNothing(t *testing.T) {
	for _, sh := range testShells(t) {
		t.Run(strings.Join(sh, " "), func(t *testing.T) {
			t.Parallel()
			cache, dir := t.TempDir(), t.TempDir()
			client := randhex.String(8)
			oldWrite, err := startFenced(t, sh, cache, client, "1")
			require.NoError(t, err)
			oldJob, err := startFenced(t, sh, cache, client, "1")
			require.NoError(t, err)
			// Both still serve their own connection.
			status, _ := oldJob.run(t, "true")
			require.Equal(t, "0", status)

			newer, err := startFenced(t, sh, cache, client, "2")
			require.NoError(t, err)
			status, _ = newer.run(t, "true")
			require.Equal(t, "0", status)

			// The late requests: a write of v1 that the client settled as
			// absent (and then wrote v2), and a start of a job it ran and
			// collected on the new connection.
			target := filepath.Join(dir, "file")
			require.NoError(t, os.WriteFile(target, []byte("v2"), 0o644))
			ran := filepath.Join(dir, "ran")
			require.NoError(t, oldWrite.send(call("call", "write_inline", target, "644", "", "0123", "v1", "-")))
			require.NoError(t, oldJob.send(startJob(newJob("echo ran >>"+shellquote.Quote(ran)))))
			for _, l := range []*localServer{oldWrite, oldJob} {
				_, err := l.readUntilMarker(io.Discard)
				assert.Error(t, err, "the old server answers nothing, and exits")
			}
			got, err := os.ReadFile(target)
			require.NoError(t, err)
			assert.Equal(t, "v2", string(got))
			time.Sleep(200 * time.Millisecond)
			assert.NoFileExists(t, ran, "the late start ran")

			late, err := startFenced(t, sh, cache, client, "1")
			assert.ErrorContains(t, err, "a newer connection of this client took over")
			require.EventuallyWithT(t, func(c *assert.CollectT) {
				entries, err := os.ReadDir(late.tmp)
				assert.NoError(c, err)
				assert.Empty(c, entries, "the refused server's private directory")
			}, 5*time.Second, 20*time.Millisecond)
			// Another client is not fenced by this one's connections.
			other, err := startFenced(t, sh, cache, randhex.String(8), "1")
			require.NoError(t, err)
			status, _ = other.run(t, "true")
			assert.Equal(t, "0", status)
		})
	}
}

// Every server of a new connection waits for the servers of the old one
// that are busy acting (they checked the epoch a moment before the new one
// was marked) before it is ready: nothing the client settles on the new
// connection can be overtaken by those acts. The wait is bounded as a
// whole: a server stuck while marked busy holds the next connection up for
// about 5 s, however many such servers there are.
func TestNewConnectionWaitsForActsInProgress(t *testing.T) {
	sh := testShells(t)[0]
	cache := cacheDir(t)
	client := randhex.String(8)
	_, err := startFenced(t, sh, cache, client, "1")
	require.NoError(t, err)
	fences, err := filepath.Glob(filepath.Join(cache, "pi-remote", "jobs", ".host.*", "client."+client))
	require.NoError(t, err)
	require.Len(t, fences, 1)
	// Two old servers in the middle of an act: live processes of ours,
	// marked busy.
	var marks []string
	for range 2 {
		busy := exec.Command("sleep", "60")
		require.NoError(t, busy.Start())
		t.Cleanup(func() { busy.Process.Kill(); busy.Wait() })
		mark := filepath.Join(fences[0], "busy.1."+strconv.Itoa(busy.Process.Pid))
		require.NoError(t, os.WriteFile(mark, []byte("b"), 0o600))
		marks = append(marks, mark)
	}
	type ready struct {
		at  time.Time
		err error
	}
	done := make(chan ready, 2)
	for i := range 2 {
		go func() {
			time.Sleep(time.Duration(i) * 300 * time.Millisecond)
			_, err := startFenced(t, sh, cache, client, "2")
			done <- ready{time.Now(), err}
		}()
	}
	time.Sleep(time.Second)
	select {
	case r := <-done:
		t.Fatalf("a server was ready while acts of the old connection were in progress (%v)", r.err)
	default:
	}
	finished := time.Now()
	for _, mark := range marks {
		require.NoError(t, os.WriteFile(mark, []byte("i"), 0o600))
	}
	for range 2 {
		select {
		case r := <-done:
			require.NoError(t, r.err)
			assert.True(t, r.at.After(finished))
		case <-time.After(10 * time.Second):
			t.Fatal("not ready after the acts finished")
		}
	}

	// Stuck: the next connection waits about 5 s for both, not 5 s each.
	for _, mark := range marks {
		require.NoError(t, os.WriteFile(mark, []byte("b"), 0o600))
	}
	start := time.Now()
	_, err = startFenced(t, sh, cache, client, "3")
	require.NoError(t, err)
	waited := time.Since(start)
	t.Logf("ready after %v", waited.Round(100*time.Millisecond))
	assert.Greater(t, waited, 4*time.Second)
	assert.Less(t, waited, 9*time.Second)
}
