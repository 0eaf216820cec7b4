package ssh

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"strconv"
	"strings"
	"sync"
	"time"

	gossh "golang.org/x/crypto/ssh"

	"github.com/pi-remote/pi-remote/internal/randhex"
	"github.com/pi-remote/pi-remote/ops"
	"github.com/pi-remote/pi-remote/ops/ssh/internal/hostproto"
)

var _ ops.Spawner = (*Host)(nil)

// Spawn implements ops.Spawner. The process runs on a session channel of
// its own, on the host's connection, under a small wrapper
// (hostproto.Spawn, docs/host-protocol.md "Spawned processes"): the
// channel's stdin and stdout are the process's, its extended data the
// process's stderr. The wrapper keeps the process and everything it
// starts in one process group, and ends that group when the channel's
// stdin ends, which is also what sshd does to it when the connection
// drops. It leaves no file on the host.
//
// The channel holds one of the host's sessions (MaxSessions) for the
// process's life, counted in the pool's limit like SFTP's; a process may
// take one only while another stays for the command servers, so Spawn
// fails on a host that allows a single session (or a single one beside
// the processes already running), saying so.
//
// A lost connection ends the process's Stdout, Wait and Kill with an
// error wrapping ops.ErrConnectionLost; a new Spawn connects again.
func (h *Host) Spawn(ctx context.Context, cmd ops.SpawnCommand) (ops.Process, error) {
	if len(cmd.Args) == 0 || cmd.Args[0] == "" {
		return nil, errors.New("spawn: no program given")
	}
	grace := cmd.StopGrace
	if grace <= 0 {
		grace = ops.DefaultStopGrace
	}
	c, err := h.ready(ctx)
	if err != nil {
		return nil, err
	}
	ch, reqs, err := c.spawnChannel(ctx)
	if err != nil {
		return nil, err
	}
	p := &process{
		c: c, ch: ch, grace: grace,
		stderrTail: &tailBuffer{max: 4096},
		exited:     make(chan struct{}),
		done:       make(chan struct{}),
	}
	var copying sync.WaitGroup
	copying.Go(func() {
		w := cmd.Stderr
		if w == nil {
			w = io.Discard
		}
		io.Copy(io.MultiWriter(p.stderrTail, w), ch.Stderr())
	})
	go p.watch(reqs, &copying)

	if err := p.start(ctx, cmd, grace); err != nil {
		ch.Close()
		<-p.done
		return nil, err
	}
	stop := context.AfterFunc(ctx, func() { p.Kill() })
	p.infoMu.Lock()
	if p.ended {
		p.infoMu.Unlock()
		stop()
		return p, nil
	}
	p.stopCtx = stop
	p.infoMu.Unlock()
	return p, nil
}

// errTooFewSessions: the host allows too few sessions to give a process
// one of its own.
var errTooFewSessions = errors.New("the host allows too few SSH sessions (MaxSessions) to run a process beside the command servers")

// spawnChannel opens a session channel for a spawned process, in a slot
// of the pool (acquire): one may be taken only while at least one other
// stays for the command servers.
func (c *conn) spawnChannel(ctx context.Context) (gossh.Channel, <-chan *gossh.Request, error) {
	probed := false
	for {
		c.mu.Lock()
		if c.limit-c.spawned < 2 && c.limit < c.max && !probed {
			// The limit a refusal taught is the sessions open at that
			// moment, which may have been a passing low (channels that
			// had just closed on the client were still open on the
			// host): try one more before giving up. (Refused, the limit
			// is lowered again and the process refused.)
			probed = true
			c.limit++
			c.loweredAt = time.Now()
		}
		if c.limit-c.spawned < 2 {
			limit := c.limit
			c.mu.Unlock()
			return nil, nil, fmt.Errorf("%s: %w (%d now)", c.host.cfg.String(), errTooFewSessions, limit)
		}
		c.spawned++
		c.mu.Unlock()
		if _, err := c.acquire(ctx, false, need{}); err != nil {
			c.unspawn(false)
			return nil, nil, err
		}
		c.host.sessions.Add(1)
		ch, reqs, err := c.link.Client().OpenChannel("session", nil)
		if err == nil {
			return ch, reqs, nil
		}
		if !isOpenRefused(err) {
			c.unspawn(true)
			if ctx.Err() != nil {
				return nil, nil, ctx.Err()
			}
			return nil, nil, c.lost(err)
		}
		c.unspawn(false)
		wait, ok := c.refused() // gives the slot back, lowers the limit
		if !ok {
			return nil, nil, fmt.Errorf("%s: %w", c.host.cfg.String(), err)
		}
		select {
		case <-time.After(wait):
		case <-ctx.Done():
			return nil, nil, ctx.Err()
		}
	}
}

// unspawn gives back what spawnChannel took: the count, and the slot when
// slot is set.
func (c *conn) unspawn(slot bool) {
	c.mu.Lock()
	c.spawned--
	c.mu.Unlock()
	if slot {
		c.release(nil)
	}
}

// process is a process started by Host.Spawn.
type process struct {
	c     *conn
	ch    gossh.Channel
	out   *bufio.Reader
	grace time.Duration
	pid   string // the wrapper's pid: its process group on the host

	stderrTail *tailBuffer

	wmu         sync.Mutex // one writer of stdin at a time, and its close
	stdinClosed bool

	// exited is closed once the host sent the exit status (or signal),
	// or the channel closed without one; done once the channel has
	// closed and the stderr copy ended.
	exited     chan struct{}
	exitedOnce sync.Once
	done       chan struct{}
	infoMu     sync.Mutex
	status     int    // exit status, when statusSet
	signal     string // or the signal that killed it
	statusSet  bool
	ended      bool // the channel is done: nothing to stop at ctx's end

	resultOnce sync.Once
	result     error
	stopCtx    func() bool // guarded by infoMu
}

// start sends the wrapper and the call after the bootstrap, and reads the
// wrapper's status line.
func (p *process) start(ctx context.Context, cmd ops.SpawnCommand, grace time.Duration) error {
	stop := context.AfterFunc(ctx, func() { p.ch.Close() })
	defer stop()
	exec := gossh.Marshal(struct{ Command string }{bootstrap})
	if _, err := p.ch.SendRequest("exec", false, exec); err != nil {
		return p.startErr(ctx, err)
	}
	marker := "\x1e@pi-remote-spawn:" + randhex.String(12) + ":"
	// (In whole seconds: not every host's sleep takes a fraction.)
	seconds := strconv.FormatInt(int64((grace+time.Second-1)/time.Second), 10)
	program := hostproto.Spawn(marker, randhex.String(6), seconds, cmd.Dir, cmd.Env, cmd.Args) + programEnd + "\n"
	if _, err := io.WriteString(p.ch, program); err != nil {
		return p.startErr(ctx, err)
	}
	p.out = bufio.NewReaderSize(p.ch, 64<<10)
	for {
		line, err := p.out.ReadString('\n')
		if err != nil {
			return p.startErr(ctx, err)
		}
		i := strings.Index(line, marker)
		if i < 0 {
			continue // what the login shell printed
		}
		status := strings.Fields(line[i+len(marker):])
		switch {
		case len(status) == 2 && status[0] == "READY":
			p.pid = status[1]
			return nil
		case len(status) >= 2 && status[0] == "FAIL" && status[1] == "notfound":
			return &fs.PathError{Op: "exec", Path: cmd.Args[0], Err: fs.ErrNotExist}
		case len(status) >= 2 && status[0] == "FAIL" && status[1] == "nodir":
			return &fs.PathError{Op: "chdir", Path: cmd.Dir, Err: fs.ErrNotExist}
		default:
			return fmt.Errorf("%s: starting %s: %s", p.c.host.cfg.String(), cmd.Args[0], strings.Join(status, " "))
		}
	}
}

// startErr is the error of a start that failed on the way.
func (p *process) startErr(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if errors.Is(err, io.EOF) {
		// The channel closed: what the host said on stderr, if anything.
		select {
		case <-p.done:
		case <-time.After(time.Second):
		}
		if tail := p.stderrTail.suffix(); tail != "" && !p.c.isDead() {
			return fmt.Errorf("%s: the wrapper of the process exited%s", p.c.host.cfg.String(), tail)
		}
	}
	return p.c.lost(err)
}

// watch answers the channel's requests until it closes, recording the exit
// status; then, once the stderr copy has ended, it gives back the slot.
func (p *process) watch(reqs <-chan *gossh.Request, copying *sync.WaitGroup) {
	for r := range reqs {
		switch r.Type {
		case "exit-status":
			if len(r.Payload) >= 4 {
				p.setExit(int(binary.BigEndian.Uint32(r.Payload)), "")
			}
		case "exit-signal":
			var sig struct {
				Signal string
				Core   bool
				Msg    string
				Lang   string
			}
			if gossh.Unmarshal(r.Payload, &sig) == nil {
				p.setExit(128+signalNumber(sig.Signal), sig.Signal)
			}
		}
		if r.WantReply {
			r.Reply(false, nil)
		}
	}
	p.exitedOnce.Do(func() { close(p.exited) })
	// (Closed by the host: ours is closed too, which frees it here.)
	p.ch.Close()
	copying.Wait()
	p.c.unspawn(true)
	p.infoMu.Lock()
	p.ended = true
	stop := p.stopCtx
	p.infoMu.Unlock()
	if stop != nil {
		stop()
	}
	close(p.done)
}

func (p *process) setExit(status int, signal string) {
	p.infoMu.Lock()
	if !p.statusSet {
		p.status, p.signal, p.statusSet = status, signal, true
	}
	p.infoMu.Unlock()
	p.exitedOnce.Do(func() { close(p.exited) })
}

// exitInfo is the exit status, if the host sent one.
func (p *process) exitInfo() (int, string, bool) {
	p.infoMu.Lock()
	defer p.infoMu.Unlock()
	return p.status, p.signal, p.statusSet
}

func (p *process) Stdin() io.WriteCloser { return procStdin{p} }
func (p *process) Stdout() io.Reader     { return procStdout{p} }

// Wait implements ops.Process. It returns once the channel has closed,
// and so its session is back in the pool: the host closes it once the
// process has exited and its output is out (what the process left in its
// group is killed within StopGrace, see spawn.sh).
func (p *process) Wait() error {
	<-p.done
	p.resultOnce.Do(func() {
		status, signal, ok := p.exitInfo()
		switch {
		case !ok:
			p.result = p.gone()
		case signal != "":
			p.result = &ops.ExitError{Code: status, Signal: signal}
		case status != 0:
			p.result = &ops.ExitError{Code: status}
		}
	})
	return p.result
}

// gone is the error of a channel that closed without an exit status: the
// connection was lost, most often.
func (p *process) gone() error {
	err := p.c.lost(io.EOF)
	if errors.Is(err, ops.ErrConnectionLost) {
		return fmt.Errorf("process %s on the host: %w", p.pid, err)
	}
	return err
}

// spawnKillWait bounds how long Kill waits for the host to report the
// process's end after the signal: a host that does not deliver signals
// (OpenSSH before 7.9) ends it when its channel closes, after StopGrace.
const spawnKillWait = 3 * time.Second

// Kill implements ops.Process: the signal KILL to the channel, which
// OpenSSH delivers to the whole process group; without an answer, the
// channel is closed, and the wrapper ends the group (see spawn.sh).
func (p *process) Kill() error {
	select {
	case <-p.exited:
	default:
		p.ch.SendRequest("signal", false, gossh.Marshal(struct{ Signal string }{"KILL"}))
		select {
		case <-p.exited:
		case <-p.c.dead:
		case <-time.After(spawnKillWait):
		}
	}
	p.ch.Close()
	select {
	case <-p.done:
	case <-time.After(spawnKillWait):
	}
	return p.Wait()
}

// procStdin is the process's stdin: writes one at a time, and a close
// that sends the end of it (x/crypto's CloseWrite must not run beside a
// Write).
type procStdin struct{ p *process }

func (w procStdin) Write(b []byte) (int, error) {
	w.p.wmu.Lock()
	defer w.p.wmu.Unlock()
	if w.p.stdinClosed {
		return 0, fmt.Errorf("write to a process's stdin: %w", fs.ErrClosed)
	}
	n, err := w.p.ch.Write(b)
	if err != nil {
		select {
		case <-w.p.exited:
			if _, _, ok := w.p.exitInfo(); ok {
				return n, fmt.Errorf("write to a process's stdin: the process exited: %w", io.ErrClosedPipe)
			}
		default:
		}
		return n, w.p.c.lost(err)
	}
	return n, nil
}

func (w procStdin) Close() error {
	w.p.wmu.Lock()
	defer w.p.wmu.Unlock()
	if w.p.stdinClosed {
		return nil
	}
	w.p.stdinClosed = true
	if err := w.p.ch.CloseWrite(); err != nil && !errors.Is(err, io.EOF) {
		return err
	}
	return nil
}

// procStdout is the process's stdout. Its end is io.EOF once the process
// has exited, or the connection's loss.
type procStdout struct{ p *process }

func (r procStdout) Read(b []byte) (int, error) {
	n, err := r.p.out.Read(b)
	if errors.Is(err, io.EOF) {
		<-r.p.done
		if _, _, ok := r.p.exitInfo(); !ok {
			return n, r.p.gone()
		}
	}
	return n, err
}

// signalNumber is the number of a signal named as SSH names them ("KILL").
func signalNumber(name string) int {
	n := map[string]int{
		"HUP": 1, "INT": 2, "QUIT": 3, "ILL": 4, "ABRT": 6, "FPE": 8, "KILL": 9,
		"USR1": 10, "SEGV": 11, "USR2": 12, "PIPE": 13, "ALRM": 14, "TERM": 15,
	}[name]
	return n
}
