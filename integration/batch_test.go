package integration

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pi-remote/pi-remote/integration/netfault"
	"github.com/pi-remote/pi-remote/integration/sshd"
	"github.com/pi-remote/pi-remote/internal/shellquote"
	"github.com/pi-remote/pi-remote/ops"
	rssh "github.com/pi-remote/pi-remote/ops/ssh"
	"github.com/pi-remote/pi-remote/tools/toolstest"
)

// settledSessions waits until h has stopped opening session channels (the
// connection's warm-up runs in the background) and returns the count.
func settledSessions(t *testing.T, h *rssh.Host) int64 {
	t.Helper()
	last, since := h.SessionsOpened(), time.Now()
	for time.Since(since) < time.Second {
		time.Sleep(50 * time.Millisecond)
		if n := h.SessionsOpened(); n != last {
			last, since = n, time.Now()
		}
	}
	return last
}

// A warm connection opens no session: 100 mixed tool calls, in batches of
// five at once, with a command aborted and one timed out among them, run
// on the channels opened when the connection was made, and the SFTP
// channel its first upload opened (a session costs the user's login shell
// on the host, often hundreds of milliseconds).
func TestWarmCallsOpenNoSession(t *testing.T) {
	t.Parallel()
	srv := sshd.Start(t, sshd.Options{})
	h := host(t, srv, rssh.HostOptions{})
	dir := t.TempDir()
	te := newToolEnv(t, h, "warm", dir)
	big := strings.Repeat("0123456789abcdef\n", 1<<16) // 1 MiB: an upload
	te.ok("ls", map[string]any{})
	// SFTP opens with the connection's first upload that needs it.
	te.ok("write", map[string]any{"path": filepath.Join(dir, "first.txt"), "content": big})
	opened := settledSessions(t, h)
	require.Positive(t, opened)

	for batch := range 20 {
		var wg sync.WaitGroup
		for i := range 5 {
			n := batch*5 + i
			f := filepath.Join(dir, fmt.Sprintf("f%d.txt", n%10))
			wg.Go(func() {
				switch n % 8 {
				case 0:
					te.ok("write", map[string]any{"path": f, "content": fmt.Sprintf("line %d\n", n)})
				case 1:
					te.ok("write", map[string]any{"path": f, "content": big})
				case 2:
					te.call("read", map[string]any{"path": f})
				case 3:
					te.ok("bash", map[string]any{"command": fmt.Sprintf("echo %d", n)})
				case 4:
					te.call("grep", map[string]any{"pattern": "line"})
				case 5:
					te.ok("find", map[string]any{"pattern": "*.txt"})
				case 6:
					m := te.call("bash", map[string]any{"command": "sleep 30", "timeout": 1})
					assert.True(t, m.IsError, "timed out")
				case 7:
					ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
					defer cancel()
					m := te.callCtx(ctx, "bash", map[string]any{"command": "sleep 30"})
					assert.True(t, m.IsError, "aborted")
				}
			})
		}
		wg.Wait()
	}
	assert.Equal(t, opened, h.SessionsOpened(), "no session opened by a warm connection")
}

// Many more concurrent commands than the host allows sessions all succeed:
// 64 at once against MaxSessions 3.
func TestManyCommandsFewSessions(t *testing.T) {
	t.Parallel()
	srv := sshd.Start(t, sshd.Options{Config: []string{"MaxSessions 3"}})
	h := host(t, srv, rssh.HostOptions{})
	const n = 64
	var wg sync.WaitGroup
	errs := make([]error, n)
	outs := make([]strings.Builder, n)
	for i := range n {
		wg.Go(func() {
			errs[i] = h.Exec(t.Context(), ops.Command{Script: fmt.Sprintf("echo %d; sleep 0.1", i), Output: &outs[i]})
		})
	}
	wg.Wait()
	for i := range n {
		require.NoError(t, errs[i], "call %d", i)
		assert.Equal(t, fmt.Sprintf("%d\n", i), outs[i].String())
	}
}

// A batch larger than the pool runs at once on the servers already open:
// 24 commands against a warm connection of 8 sessions, 20 ms of added
// round-trip time. Those that find no server of their own join one
// request (run_jobs) instead of waiting for a server or opening a session.
// Every output and exit code is the command's own, in full (one 300 KB),
// and no session is opened. Then a batch with commands that run for
// seconds: those stream their output while they run (let go of by the
// batch's request, followed by the attach request: which may start a
// session when every server is still busy then), and one cancelled
// mid-batch is killed on the host.
func TestBatchLargerThanThePool(t *testing.T) {
	t.Parallel()
	srv := sshd.Start(t, sshd.Options{})
	p := netfault.Start(t, srv.Addr)
	cfg := viaProxy(t, srv, p)
	h := rssh.New(cfg, rssh.HostOptions{})
	t.Cleanup(func() { h.Close() })
	require.NoError(t, h.Exec(t.Context(), ops.Command{Script: "true"}))
	opened := settledSessions(t, h)
	p.SetRTT(20 * time.Millisecond)
	marker := fmt.Sprintf("30.%d", time.Now().UnixNano()%1000000007)
	t.Cleanup(func() { exec.Command("pkill", "-f", "sleep "+marker).Run() })

	const n = 24
	big := strings.Repeat("0123456789abcdef", 300000/16)
	var wg sync.WaitGroup
	errs := make([]error, n)
	outs := make([]lockedBuffer, n)
	for i := range n {
		script := fmt.Sprintf("echo call %d; exit %d", i, i%3)
		if i == 5 {
			script = "printf '%s' " + big
		}
		wg.Go(func() {
			errs[i] = h.Exec(t.Context(), ops.Command{Script: script, Output: &outs[i]})
		})
	}
	wg.Wait()
	for i := range n {
		if i == 5 {
			require.NoError(t, errs[i])
			assert.Equal(t, big, outs[i].String(), "every byte once")
			continue
		}
		assert.Equal(t, fmt.Sprintf("call %d\n", i), outs[i].String(), "call %d", i)
		var exit *ops.ExitError
		if i%3 == 0 {
			assert.NoError(t, errs[i], "call %d", i)
		} else if assert.ErrorAs(t, errs[i], &exit, "call %d", i) {
			assert.Equal(t, i%3, exit.Code, "call %d", i)
		}
	}
	assert.Equal(t, opened, h.SessionsOpened(), "no session opened")

	var firstLine, longEnd [2]time.Time
	outs = make([]lockedBuffer, n)
	for i := range n {
		script := fmt.Sprintf("echo call %d", i)
		switch i {
		case 9, 17:
			// Its first line comes seconds before its end.
			script = "echo first; sleep 6; echo second"
		case 13:
			script = "echo cancelled; exec sleep " + marker
		}
		wg.Go(func() {
			ctx := t.Context()
			if i == 13 {
				c, cancel := context.WithTimeout(ctx, 1500*time.Millisecond)
				defer cancel()
				ctx = c
			}
			var w io.Writer = &outs[i]
			if i == 9 || i == 17 {
				k := (i - 9) / 8
				w = writerFunc(func(b []byte) (int, error) {
					if firstLine[k].IsZero() {
						firstLine[k] = time.Now()
					}
					return outs[i].Write(b)
				})
				defer func() { longEnd[k] = time.Now() }()
			}
			errs[i] = h.Exec(ctx, ops.Command{Script: script, Output: w})
		})
	}
	wg.Wait()
	for i := range n {
		switch i {
		case 9, 17:
			require.NoError(t, errs[i])
			assert.Equal(t, "first\nsecond\n", outs[i].String())
		case 13:
			assert.ErrorIs(t, errs[i], context.DeadlineExceeded)
		default:
			assert.NoError(t, errs[i], "call %d", i)
			assert.Equal(t, fmt.Sprintf("call %d\n", i), outs[i].String(), "call %d", i)
		}
	}
	for k := range 2 {
		// (Within its stream delay, a second here: under CI's load the
		// line came 2.5 s in.)
		assert.Less(t, firstLine[k], longEnd[k].Add(-2*time.Second), "the long command's first line came while it ran")
	}
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		assert.Empty(c, sleepers(t, marker), "the cancelled command is killed on the host")
	}, 10*time.Second, 50*time.Millisecond)
}

// A command that comes while a batch's request ends (its "e" sent, the
// answer a round trip away) and finds every other server busy waits for
// that server instead of opening a session: 200 ms of added round-trip
// time make the window wide. (Before, it opened one, and paid the user's
// login shell.)
func TestCommandAfterABatchEndsOpensNoSession(t *testing.T) {
	t.Parallel()
	srv := sshd.Start(t, sshd.Options{})
	p := netfault.Start(t, srv.Addr)
	cfg := viaProxy(t, srv, p)
	h := rssh.New(cfg, rssh.HostOptions{WarmServers: 3})
	t.Cleanup(func() { h.Close() })
	require.NoError(t, h.Exec(t.Context(), ops.Command{Script: "true"}))
	opened := settledSessions(t, h)
	p.SetRTT(200 * time.Millisecond)

	// Two servers busy for seconds; the third takes a short command as
	// the batch's request, which ends as soon as that command has.
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() { assert.NoError(t, h.Exec(t.Context(), ops.Command{Script: "sleep 3"})) })
	}
	time.Sleep(time.Second) // both started
	for round := range 3 {
		var out strings.Builder
		require.NoError(t, h.Exec(t.Context(), ops.Command{Script: fmt.Sprintf("echo %d", round), Output: &out}))
		assert.Equal(t, fmt.Sprintf("%d\n", round), out.String())
	}
	wg.Wait()
	assert.Equal(t, opened, h.SessionsOpened(), "no session opened")
}

// Calls that come while the connection's warm-up still starts its servers
// wait for those rather than open sessions of their own: against a user
// whose ~/.bashrc sleeps 1 s (each server takes that long to start), a
// command holds the one server ready at connect, and three more calls
// arrive while the three others start. (Before, each of them opened a
// session, and paid the second of login shell on top.)
func TestCallsDuringWarmUpOpenNoSession(t *testing.T) {
	t.Parallel()
	home := ensureUser(t, "pi-slowwarm", "/bin/bash")
	require.NoError(t, os.WriteFile(filepath.Join(home, ".bashrc"), []byte("sleep 1\n"), 0o644))
	srv := sshd.Start(t, sshd.Options{User: "pi-slowwarm"})
	h := host(t, srv, rssh.HostOptions{WarmServers: 4})
	var wg sync.WaitGroup
	wg.Go(func() { assert.NoError(t, h.Exec(t.Context(), ops.Command{Script: "sleep 2"})) })
	time.Sleep(300 * time.Millisecond) // connected, its server taken; the others starting
	for i := range 3 {
		wg.Go(func() {
			var out strings.Builder
			assert.NoError(t, h.Exec(t.Context(), ops.Command{Script: fmt.Sprintf("echo %d", i), Output: &out}))
			assert.Equal(t, fmt.Sprintf("%d\n", i), out.String())
		})
		time.Sleep(50 * time.Millisecond)
	}
	wg.Wait()
	assert.Equal(t, int64(4), settledSessions(t, h), "the warm-up's four, no more")
}

// writerFunc is an io.Writer made of a function.
type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(b []byte) (int, error) { return f(b) }

// Long commands do not hold up short calls: four commands that print 200
// lines against a host allowing three sessions, or one (more commands
// than the pool has servers), all start, and while they run, short calls
// (a read, a listing, an echo) each finish; every command's output
// arrives complete, in order, with its exit code. (The commands stop at
// line 20 until a gate file exists, which the test makes once the short
// calls are done: a command or a call held up behind them would wait for
// ever, so the deadlines can be generous for a loaded machine.)
func TestLongCommandsDoNotHoldUpShortCalls(t *testing.T) {
	t.Parallel()
	for _, sessions := range []int{3, 1} {
		t.Run(fmt.Sprintf("MaxSessions %d", sessions), func(t *testing.T) {
			t.Parallel()
			longCommandsAndShortCalls(t, sessions)
		})
	}
}

func longCommandsAndShortCalls(t *testing.T, sessions int) {
	srv := sshd.Start(t, sshd.Options{Config: []string{fmt.Sprintf("MaxSessions %d", sessions)}})
	h := host(t, srv, rssh.HostOptions{MaxSessions: sessions})
	dir := t.TempDir()
	note := filepath.Join(dir, "note.txt")
	require.NoError(t, os.WriteFile(note, []byte("short\n"), 0o644))
	const n, lines = 4, 200 // 0.1 s apart until the gate opens
	gate := filepath.Join(t.TempDir(), "gate")
	t.Cleanup(func() { os.WriteFile(gate, nil, 0o644) })
	outs := make([]*lockedBuffer, n)
	errs := make(chan error, n)
	start := time.Now()
	for i := range n {
		outs[i] = &lockedBuffer{}
		script := fmt.Sprintf(`g=%s; i=1; while [ $i -le %d ]; do echo "line $i"; [ $i -ne 20 ] || until [ -e "$g" ]; do sleep 0.05; done; i=$((i+1)); [ -e "$g" ] || sleep 0.1; done; exit %d`, shellquote.Quote(gate), lines, i+1)
		go func() { errs <- h.Exec(t.Context(), ops.Command{Script: script, Output: outs[i]}) }()
	}
	// (No command ends before the gate opens: one held up behind the
	// others would never start.)
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		for _, o := range outs {
			assert.Contains(c, o.String(), "line 1\n")
		}
	}, time.Minute, 20*time.Millisecond, "every command starts, the fourth too")
	t.Logf("all %d commands started after %s", n, time.Since(start).Round(time.Millisecond))

	// A short call held up behind a command would wait for the gate, for
	// ever: 15 s is only a bound for a loaded machine.
	var slowest time.Duration
	for i := range 15 {
		ctx, cancel := context.WithTimeout(t.Context(), 15*time.Second)
		began := time.Now()
		switch i % 3 {
		case 0:
			f, err := h.Open(ctx, note)
			require.NoError(t, err, "read %d", i)
			b, err := io.ReadAll(f)
			f.Close()
			require.NoError(t, err)
			assert.Equal(t, "short\n", string(b))
		case 1:
			entries, err := h.ReadDir(ctx, dir)
			require.NoError(t, err, "listing %d", i)
			assert.Len(t, entries, 1)
		case 2:
			var out strings.Builder
			require.NoError(t, h.Exec(ctx, ops.Command{Script: "echo quick", Output: &out}), "echo %d", i)
			assert.Equal(t, "quick\n", out.String())
		}
		cancel()
		slowest = max(slowest, time.Since(began))
	}
	t.Logf("slowest short call: %s", slowest.Round(time.Millisecond))
	assert.Less(t, slowest, 15*time.Second)
	for _, o := range outs {
		assert.NotContains(t, o.String(), fmt.Sprintf("line %d\n", lines), "the short calls finished while the commands ran")
	}
	require.NoError(t, os.WriteFile(gate, nil, 0o644))

	var want strings.Builder
	for i := 1; i <= lines; i++ {
		fmt.Fprintf(&want, "line %d\n", i)
	}
	codes := map[int]bool{}
	for range n {
		var ee *ops.ExitError
		require.ErrorAs(t, <-errs, &ee)
		codes[ee.Code] = true
	}
	assert.Equal(t, map[int]bool{1: true, 2: true, 3: true, 4: true}, codes)
	for _, o := range outs {
		assert.Equal(t, want.String(), o.String(), "every line once, in order")
	}
}

// The mutation order holds over a link with latency, where the canonical
// paths of a batch's edits are now asked for concurrently: x→y→z through
// two spellings, 50 times (200 in the soak tier), and 200 edits of one
// file through three spellings in one batch, at 5 ms of added round-trip
// time.
func TestMutationOrderOverLatency(t *testing.T) {
	t.Parallel()
	srv := sshd.Start(t, sshd.Options{})
	p := netfault.Start(t, srv.Addr)
	p.SetRTT(5 * time.Millisecond)
	cfg := viaProxy(t, srv, p)
	toolstest.RunQueue(t, toolstest.Harness{New: func(t *testing.T) ops.Operations {
		h := rssh.New(cfg, rssh.HostOptions{})
		t.Cleanup(func() { h.Close() })
		return h
	}})
}
