//go:build linux

package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pi-remote/pi-remote/env"
	"github.com/pi-remote/pi-remote/integration/netfault"
	"github.com/pi-remote/pi-remote/integration/sshd"
	"github.com/pi-remote/pi-remote/loop"
	rssh "github.com/pi-remote/pi-remote/ops/ssh"
	"github.com/pi-remote/pi-remote/tools"
)

// batchCall is one tool call of a benchmark batch.
type batchCall struct {
	name string
	args map[string]any
}

// batchKind is a batch of 16 calls; round r is the r-th time it runs (edits
// go on from where the last round left the files).
type batchKind struct {
	name  string
	calls func(dir string, round int) []batchCall
}

const batchSize = 16

// warmBatches is how many times each batch runs warm: the report has the
// median (a warm batch on loopback takes a few dozen ms, and a busy
// moment of the machine would otherwise set the figure).
const warmBatches = 7

var batchKinds = []batchKind{
	{"edit, 16 files", func(dir string, r int) []batchCall {
		return each(func(i int) batchCall {
			return batchCall{"edit", map[string]any{"path": fmt.Sprintf("%s/f%d.txt", dir, i), "oldText": fmt.Sprintf("value %d", r), "newText": fmt.Sprintf("value %d", r+1)}}
		})
	}},
	{"write, 16 files", func(dir string, r int) []batchCall {
		return each(func(i int) batchCall {
			return batchCall{"write", map[string]any{"path": fmt.Sprintf("%s/w%d.txt", dir, i), "content": fmt.Sprintf("round %d file %d\n", r, i)}}
		})
	}},
	{"read, 16 files", func(dir string, r int) []batchCall {
		return each(func(i int) batchCall {
			return batchCall{"read", map[string]any{"path": fmt.Sprintf("%s/f%d.txt", dir, i)}}
		})
	}},
	{"bash `echo`", func(dir string, r int) []batchCall {
		return each(func(i int) batchCall {
			return batchCall{"bash", map[string]any{"command": fmt.Sprintf("echo %d", i)}}
		})
	}},
	{"edit, 16 times one file", func(dir string, r int) []batchCall {
		return each(func(i int) batchCall {
			return batchCall{"edit", map[string]any{"path": dir + "/one.txt", "oldText": fmt.Sprintf("line %d v%d\n", i, r), "newText": fmt.Sprintf("line %d v%d\n", i, r+1)}}
		})
	}},
}

func each(f func(i int) batchCall) []batchCall {
	calls := make([]batchCall, batchSize)
	for i := range calls {
		calls[i] = f(i)
	}
	return calls
}

// batchFixtures writes the files the batches start from, owned by uid.
func batchFixtures(b testing.TB, dir string, uid, gid int) {
	var one strings.Builder
	for i := range batchSize {
		fmt.Fprintf(&one, "line %d v0\n", i)
	}
	files := map[string]string{"one.txt": one.String()}
	for i := range batchSize {
		files[fmt.Sprintf("f%d.txt", i)] = "value 0\n"
	}
	for name, content := range files {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			b.Fatal(err)
		}
		if err := os.Chown(p, uid, gid); err != nil {
			b.Fatal(err)
		}
	}
}

// batchRunner runs one batch and says how long it took.
type batchRunner func(calls []batchCall) time.Duration

// inProcess runs batches through the loop's pipeline on h: every call
// prepared in call order (loop.StartTool), then all executed at once, as
// the agent loop and the rpc server do.
func inProcess(b testing.TB, h *rssh.Host, dir string) batchRunner {
	e := env.New(h, env.Options{Name: "bench", Cwd: dir})
	cfg := loop.Config{Tools: tools.WrapAll(tools.Definitions(e, tools.Options{}))}
	return func(calls []batchCall) time.Duration {
		start := time.Now()
		runs := make([]func() *loop.ToolResultMessage, len(calls))
		for i, c := range calls {
			raw, _ := json.Marshal(c.args)
			runs[i] = loop.StartTool(context.Background(), cfg, &loop.ToolCall{ID: fmt.Sprint(i), Name: c.name, Arguments: raw}, nil)
		}
		var wg sync.WaitGroup
		for i, run := range runs {
			wg.Go(func() {
				if m := run(); m.IsError {
					b.Errorf("%s: %s", calls[i].name, m.Content.Text())
				}
			})
		}
		wg.Wait()
		return time.Since(start)
	}
}

// throughRPC runs batches through a `pi-remote rpc` process: the batch's
// command lines are written at once, and the batch ends with the last
// response.
func throughRPC(b *testing.B, c *rpcClient) batchRunner {
	seq := 0
	return func(calls []batchCall) time.Duration {
		start := time.Now()
		var lines strings.Builder
		ids := make([]string, len(calls))
		for i, call := range calls {
			seq++
			ids[i] = fmt.Sprintf("b%d", seq)
			args, _ := json.Marshal(call.args)
			fmt.Fprintf(&lines, `{"id":%q,"type":"tool","name":%q,"args":%s}`+"\n", ids[i], call.name, args)
		}
		c.send(strings.TrimSuffix(lines.String(), "\n"))
		for _, id := range ids {
			if r := c.response(id); r["success"] != true {
				b.Errorf("%s: %v", id, r)
			}
		}
		return time.Since(start)
	}
}

// batchResult is one kind of batch on one path at one RTT.
type batchResult struct {
	cold, warm         float64 // ms; warm is the median of three rounds
	coldSess, warmSess int     // sessions started by the cold batch, by all the warm ones
	connect            float64 // ms to start (rpc: until it answers)
}

// BenchmarkBatches measures batches of 16 tool calls, in-process and
// through `pi-remote rpc`, at loopback and through 20 ms and 100 ms of
// added RTT, against a host whose login shell is slow to start (the user's
// ~/.bashrc sleeps 0.5 s, as pyenv, nvm or conda make it): the first batch
// on a new connection (cold) and the same batch again (warm, median of
// three), with the sessions each started. Writes a markdown report to
// $PI_REMOTE_BENCH_BATCH_OUT (default stdout).
func BenchmarkBatches(b *testing.B) {
	for b.Loop() {
		runBatchBenchmark(b)
	}
}

func runBatchBenchmark(b *testing.B) {
	sshd.RequireRoot(b, "a user whose ~/.bashrc sleeps 0.5 s")
	home := ensureUser(b, "pi-slowrc", "/bin/bash")
	uid, gid := userIDs(b, "pi-slowrc")
	if err := os.WriteFile(filepath.Join(home, ".bashrc"), []byte("sleep 0.5\n"), 0o644); err != nil {
		b.Fatal(err)
	}
	srv := sshd.Start(b, sshd.Options{User: "pi-slowrc", Config: []string{"MaxStartups 100"}})
	dir := filepath.Join(home, "bench")
	os.RemoveAll(dir)
	if err := os.Mkdir(dir, 0o755); err != nil {
		b.Fatal(err)
	}
	if err := os.Chown(dir, uid, gid); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { os.RemoveAll(dir) })

	rtts := []time.Duration{0, 20 * time.Millisecond, 100 * time.Millisecond}
	paths := []string{"in-process", "rpc"}
	results := map[string]batchResult{} // kind|path|rtt
	key := func(kind, path string, rtt time.Duration) string { return fmt.Sprintf("%s|%s|%s", kind, path, rtt) }
	for _, rtt := range rtts {
		p := netfault.Start(b, srv.Addr)
		p.SetRTT(rtt)
		cfg := viaProxy(b, srv, p)
		flags := []string{"--host", srv.User + "@" + p.Addr, "--identity", srv.ClientKey, "--known-hosts", cfg.KnownHostsFiles[0], "--ssh-config", "none", "--cwd", dir}
		for _, kind := range batchKinds {
			if only := os.Getenv("PI_REMOTE_BENCH_BATCH_ONLY"); only != "" && !strings.Contains(kind.name, only) {
				continue
			}
			for _, path := range paths {
				batchFixtures(b, dir, uid, gid)
				var res batchResult
				var run batchRunner
				before := sessions(srv)
				switch path {
				case "in-process":
					h := rssh.New(cfg, rssh.HostOptions{})
					defer h.Close()
					run = inProcess(b, h, dir)
				case "rpc":
					start := time.Now()
					c := startRPC(b, flags...)
					c.send(`{"id":"ready","type":"get_state"}`)
					c.response("ready")
					res.connect = ms(time.Since(start))
					run = throughRPC(b, c)
					before = sessions(srv)
				}
				res.cold = ms(run(kind.calls(dir, 0)))
				res.coldSess = sessions(srv) - before
				settle(srv)
				var warm []float64
				before = sessions(srv)
				for r := 1; r <= warmBatches; r++ {
					warm = append(warm, ms(run(kind.calls(dir, r))))
				}
				res.warmSess = sessions(srv) - before
				slices.Sort(warm)
				res.warm = warm[len(warm)/2]
				results[key(kind.name, path, rtt)] = res
			}
		}
	}

	var report strings.Builder
	fmt.Fprintf(&report, "Warm = the median of %d runs of the batch. Round trips = (warm ms at that RTT − warm ms on loopback) / RTT. Sessions = session channels sshd started "+
		"during the cold batch, and during all the warm ones together (each one runs the user's login shell: 0.5 s here). The in-process cold batch includes connecting; `rpc` connects when it starts "+
		"(its start, until it answers, is the last column).\n\n", warmBatches)
	for _, rtt := range rtts {
		name := "loopback"
		if rtt > 0 {
			name = fmt.Sprintf("%d ms of added RTT", rtt.Milliseconds())
		}
		fmt.Fprintf(&report, "## %s\n\n| batch of 16 | path | cold ms | warm ms | warm round trips | sessions cold / all warm | rpc start ms |\n|---|---|---|---|---|---|---|\n", name)
		for _, kind := range batchKinds {
			for _, path := range paths {
				r := results[key(kind.name, path, rtt)]
				trips := "–"
				if rtt > 0 {
					trips = fmt.Sprintf("%.1f", (r.warm-results[key(kind.name, path, 0)].warm)/ms(rtt))
				}
				start := "–"
				if path == "rpc" {
					start = fmt.Sprintf("%.0f", r.connect)
				}
				fmt.Fprintf(&report, "| %s | %s | %.0f | %.1f | %s | %d / %d | %s |\n", kind.name, path, r.cold, r.warm, trips, r.coldSess, r.warmSess, start)
			}
		}
		report.WriteString("\n")
	}
	out := os.Getenv("PI_REMOTE_BENCH_BATCH_OUT")
	if out == "" {
		fmt.Print(report.String())
		return
	}
	if err := os.WriteFile(out, []byte(report.String()), 0o644); err != nil {
		b.Fatal(err)
	}
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
