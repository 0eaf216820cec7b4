//go:build linux

package integration

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pi-remote/pi-remote/integration/sshd"
)

// BenchmarkManyHosts measures one `pi-remote rpc` process serving 1, 50 and
// 200 hosts, each an sshd of its own on a loopback port, named in an
// ssh_config file as a user with many machines would: the time from start
// until rpc answers (every host connected), a batch of one `bash echo` per
// host (warm, median of three), the sessions the hosts started, and the
// process's resident memory once idle. Twice: users whose login shell
// starts at once, and users whose ~/.bashrc sleeps 0.5 s. Writes a markdown
// report to $PI_REMOTE_BENCH_HOSTS_OUT (default stdout).
func BenchmarkManyHosts(b *testing.B) {
	for b.Loop() {
		runManyHostsBenchmark(b)
	}
}

// hostsResult is one row of the report.
type hostsResult struct {
	start, warm float64 // ms
	startCPU    float64 // s of the machine's CPU time until rpc answered
	rpcStartCPU float64 // s of it that the rpc process spent
	startSess   int     // sessions started while connecting
	warmSess    int     // sessions started by the three warm batches
	rssIdle     int64   // KiB, once every host is connected and idle
	failed      int
	// CPU time per call of the warm batches, ms: the whole machine's (the
	// hosts' shells and sshd, and the client), and the rpc process's.
	cpuCall, rpcCPUCall float64
	forksCall           float64 // processes the machine forked per call
}

func runManyHostsBenchmark(b *testing.B) {
	sshd.RequireRoot(b, "users whose login shells differ")
	const most = 200
	users := []struct{ name, rc, label string }{
		{"pi-fastrc", "", "login shell starts at once"},
		{"pi-slowrc", "sleep 0.5\n", "~/.bashrc sleeps 0.5 s"},
	}
	for _, u := range users {
		home := ensureUser(b, u.name, "/bin/bash")
		if err := os.WriteFile(filepath.Join(home, ".bashrc"), []byte(u.rc), 0o644); err != nil {
			b.Fatal(err)
		}
		// The jobs earlier runs left (a killed client forgets none): every
		// server sweeps them, once a minute.
		os.RemoveAll(filepath.Join(home, ".cache", "pi-remote"))
	}
	// One sshd per host, each letting both users in with the same key.
	dir := b.TempDir()
	var config, known strings.Builder
	var f fleet
	for i := range most {
		srv := sshd.Start(b, sshd.Options{User: users[0].name, Config: []string{"AllowUsers " + users[1].name}})
		known.WriteString(readFile(b, srv.KnownHosts))
		for _, u := range users {
			fmt.Fprintf(&config, "Host %s%d\n\tHostName 127.0.0.1\n\tPort %d\n\tUser %s\n\tIdentityFile %s\n\tUserKnownHostsFile %s\n",
				u.name, i, srv.Port, u.name, srv.ClientKey, filepath.Join(dir, "known_hosts"))
		}
		f = append(f, srv)
	}
	writeFileB(b, filepath.Join(dir, "known_hosts"), known.String())
	writeFileB(b, filepath.Join(dir, "ssh_config"), config.String())

	counts := []int{1, 50, most}
	results := map[string]hostsResult{}
	for _, u := range users {
		for _, n := range counts {
			results[fmt.Sprint(u.name, n)] = f.serve(b, filepath.Join(dir, "ssh_config"), u.name, n)
		}
	}

	var report strings.Builder
	fmt.Fprintf(&report, "Start = from launching `pi-remote rpc` until it answers its first command, every host connected "+
		"(the 1-host row is the single host's connect time), and the CPU time the machine spent meanwhile (sshd's side of every handshake and login included) and the rpc process's share of it (the client's side: what a fleet of real hosts would leave). Warm batch = one `bash echo` per host, all sent at once, "+
		"until the last response (median of three). Sessions = session channels the hosts started (each runs the user's login shell). "+
		"Memory = the rpc process's resident set once idle; per host = (that − the 1-host figure) / (hosts − 1). "+
		"CPU per call = CPU time spent during the warm batches over the calls: the whole machine's (every host's sshd and shells run here: "+
		"on loopback a batch over many hosts is bound by it, %d cores), and the rpc process's own; forks = processes forked on the machine per call "+
		"(the host's side of a command: its server's helpers, the job, its output relay). "+
		"CPU floor = the machine's CPU time (during the start; per warm batch) over its %d cores: the least wall time that work takes here, "+
		"where every host shares this machine (a fleet of real hosts, each with its own cores, would leave the rpc process's share).\n\n", runtime.NumCPU(), runtime.NumCPU())
	for _, u := range users {
		fmt.Fprintf(&report, "## %s\n\n| hosts | start ms | start CPU floor ms | start CPU s (machine / rpc) | sessions at start | warm batch ms | warm CPU floor ms | sessions in the 3 warm batches | CPU per call ms (machine / rpc) | forks per call | RSS idle MiB | per extra host KiB | failed calls |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|\n", u.label)
		one := results[fmt.Sprint(u.name, 1)]
		for _, n := range counts {
			r := results[fmt.Sprint(u.name, n)]
			per := "–"
			if n > 1 {
				per = fmt.Sprintf("%.0f", float64(r.rssIdle-one.rssIdle)/float64(n-1))
			}
			cores := float64(runtime.NumCPU())
			startFloor := r.startCPU * 1000 / cores
			warmFloor := r.cpuCall * float64(n) / cores
			fmt.Fprintf(&report, "| %d | %.0f | %.0f | %.1f / %.2f | %d | %.1f | %.0f | %d | %.1f / %.2f | %.1f | %.1f | %s | %d |\n", n, r.start, startFloor, r.startCPU, r.rpcStartCPU, r.startSess, r.warm, warmFloor, r.warmSess, r.cpuCall, r.rpcCPUCall, r.forksCall, float64(r.rssIdle)/1024, per, r.failed)
		}
		report.WriteString("\n")
	}
	out := os.Getenv("PI_REMOTE_BENCH_HOSTS_OUT")
	if out == "" {
		fmt.Print(report.String())
		return
	}
	writeFileB(b, out, report.String())
}

// fleet is the sshd instances of BenchmarkManyHosts.
type fleet []*sshd.Server

// serve measures one rpc process serving the first n hosts of user.
func (f fleet) serve(b *testing.B, sshConfig, user string, n int) hostsResult {
	flags := []string{"--ssh-config", sshConfig, "--cwd", "/tmp"}
	for i := range n {
		flags = append(flags, "--host", fmt.Sprintf("h%d=%s%d", i, user, i))
	}
	var r hostsResult
	settle(f...)
	before := sessions(f...)
	cpu0 := machineCPU(b)
	start := time.Now()
	c := startRPC(b, flags...)
	defer c.stop()
	c.send(`{"id":"ready","type":"get_state"}`)
	c.responseWithin("ready", 5*time.Minute)
	r.start = ms(time.Since(start))
	r.startCPU = (machineCPU(b) - cpu0).Seconds()
	r.rpcStartCPU = processCPU(b, c.cmd.Process.Pid).Seconds()
	settle(f...)
	r.startSess = sessions(f...) - before
	r.rssIdle = rss(b, c.cmd.Process.Pid)

	var warm []float64
	before = sessions(f...)
	machine0, proc0, forks0 := machineCPU(b), processCPU(b, c.cmd.Process.Pid), forks(b)
	for round := range 3 {
		var lines strings.Builder
		for i := range n {
			host := "" // (one host: no host argument)
			if n > 1 {
				host = fmt.Sprintf(`,"host":"h%d"`, i)
			}
			fmt.Fprintf(&lines, `{"id":"r%d.%d","type":"tool","name":"bash","args":{"command":"echo %d"%s}}`+"\n", round, i, i, host)
		}
		t := time.Now()
		c.send(strings.TrimSuffix(lines.String(), "\n"))
		for i := range n {
			resp := c.response(fmt.Sprintf("r%d.%d", round, i))
			if resp["success"] != true || !strings.Contains(fmt.Sprint(resp["data"]), strconv.Itoa(i)) || strings.Contains(fmt.Sprint(resp["data"]), "isError:true") {
				r.failed++
				b.Errorf("host h%d: %v", i, resp)
			}
		}
		warm = append(warm, ms(time.Since(t)))
	}
	r.warmSess = sessions(f...) - before
	r.cpuCall = ms(machineCPU(b)-machine0) / float64(3*n)
	r.rpcCPUCall = ms(processCPU(b, c.cmd.Process.Pid)-proc0) / float64(3*n)
	r.forksCall = float64(forks(b)-forks0) / float64(3*n)
	slices.Sort(warm)
	r.warm = warm[1]
	return r
}

// clockTick is the unit of /proc's CPU times (USER_HZ, 100 on Linux).
const clockTick = 10 * time.Millisecond

// machineCPU is the CPU time every core has spent busy since boot.
func machineCPU(b *testing.B) time.Duration {
	line, _, _ := strings.Cut(readFile(b, "/proc/stat"), "\n")
	f := strings.Fields(line) // cpu user nice system idle iowait irq softirq steal
	var ticks int64
	for i, v := range f[1:min(len(f), 9)] {
		if i == 3 || i == 4 {
			continue // idle, iowait
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			b.Fatal(err)
		}
		ticks += n
	}
	return time.Duration(ticks) * clockTick
}

// forks is how many processes the machine has forked since boot.
func forks(b *testing.B) int64 {
	for line := range strings.Lines(readFile(b, "/proc/stat")) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "processes "); ok {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				b.Fatal(err)
			}
			return n
		}
	}
	b.Fatal("no processes line in /proc/stat")
	return 0
}

// processCPU is the CPU time process pid has used (user and system).
func processCPU(b *testing.B, pid int) time.Duration {
	stat := readFile(b, fmt.Sprintf("/proc/%d/stat", pid))
	f := strings.Fields(stat[strings.LastIndexByte(stat, ')')+1:]) // from field 3, state
	var ticks int64
	for _, v := range f[11:13] { // utime, stime (fields 14 and 15)
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			b.Fatal(err)
		}
		ticks += n
	}
	return time.Duration(ticks) * clockTick
}

// rss is the resident set of process pid, in KiB.
func rss(b *testing.B, pid int) int64 {
	status := readFile(b, fmt.Sprintf("/proc/%d/status", pid))
	for line := range strings.Lines(status) {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kib, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			if err != nil {
				b.Fatal(err)
			}
			return kib
		}
	}
	b.Fatalf("no VmRSS in /proc/%d/status", pid)
	return 0
}

func writeFileB(b testing.TB, name, content string) {
	if err := os.WriteFile(name, []byte(content), 0o644); err != nil {
		b.Fatal(err)
	}
}
