package integration

import (
	"bytes"
	"context"
	"encoding/json"
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
	"golang.org/x/crypto/ssh/knownhosts"

	"github.com/pi-remote/pi-remote/integration/netfault"
	"github.com/pi-remote/pi-remote/integration/sshd"
	"github.com/pi-remote/pi-remote/internal/shellquote"
	"github.com/pi-remote/pi-remote/ops"
	rssh "github.com/pi-remote/pi-remote/ops/ssh"
	"github.com/pi-remote/pi-remote/ops/ssh/reach"
)

// reattachingHost is an sshd behind a proxy, reached with quick keepalives
// (3 x 1 s) and connect timeout (2 s), whose commands wait a minute for
// the host to come back.
func reattachingHost(t *testing.T) (*netfault.Proxy, *rssh.Host) {
	t.Helper()
	return reattachingHostWith(t, sshd.Options{})
}

// reattachingHostWith is reattachingHost on an sshd started with opts.
func reattachingHostWith(t *testing.T, opts sshd.Options) (*netfault.Proxy, *rssh.Host) {
	t.Helper()
	return reattachingHostOpts(t, opts, rssh.HostOptions{ReattachTimeout: time.Minute})
}

// reattachingHostOpts is reattachingHostWith with the host's options.
func reattachingHostOpts(t *testing.T, opts sshd.Options, hopts rssh.HostOptions) (*netfault.Proxy, *rssh.Host) {
	t.Helper()
	srv := sshd.Start(t, opts)
	p := netfault.Start(t, srv.Addr)
	cfg := viaProxy(t, srv, p)
	cfg.KeepaliveInterval, cfg.KeepaliveCount = time.Second, 3
	cfg.ConnectTimeout = 2 * time.Second
	h := rssh.New(cfg, hopts)
	t.Cleanup(func() { h.Close() })
	return p, h
}

// A command outlives a dropped connection: the link is reset once a
// command that prints a numbered line every 100 ms (300 of them) has
// printed ten, and the host refuses connections for the next 10 s; the
// call reconnects, and returns every line exactly once, in order, with
// the command's exit code. The same with a black hole instead of a reset.
// (Once the call has attached to the command again, the gate lets it
// print the rest at once instead of taking its 30 s.)
func TestCommandSurvivesDroppedConnection(t *testing.T) {
	t.Parallel()
	for _, fault := range []string{"reset", "black hole"} {
		t.Run(fault, func(t *testing.T) {
			t.Parallel()
			cache := hostCache(t)
			p, h := reattachingHostWith(t, sshd.Options{Config: []string{"SetEnv XDG_CACHE_HOME=" + cache}})
			gate := filepath.Join(t.TempDir(), "gate")
			out := &lockedBuffer{}
			var faults sync.WaitGroup
			faults.Go(func() {
				defer os.WriteFile(gate, nil, 0o644)
				if !waitFor(t.Context(), func() bool { return strings.Contains(out.String(), "line 10\n") }) {
					return
				}
				p.Refuse(true)
				if fault == "reset" {
					p.Reset()
				} else {
					p.Blackhole(true)
					time.Sleep(4 * time.Second) // declared dead after 3 s
					p.Reset()
					p.Blackhole(false)
				}
				time.Sleep(10 * time.Second)
				reconnected(p, cache)
			})
			err := h.Exec(t.Context(), ops.Command{Script: numberedCommand(gate), Output: out})
			faults.Wait()
			var ee *ops.ExitError
			require.ErrorAs(t, err, &ee, "output so far: %q", out.String())
			assert.Equal(t, 7, ee.Code)
			lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
			require.Len(t, lines, 300, "every line once")
			for i, l := range lines {
				require.Equal(t, fmt.Sprintf("line %d", i+1), l, "in order, no gap, no duplicate")
			}
			assert.GreaterOrEqual(t, p.Accepted(), int64(2), "it reconnected")
		})
	}
}

// reconnected lets p accept connections again and returns once the client
// has attached to the job it runs on the host whose cache directory is
// cache (an attach renews the job's lease at once: its lease file
// changes), or the job has ended (its status is written); or after a
// minute. It is called while p refuses connections, long after the last
// one dropped: until it lets them in, no client renews anything.
func reconnected(p *netfault.Proxy, cache string) {
	before := jobLeases(cache)
	p.Refuse(false)
	waitFor(context.Background(), func() bool { return jobLeases(cache) != before })
}

// jobLeases is the content of the lease and status files of the jobs on
// the host whose cache directory is cache: what changes when a client
// renews a lease or a job ends.
func jobLeases(cache string) string {
	var b strings.Builder
	for _, pattern := range []string{"*.lease", "*.status"} {
		files, _ := filepath.Glob(filepath.Join(cache, "pi-remote", "jobs", pattern))
		for _, f := range files {
			content, _ := os.ReadFile(f)
			fmt.Fprintf(&b, "%s %q\n", filepath.Base(f), content)
		}
	}
	return b.String()
}

// waitFor polls cond every 20 ms until it holds (true) or a minute has
// passed or ctx ended (false): a generous deadline, for a loaded machine.
func waitFor(ctx context.Context, cond func() bool) bool {
	deadline := time.Now().Add(time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		select {
		case <-ctx.Done():
			return false
		case <-time.After(20 * time.Millisecond):
		}
	}
	return true
}

// A batch survives a dropped connection mid-way: 24 commands at once on a
// warm connection (more than its servers: most share the batch's
// request), each sleeping a moment and printing its number and a line
// after, lose the link while they run; the host refuses connections for a
// second. Every call returns its own output exactly once and its exit
// code: jobs that had started are attached to, any whose start was lost
// with the link is started again (once).
func TestBatchSurvivesDroppedConnection(t *testing.T) {
	t.Parallel()
	p, h := reattachingHost(t)
	require.NoError(t, h.Exec(t.Context(), ops.Command{Script: "true"}))
	settledSessions(t, h)
	const n = 24
	outs := make([]lockedBuffer, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			script := fmt.Sprintf("echo start %d; sleep 1.5; echo end %d; exit %d", i, i, i%4)
			errs[i] = h.Exec(t.Context(), ops.Command{Script: script, Output: &outs[i]})
		})
	}
	time.Sleep(700 * time.Millisecond)
	p.Refuse(true)
	p.Reset()
	time.Sleep(time.Second)
	p.Refuse(false)
	wg.Wait()
	for i := range n {
		assert.Equal(t, fmt.Sprintf("start %d\nend %d\n", i, i), outs[i].String(), "call %d: its output, once", i)
		var ee *ops.ExitError
		if i%4 == 0 {
			assert.NoError(t, errs[i], "call %d", i)
		} else if assert.ErrorAs(t, errs[i], &ee, "call %d", i) {
			assert.Equal(t, i%4, ee.Code, "call %d", i)
		}
	}
	assert.GreaterOrEqual(t, p.Accepted(), int64(2), "it reconnected")
}

// All the calls of a connection re-attach with one request: four commands
// printing numbered lines and a fifth that sleeps lose their connection
// together; once the host is back one attach_jobs request on the host
// holds all five jobs (its state directory, in the server's private
// directory under TMPDIR, has a file per job), each call gets its output
// exactly once and its exit code, and the sleeper, aborted after the
// reconnect, is killed on the host through that same request.
func TestAllCallsReattachInOneRequest(t *testing.T) {
	t.Parallel()
	tmp := t.TempDir()
	p, h := reattachingHostWith(t, sshd.Options{Config: []string{"SetEnv TMPDIR=" + tmp}})
	marker := fmt.Sprintf("300.%d", time.Now().UnixNano()%1000000007)
	t.Cleanup(func() { exec.Command("pkill", "-f", "sleep "+marker).Run() })
	// The printing commands stop after line 40 until the test has seen
	// the attach request hold them (the gate file): on a busy machine the
	// reconnect may otherwise take longer than they run.
	gate := filepath.Join(t.TempDir(), "gate")
	t.Cleanup(func() { os.WriteFile(gate, nil, 0o644) })
	const n = 4
	outs := make([]*lockedBuffer, n)
	errs := make(chan error, n)
	for i := range n {
		outs[i] = &lockedBuffer{}
		script := fmt.Sprintf(`i=1; while [ $i -le 80 ]; do echo "line $i"; [ $i -ne 40 ] || until [ -e %s ]; do sleep 0.05; done; i=$((i+1)); sleep 0.05; done; exit %d`, gate, i+1)
		go func() { errs <- h.Exec(t.Context(), ops.Command{Script: script, Output: outs[i]}) }()
	}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	sleeper := make(chan error, 1)
	go func() { sleeper <- h.Exec(ctx, ops.Command{Script: "exec sleep " + marker}) }()
	// (On a busy machine the first connection may time out and be made
	// again, 2 s each: the commands may take a while to start. The
	// property under test begins with the fault below.)
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		assert.Len(c, sleepers(t, marker), 1)
		for _, o := range outs {
			assert.Contains(c, o.String(), "line 3\n")
		}
	}, 30*time.Second, 20*time.Millisecond)

	p.Refuse(true)
	p.Reset()
	time.Sleep(2 * time.Second)
	p.Refuse(false)
	// (The request's directory is made a moment before its jobs' files.
	// The wait is as long as the connecting above may take: in a CI run
	// where that took 19 s, with command servers taking over 2 s to
	// start, 20 s were not enough for the reconnect.)
	if !assert.EventuallyWithT(t, func(c *assert.CollectT) {
		attaches, _ := filepath.Glob(filepath.Join(tmp, ".pi-remote.*", "attach.*"))
		if assert.Len(c, attaches, 1, "one request") {
			jobs, _ := os.ReadDir(attaches[0])
			assert.Len(c, jobs, n+1, "for every job, while the printing ones run")
		}
	}, 45*time.Second, 20*time.Millisecond) {
		// What the servers' directories hold, for the record.
		out, _ := exec.Command("find", tmp, "-maxdepth", "2").CombinedOutput()
		t.Fatalf("the servers' directories:\n%s", out)
	}
	require.NoError(t, os.WriteFile(gate, nil, 0o644))
	for range n {
		var ee *ops.ExitError
		require.ErrorAs(t, <-errs, &ee)
		assert.Contains(t, []int{1, 2, 3, 4}, ee.Code)
	}
	var want strings.Builder
	for i := 1; i <= 80; i++ {
		fmt.Fprintf(&want, "line %d\n", i)
	}
	for _, o := range outs {
		assert.Equal(t, want.String(), o.String(), "every line once, in order")
	}
	assert.Len(t, sleepers(t, marker), 1, "the sleeper runs on")
	cancel()
	require.ErrorIs(t, <-sleeper, context.Canceled)
	assert.Empty(t, sleepers(t, marker), "killed through the attach request before the call returned")
}

// A command aborted, or timed out, while its host is unreachable is
// killed on the host once the host answers again.
func TestCancelDuringDisconnectKillsOnReturn(t *testing.T) {
	t.Parallel()
	for _, how := range []string{"abort", "timeout"} {
		t.Run(how, func(t *testing.T) {
			t.Parallel()
			p, h := reattachingHost(t)
			marker := fmt.Sprintf("300.%d", time.Now().UnixNano()%1000000007)
			t.Cleanup(func() { exec.Command("pkill", "-f", "sleep "+marker).Run() })

			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			if how == "timeout" {
				// Its deadline passes in the outage, however long the
				// command took to start on a busy machine.
				ctx, cancel = timeoutLater()
				defer cancel()
			}
			done := make(chan error, 1)
			go func() { done <- h.Exec(ctx, ops.Command{Script: "sleep " + marker + " & sleep " + marker + "; wait"}) }()
			require.EventuallyWithT(t, func(c *assert.CollectT) { assert.Len(c, sleepers(t, marker), 2) }, 10*time.Second, 50*time.Millisecond)
			p.Refuse(true)
			tried := p.Accepted()
			p.Reset()
			// Cancelled in the outage: once the client, reconnecting,
			// has been refused.
			require.Eventually(t, func() bool { return p.Accepted() > tried }, 30*time.Second, 20*time.Millisecond, "the client tries to reconnect")
			cancel()
			err := <-done
			if how == "abort" {
				require.ErrorIs(t, err, context.Canceled)
			} else {
				require.ErrorIs(t, err, context.DeadlineExceeded)
			}
			assert.Len(t, sleepers(t, marker), 2, "the host is unreachable: the job runs on")
			p.Refuse(false)
			// (The reconnect waits out the backoff that grew while the
			// host refused, and a loaded machine took more than 15 s.)
			require.EventuallyWithT(t, func(c *assert.CollectT) {
				assert.Empty(c, sleepers(t, marker), "killed once the host is back")
			}, 45*time.Second, 100*time.Millisecond)
		})
	}
}

// timeoutLater is a context that ends as one whose deadline passed does
// (Err is context.DeadlineExceeded) when expire is called: a timeout at a
// moment the test picks, once what it waits for has happened. (ops/ssh
// reads no deadline from a context, only its end and its error. It
// carries no values: contexts made from it then learn of its end, and
// its error, from Done and Err, as they do from any other context.)
func timeoutLater() (ctx context.Context, expire func()) {
	c := &laterTimeout{done: make(chan struct{})}
	var once sync.Once
	return c, func() { once.Do(func() { close(c.done) }) }
}

type laterTimeout struct{ done chan struct{} }

func (c *laterTimeout) Deadline() (time.Time, bool) { return time.Time{}, false }
func (c *laterTimeout) Done() <-chan struct{}       { return c.done }
func (c *laterTimeout) Value(any) any               { return nil }

func (c *laterTimeout) Err() error {
	select {
	case <-c.done:
		return context.DeadlineExceeded
	default:
		return nil
	}
}

// A write whose connection drops is applied once or not at all, and the
// call, waiting for the host, ends with the write applied: an upload cut
// half-way is sent again; a commit whose answer was lost is found applied
// (a guarded write sent again would find the file changed, by itself);
// a request lost on the way is sent again. No temporary file stays.
func TestWriteSurvivesDroppedConnection(t *testing.T) {
	t.Parallel()
	cut := func(p *netfault.Proxy) {
		p.Refuse(true)
		p.Reset()
	}
	for _, tc := range []struct {
		name          string
		large         bool
		before, after func(p *netfault.Proxy)
	}{
		{"upload cut half-way", true, func(p *netfault.Proxy) { p.SetRate(2<<20, 0) }, func(p *netfault.Proxy) {
			start := p.Bytes()
			for p.Bytes()-start < 1<<20 {
				time.Sleep(5 * time.Millisecond)
			}
			cut(p)
			p.SetRate(0, 0)
		}},
		{"answer lost after the commit", false, func(p *netfault.Proxy) { p.HoldReplies(true) }, func(p *netfault.Proxy) {
			time.Sleep(500 * time.Millisecond)
			cut(p)
			p.HoldReplies(false)
		}},
		{"request lost on the way", false, func(p *netfault.Proxy) { p.Blackhole(true) }, func(p *netfault.Proxy) {
			time.Sleep(500 * time.Millisecond)
			cut(p)
			p.Blackhole(false)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p, h := reattachingHost(t)
			dir := t.TempDir()
			name := filepath.Join(dir, "f.txt")
			old := []byte("old content\n")
			require.NoError(t, os.WriteFile(name, old, 0o640))
			// Connected, and the host's digest tool known.
			require.NoError(t, h.WriteFile(t.Context(), name, bytes.NewReader(old), ops.WriteOptions{Guard: &ops.Guard{Content: old}}))

			content := []byte("new content\n")
			if tc.large {
				content = bytes.Repeat([]byte("0123456789abcdef"), 256<<10) // 4 MiB
			}
			accepted := p.Accepted()
			tc.before(p)
			errc := make(chan error, 1)
			go func() {
				errc <- h.WriteFile(t.Context(), name, bytes.NewReader(content), ops.WriteOptions{Guard: &ops.Guard{Content: old}})
			}()
			tc.after(p)
			time.Sleep(2 * time.Second)
			p.Refuse(false)
			var err error
			select {
			case err = <-errc:
			case <-time.After(time.Minute):
				t.Fatal("write did not return")
			}
			require.NoError(t, err)
			assert.Equal(t, string(content), readFile(t, name), "applied once")
			info, err := os.Stat(name)
			require.NoError(t, err)
			assert.Equal(t, os.FileMode(0o640), info.Mode().Perm(), "the file's mode kept")
			entries, err := os.ReadDir(dir)
			require.NoError(t, err)
			assert.Len(t, entries, 1, "no temporary file left: %v", entries)
			assert.Greater(t, p.Accepted(), accepted, "on a new connection")
		})
	}
}

// cliViaProxy is an sshd behind a fault proxy and the CLI flags that reach
// it through the proxy, with keepalives of 3 x 1 s (from an ssh_config),
// and the cache directory its jobs go to.
func cliViaProxy(t *testing.T) (*netfault.Proxy, []string, string) {
	t.Helper()
	cache := hostCache(t)
	srv := sshd.Start(t, sshd.Options{Config: []string{"SetEnv XDG_CACHE_HOME=" + cache}})
	p := netfault.Start(t, srv.Addr)
	kh := filepath.Join(t.TempDir(), "known_hosts")
	require.NoError(t, os.WriteFile(kh, []byte(knownhosts.Line([]string{knownhosts.Normalize(p.Addr)}, srv.HostKeys[0])+"\n"), 0o600))
	cfg := filepath.Join(t.TempDir(), "ssh_config")
	require.NoError(t, os.WriteFile(cfg, []byte("Host *\n  ServerAliveInterval 1\n  ServerAliveCountMax 3\n  ConnectTimeout 2\n"), 0o600))
	return p, []string{"--host", srv.User + "@" + p.Addr, "--identity", srv.ClientKey, "--known-hosts", kh, "--ssh-config", cfg}, cache
}

// dropWhileRunning resets the link once numberedCommand has printed its
// fifth line on the host (whatever the client took to start, on a busy
// machine), and refuses connections for the next 10 s; once the client
// has attached to it again (reconnected), it opens the command's gate. The
// caller waits for the returned channel.
func dropWhileRunning(p *netfault.Proxy, cache, gate string) <-chan struct{} {
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer os.WriteFile(gate, nil, 0o644)
		waitFor(context.Background(), func() bool {
			outs, _ := filepath.Glob(filepath.Join(cache, "pi-remote", "jobs", "*.out"))
			if len(outs) == 0 {
				return false
			}
			b, _ := os.ReadFile(outs[0])
			return bytes.Contains(b, []byte("line 5\n"))
		})
		p.Refuse(true)
		p.Reset()
		time.Sleep(10 * time.Second)
		reconnected(p, cache)
	}()
	return done
}

// numberedCommand prints "line N" for N up to 300, every 100 ms until the
// file gate exists and at once after (30 s if it never does), and exits 7.
func numberedCommand(gate string) string {
	return `i=1; while [ $i -le 300 ]; do echo "line $i"; i=$((i+1)); [ -e ` + shellquote.Quote(gate) + ` ] || sleep 0.1; done; exit 7`
}

// numberedScript writes a scripted model's turns that run numberedCommand
// with gate once, and returns the file for --model scripted/FILE.
func numberedScript(t *testing.T, gate string) string {
	t.Helper()
	script := filepath.Join(t.TempDir(), "script.json")
	call, _ := json.Marshal(map[string]string{"command": numberedCommand(gate)})
	require.NoError(t, os.WriteFile(script, []byte(`{"turns":[
		{"text":"Counting.","toolCalls":[{"id":"c1","name":"bash","arguments":`+string(call)+`}]},
		{"text":"Done."}
	]}`), 0o644))
	return script
}

// checkNumbered checks a bash result's text: every line once, in order,
// then the exit code.
func checkNumbered(t *testing.T, text string) {
	t.Helper()
	var want strings.Builder
	for i := 1; i <= 300; i++ {
		fmt.Fprintf(&want, "line %d\n", i)
	}
	want.WriteString("\n[Command exited with code 7.]")
	assert.Equal(t, want.String(), text)
}

// The dropped link of TestCommandSurvivesDroppedConnection, through the
// programs users run: the model behind `pi-remote run` and a client of
// `pi-remote rpc` get the command's complete output and exit code.
func TestDroppedConnectionThroughCLI(t *testing.T) {
	t.Parallel()
	t.Run("run", func(t *testing.T) {
		t.Parallel()
		p, flags, cache := cliViaProxy(t)
		gate := filepath.Join(t.TempDir(), "gate")
		dropped := dropWhileRunning(p, cache, gate)
		session := filepath.Join(t.TempDir(), "session.jsonl")
		code, out, stderr := cli(t, "", append(flags, "run", "--model", "scripted/"+numberedScript(t, gate), "--session", session, "--mode", "json", "count")...)
		<-dropped
		require.Equal(t, 0, code, stderr)
		var result string
		for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
			var ev struct {
				Type    string `json:"type"`
				Message struct {
					Role    string `json:"role"`
					Content []struct {
						Text string `json:"text"`
					} `json:"content"`
				} `json:"message"`
			}
			require.NoError(t, json.Unmarshal([]byte(line), &ev), line)
			if ev.Type == "message_end" && ev.Message.Role == "toolResult" {
				result = ev.Message.Content[0].Text
			}
		}
		checkNumbered(t, result)
		assert.GreaterOrEqual(t, p.Accepted(), int64(2), "it reconnected")
	})
	t.Run("run on a terminal's stderr", func(t *testing.T) {
		t.Parallel()
		p, flags, cache := cliViaProxy(t)
		gate := filepath.Join(t.TempDir(), "gate")
		dropped := dropWhileRunning(p, cache, gate)
		session := filepath.Join(t.TempDir(), "session.jsonl")
		code, out, stderr := cli(t, "", append(flags, "run", "--model", "scripted/"+numberedScript(t, gate), "--session", session, "count")...)
		<-dropped
		require.Equal(t, 0, code, stderr)
		assert.Equal(t, "Counting.\nDone.\n", out)
		// Reconnected after the 10 s the host refused connections, or
		// later on a loaded machine.
		assert.Regexp(t, `(?s)→ \$ i=1.*⟳ connection to \S+ lost; reconnecting… \(running commands go on there\)\n  ⟳ reconnected to \S+ after [1-9]\d(\.\d)?s\n.*✗ bash`, stderr)
	})
	t.Run("rpc", func(t *testing.T) {
		t.Parallel()
		p, flags, cache := cliViaProxy(t)
		gate := filepath.Join(t.TempDir(), "gate")
		c := startRPC(t, append(flags, "--model", "scripted/"+numberedScript(t, gate))...)
		dropped := dropWhileRunning(p, cache, gate)
		c.send(`{"id":"p","type":"prompt","message":"count"}`)
		assert.Equal(t, true, c.response("p")["success"])
		require.Eventually(t, func() bool {
			return c.find(func(l map[string]any) bool { return l["type"] == "agent_end" }) != nil
		}, time.Minute, 50*time.Millisecond)
		<-dropped
		c.send(`{"id":"m","type":"get_messages"}`)
		var result string
		for _, m := range c.response("m")["data"].(map[string]any)["messages"].([]any) {
			if m := m.(map[string]any); m["role"] == "toolResult" {
				result = m["content"].([]any)[0].(map[string]any)["text"].(string)
			}
		}
		checkNumbered(t, result)
		assert.GreaterOrEqual(t, p.Accepted(), int64(2), "it reconnected")
	})
}

// A read whose connection drops half-way goes on, once the host is back,
// from the byte it had reached: the caller gets the whole file once.
func TestReadSurvivesDroppedConnection(t *testing.T) {
	t.Parallel()
	p, h := reattachingHost(t)
	name := filepath.Join(t.TempDir(), "big.txt")
	var content bytes.Buffer
	for i := 0; content.Len() < 8<<20; i++ {
		fmt.Fprintf(&content, "line %d\n", i)
	}
	require.NoError(t, os.WriteFile(name, content.Bytes(), 0o644))
	rc, err := h.Open(t.Context(), name)
	require.NoError(t, err)
	defer rc.Close()
	first := make([]byte, 1<<20)
	_, err = io.ReadFull(rc, first)
	require.NoError(t, err)
	accepted := p.Accepted()
	p.Refuse(true)
	p.Reset()
	go func() {
		time.Sleep(time.Second)
		p.Refuse(false)
	}()
	rest, err := io.ReadAll(rc)
	require.NoError(t, err)
	assert.True(t, bytes.Equal(content.Bytes(), append(first, rest...)), "every byte once, in order (%d + %d of %d)", len(first), len(rest), content.Len())
	assert.Greater(t, p.Accepted(), accepted, "on a new connection")
}

// A call made while a host that was up cannot be reached (the link just
// dropped, the host restarts) waits for it as a call in flight does; a
// host never reached fails at once.
func TestNewCallWaitsForAHostThatWasUp(t *testing.T) {
	t.Parallel()
	p, h := reattachingHost(t)
	dir := t.TempDir()
	_, err := h.Stat(t.Context(), dir)
	require.NoError(t, err)
	p.Refuse(true)
	p.Reset()
	time.Sleep(300 * time.Millisecond) // the connection is known dead
	go func() {
		time.Sleep(1500 * time.Millisecond)
		p.Refuse(false)
	}()
	start := time.Now()
	require.NoError(t, h.WriteFile(t.Context(), filepath.Join(dir, "f"), strings.NewReader("x"), ops.WriteOptions{}))
	assert.Greater(t, time.Since(start), time.Second, "it waited for the host")

	never, nh := reattachingHost(t)
	never.Refuse(true)
	start = time.Now()
	_, err = nh.Stat(t.Context(), dir)
	var ce *reach.ConnectError
	require.ErrorAs(t, err, &ce)
	assert.Less(t, time.Since(start), 5*time.Second, "a host never reached fails at once")
}
