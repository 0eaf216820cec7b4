package ssh

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pi-remote/pi-remote/internal/randhex"
	"github.com/pi-remote/pi-remote/internal/shellquote"
	"github.com/pi-remote/pi-remote/ops"
	"github.com/pi-remote/pi-remote/ops/ssh/internal/hostproto"
)

// Exec implements ops.ExecOperations with the server's run_jobs (batches.sh): `sh -c` in
// its own session and process group, stdin /dev/null, no terminal, output
// merged and delivered completely however slowly it is read. The command
// is a job on the host that no SSH channel owns: when the connection drops,
// Exec reconnects (for up to HostOptions.ReattachTimeout) and goes on
// reading the output from the byte it had reached, to the true exit
// status. Cancellation kills the group on the host, through the command's
// own server, before Exec returns.
func (h *Host) Exec(ctx context.Context, cmd ops.Command) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	script, err := commandScript(cmd)
	if err != nil {
		return err
	}
	out := cmd.Output
	if out == nil {
		out = io.Discard
	}
	js := jobStart{Job: hostproto.Job{ID: randhex.String(8), Script: script, Dir: cmd.Dir}, ttl: h.leaseTTL(), limit: h.outputLimit()}
	if so := cmd.SaveOutput; so != nil {
		so.Saved = false
		js.Save, js.SaveBytes, js.SaveLines = so.Path, strconv.FormatInt(so.OverBytes, 10), strconv.FormatInt(so.OverLines, 10)
	}
	label := cmd.Label
	if label == "" {
		label = cmd.Script
	}
	js.Label = jobLabel(label)
	// The job's name is ours (js.ID): a start sent again after a lost
	// connection attaches to the job instead of running it twice.
	id := js.ID
	sent := &countingWriter{w: out}
	// A command that runs long may be let go of by its server, for other
	// requests, and followed with the others on one server (attach.go);
	// one that finds no server of its own may join a batch's (group.go).
	// The lines of both requests carry SAVE, which may not hold a newline;
	// and following a command needs the wait for the host.
	mayLetGo := !strings.Contains(js.Save, "\n") && h.opts.ReattachTimeout >= 0
	var status hostproto.Status
	for restarts := 0; ; restarts++ {
		var err error
		status, err = h.runJob(ctx, sent, js, mayLetGo)
		if err == nil {
			if status.Kind != hostproto.Detached {
				break
			}
		} else if ctx.Err() != nil {
			// The job's server kills it when told to; if that server was
			// given up on first (too slow to answer, or its connection
			// gone), make sure now, or once the host is back (or the
			// lease runs out).
			// (Exactly ctx.Err(): the server confirmed the kill.)
			if err != ctx.Err() {
				if h.killJob(id) != nil {
					go h.cancelJob(id)
				}
			} else {
				h.gotResult(id)
			}
			return ctx.Err()
		} else if !errors.Is(err, ops.ErrConnectionLost) || h.opts.ReattachTimeout < 0 {
			return err
		} else if h.privateJobs.Load() {
			return fmt.Errorf("%w; the command was stopped with it: %s", err, privateJobsWhy)
		}
		// Lost, or let go of: attach again with the other calls of this
		// host, from the byte reached. A job the host has never heard of,
		// with no output yet, is one whose start was lost with the
		// connection, or whose server died before it began (the host
		// dropped it): it is started again (the same id: one of two
		// starts runs).
		status, err = h.reattachJob(ctx, id, sent, [3]string{js.Save, js.SaveBytes, js.SaveLines})
		if err != nil {
			return err
		}
		if status.Kind == hostproto.NoJob && h.privateJobs.Load() {
			// Another server's private directory: the job is not there,
			// and may run on. Never start it again.
			return fmt.Errorf("%w: job %s cannot be followed: %s", ops.ErrConnectionLost, id, privateJobsWhy)
		}
		// (A few times only: a job whose output is a link to a saved
		// file removed since is neither started again, "!ATTACH", nor
		// attached to, "!NOJOB".)
		if status.Kind != hostproto.NoJob || sent.n > 0 || restarts >= maxRestarts {
			break
		}
	}
	switch status.Kind {
	case hostproto.NoDir:
		return &fs.PathError{Op: "chdir", Path: cmd.Dir, Err: fs.ErrNotExist}
	case hostproto.NotDir:
		return &fs.PathError{Op: "chdir", Path: cmd.Dir, Err: ops.ErrNotDir}
	case hostproto.DirDenied:
		return &fs.PathError{Op: "chdir", Path: cmd.Dir, Err: fs.ErrPermission}
	case hostproto.NoJob:
		return fmt.Errorf("%w: job %s is no longer on the host (it ended and its result was collected, or it was swept)", ops.ErrConnectionLost, id)
	case hostproto.EIO:
		return fmt.Errorf("command server: %s", status.Arg)
	case hostproto.Gone:
		h.gotResult(id)
		return h.goneError(id, status.Arg, h.leaseTTL())
	case hostproto.Ended:
		h.gotResult(id)
		if cmd.SaveOutput != nil {
			cmd.SaveOutput.Saved = status.Job.Saved
		}
		return exitError(status.Job, h.opts.OutputCap, h.leaseTTL())
	}
	// (Detached and Attach are followed above; Answer lets no other
	// status through.)
	return fmt.Errorf("command server: %w: unexpected status %q", errProtocol, status.Text)
}

// maxRestarts bounds how many times Exec starts a command again that the
// host, attached to, says it does not have ("!NOJOB").
const maxRestarts = 3

// goneError is the error for job id that left only its tombstone on the
// host ("!GONE TOMB"): it ended, or was lost, while no client was there,
// and its output was swept once its lease (ttl; 0: unknown) ran out
// uncollected. Such a job is never started again.
func (h *Host) goneError(id, tomb string, ttl time.Duration) error {
	if tomb == "lost" {
		return fmt.Errorf("job %s was lost on the host (its waiter was killed, or the host rebooted) and its files were swept; it was not run again", id)
	}
	how := "its exit status is unknown"
	if js, err := hostproto.ParseJobStatus(tomb); err == nil {
		how = "it exited with code " + strconv.Itoa(js.Code)
		if js.Stopped != "" {
			how = "it was " + stopReason(js, h.opts.OutputCap, ttl)
		}
	}
	lease := "its lease"
	if ttl > 0 {
		lease += " of " + ttl.String()
	}
	return fmt.Errorf("job %s ended while no client was connected (%s), and its output was swept once %s ran out uncollected; it was not run again", id, how, lease)
}

// exitError is what Exec returns for the ended job js: nil, or an
// *ops.ExitError (also for a command that exited 0 once its output was cut
// at the cap: what the caller has is not all it wrote).
func exitError(js hostproto.JobStatus, outputCap int64, leaseTTL time.Duration) error {
	if js.Code == 0 && js.Stopped == "" {
		return nil
	}
	return &ops.ExitError{Code: js.Code, Reason: stopReason(js, outputCap, leaseTTL)}
}

// stopReason says why the host stopped the job, for ops.ExitError;
// leaseTTL is the job's lease (0: unknown to this client).
func stopReason(js hostproto.JobStatus, outputCap int64, leaseTTL time.Duration) string {
	switch js.Stopped {
	case "capped":
		if outputCap <= 0 {
			outputCap = DefaultOutputCap
		}
		return fmt.Sprintf("its output passed the cap of %d MiB", outputCap>>20)
	case "lease":
		if leaseTTL <= 0 {
			return "killed by its lease (no client renewed it)"
		}
		return fmt.Sprintf("killed by its lease after %s without a client", leaseTTL)
	case "killed":
		return "killed with pi-remote jobs kill"
	case "lost":
		return "its exit status was lost (a process that waited for it on the host was killed)"
	}
	return ""
}

// jobLabel is a command's first line, shortened for listings.
func jobLabel(s string) string {
	s, _, more := strings.Cut(strings.TrimSpace(s), "\n")
	if r := []rune(s); len(r) > 120 {
		s, more = string(r[:120]), true
	}
	if more {
		s += " …"
	}
	return strings.ReplaceAll(s, "\t", " ")
}

// jobStart is what starts a job on the host: the words of a batch of one
// and of add_job (batches.sh).
type jobStart struct {
	hostproto.Job
	ttl   time.Duration // its lease
	limit string        // CAP: the most bytes of output ("": none)
}

// privateJobsWhy says why a host's commands cannot outlive their server.
const privateJobsWhy = "the host's jobs directory ($XDG_CACHE_HOME/pi-remote/jobs) is not the user's alone, so each command lives in its server's private directory and cannot outlive it"

// runJob starts the job, or attaches to it when it runs already, and
// follows it to its end, renewing its lease meanwhile: a batch of one on
// a server of the current connection, or, for a command of a batch that
// finds no server of its own, one of a run_jobs request (group.go). With
// mayLetGo the server may answer "!DETACHED" when another request needs
// it (conn.letGoLocked).
func (h *Host) runJob(ctx context.Context, out *countingWriter, js jobStart, mayLetGo bool) (hostproto.Status, error) {
	c, err := h.ready(ctx)
	if err != nil {
		return hostproto.Status{}, err
	}
	// Counted from before it has a server: a call that takes the last
	// idle one sees the others coming (jobServer).
	h.running.Add(1)
	defer h.running.Add(-1)
	commandsInFlight.Add(1)
	defer commandsInFlight.Add(-1)
	// A host whose commands live in their server's private directory
	// (privateJobs) keeps each on its server to the end: another server
	// could not follow it.
	mayLetGo = mayLetGo && !h.privateJobs.Load()
	var gc *groupCall
	if mayLetGo {
		gc = newGroupCall(js.ID, out)
	}
	s, g, err := c.jobServer(ctx, gc)
	if err != nil {
		return hostproto.Status{}, err
	}
	if g != nil {
		return g.run(ctx, gc, js)
	}
	if mayLetGo && !s.privateJobs {
		c.mayLetGo(s)
	}
	stop := renewLease(s, h.leaseTTL())
	defer stop()
	// Output comes whole at the end, unless the command runs longer than
	// its stream delay: then it comes as it is written.
	defer h.askStream(s, hostproto.Stream)()
	forget := h.toForget()
	status, err := c.serve(ctx, s, job, out, hostproto.RunJob(js.Job, js.ttl, js.limit, forget))
	h.forgetDone(forget, err == nil)
	return asLetGo(status), err
}

// commandsInFlight counts the commands of this process in flight, on every
// host: the stream delay grows with it (see streamDelay).
var commandsInFlight atomic.Int64

// askStream sends s line (for the stream of the command it serves: "s")
// once the command has run for streamDelay of the most commands in flight
// seen meanwhile (looked at when streamAfter has passed, and again when
// that wait ends); the function returned stops it.
func (h *Host) askStream(s *server, line hostproto.Control) (stop func()) {
	start := time.Now()
	var mu sync.Mutex
	stopped := false
	peak := commandsInFlight.Load()
	var t *time.Timer
	check := func() {
		mu.Lock()
		if stopped {
			mu.Unlock()
			return
		}
		peak = max(peak, commandsInFlight.Load())
		if wait := streamDelay(peak) - time.Since(start); wait > 0 {
			t.Reset(wait)
			mu.Unlock()
			return
		}
		stopped = true
		mu.Unlock()
		s.control(line)
	}
	mu.Lock()
	t = time.AfterFunc(streamAfter, check)
	mu.Unlock()
	return func() {
		mu.Lock()
		stopped = true
		t.Stop()
		mu.Unlock()
	}
}

// streamAfter is how long a command runs before its server is asked to
// stream its output ("s"): most commands end sooner, and a stream costs
// the host two processes (an ls and a sleep) every time it looks for new
// output, and two more for each piece it sends.
const streamAfter = 100 * time.Millisecond

// maxStreamDelay bounds streamDelay.
const maxStreamDelay = time.Second

// streamDelay is how long a command waits before its output is streamed
// when up to running commands were in flight meanwhile. A batch of short
// commands keeps the host busy for a while: at streamAfter each, the
// slower half of the batch would pay for streams that end at once, and
// grow slower still (on a 2-core host that forks slowly, 16 echo commands
// took 1.5 s that way, 0.8 s without). With others running, a command
// waits streamAfter more for each, up to maxStreamDelay: a person
// watching a batch of long commands sees their output from then on. The
// count is the whole process's, not the host's: a batch spread over many
// hosts is as much output to watch, and hosts that share machines (virtual
// machines, containers, loopback) share the cost (200 hosts on one 2-core
// machine, one echo each: 6.5 s with a stream for every command that ran
// past 100 ms, 3.4 s without).
func streamDelay(running int64) time.Duration {
	return min(time.Duration(max(running, 1))*streamAfter, maxStreamDelay)
}

// DefaultOutputCap is how much output a command may write on the host
// before it is stopped: far beyond what a tool result shows, a guard
// against a runaway command filling the disk.
const DefaultOutputCap = 1 << 30

// DefaultLeaseTTL is how long a job runs on without a client renewing its
// lease: a client that crashed or never came back.
const DefaultLeaseTTL = 30 * time.Minute

// DefaultReattachTimeout is how long a command waits for its host to come
// back after the connection dropped.
const DefaultReattachTimeout = 3 * time.Minute

// outputLimit is run_jobs' CAP: HostOptions.OutputCap in bytes, or empty
// for none.
func (h *Host) outputLimit() string {
	switch {
	case h.opts.OutputCap == 0:
		return strconv.FormatInt(DefaultOutputCap, 10)
	case h.opts.OutputCap > 0:
		return strconv.FormatInt(h.opts.OutputCap, 10)
	}
	return ""
}

func (h *Host) leaseTTL() time.Duration {
	if h.opts.LeaseTTL <= 0 {
		return DefaultLeaseTTL
	}
	return h.opts.LeaseTTL
}

func (h *Host) reattachTimeout() time.Duration {
	if h.opts.ReattachTimeout == 0 {
		return DefaultReattachTimeout
	}
	return h.opts.ReattachTimeout
}

// renewLease renews the lease of the job served by s every third of ttl
// until the returned function is called.
func renewLease(s *server, ttl time.Duration) func() {
	done := make(chan struct{})
	go func() {
		t := time.NewTicker(ttl / 3)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				if s.control(hostproto.Renew) != nil {
					return
				}
			}
		}
	}()
	return func() { close(done) }
}

// awaitHost reconnects, with growing pauses, until the host answers or
// timeout has passed since the connection was lost.
func (h *Host) awaitHost(ctx context.Context, timeout time.Duration) (err error) {
	h.linkWait(1, nil)
	defer func() { h.linkWait(-1, err) }()
	deadline := time.Now().Add(timeout)
	pause := 100 * time.Millisecond
	for {
		actx, cancel := context.WithDeadline(ctx, deadline)
		_, err := h.conn(actx)
		cancel()
		if err == nil || errors.Is(err, errClosed) || permanent(err) {
			return err
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if time.Now().Add(pause).After(deadline) {
			return err
		}
		select {
		case <-time.After(pause):
		case <-ctx.Done():
			return ctx.Err()
		}
		pause = min(2*pause, 2*time.Second)
	}
}

// killJob kills job id on the host (nothing when it has ended), over the
// current connection or a new one, giving up after a while.
func (h *Host) killJob(id string) error {
	ctx, cancel := context.WithTimeout(context.Background(), killWait)
	defer cancel()
	_, _, err := h.call(ctx, change, "cancel", id, hostproto.CancelJob(id))
	return err
}

// cancelJob kills job id on the host once the host answers again, trying
// for as long as a command would wait for it.
func (h *Host) cancelJob(id string) {
	ctx, cancel := context.WithTimeout(context.Background(), h.reattachTimeout())
	defer cancel()
	if h.awaitHost(ctx, h.reattachTimeout()) == nil {
		h.call(ctx, change, "cancel", id, hostproto.CancelJob(id))
	}
}

// countingWriter counts what it passes on: the offset to resume from.
type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// commandScript prefixes the script with its environment. Values go in
// through single quotes; names must be valid shell names.
func commandScript(cmd ops.Command) (string, error) {
	if strings.IndexByte(cmd.Script, 0) >= 0 {
		return "", fmt.Errorf("command contains a NUL byte")
	}
	var b strings.Builder
	for _, kv := range cmd.Env {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || !validName(k) || strings.IndexByte(v, 0) >= 0 {
			return "", fmt.Errorf("invalid environment entry %q", kv)
		}
		b.WriteString("export " + k + "=" + shellquote.Quote(v) + "\n")
	}
	b.WriteString(cmd.Script)
	return b.String(), nil
}

func validName(s string) bool {
	if s == "" {
		return false
	}
	for i, r := range s {
		if r != '_' && (r < 'a' || r > 'z') && (r < 'A' || r > 'Z') && (i == 0 || r < '0' || r > '9') {
			return false
		}
	}
	return true
}
