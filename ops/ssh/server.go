package ssh

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	gossh "golang.org/x/crypto/ssh"

	"github.com/pi-remote/pi-remote/internal/randhex"
	"github.com/pi-remote/pi-remote/internal/shellquote"
	"github.com/pi-remote/pi-remote/ops"
	"github.com/pi-remote/pi-remote/ops/ssh/internal/hostproto"
)

// A server is one long-lived POSIX sh on the host (hostproto.Program),
// started once on its own SSH session channel and then fed requests: a
// command or a file operation costs one round trip instead of a new session
// (a fork of sshd, PAM, the user's login shell).
//
// A request is one line: the server's marker, a function of the program and
// its words (shellquote.QuoteLine). The answer is the function's output on
// stdout, then the marker, a status and a newline. While a job runs (a user
// command, a streamed read) the line "k" kills it on the host; "d" lets go
// of a command, which runs on and is followed elsewhere (attach.go); a
// batch's request takes more commands as it runs (group.go). A server
// runs one request at a time, in the order they came; short ones may be
// sent before the answers to earlier ones (post). The connection keeps a
// pool of servers.
type server struct {
	end    func() error // closes the channel
	stdin  io.WriteCloser
	stdout *bufio.Reader
	marker []byte
	setsid bool // commands get their own session and process group
	// Its jobs live in its private directory (the host's jobs directory
	// is not the user's alone) and are killed as it exits: they cannot
	// outlive the connection.
	privateJobs bool
	stderr      *tailBuffer // the server shell's own complaints, for errors

	wmu    sync.Mutex  // one writer on stdin at a time: a request or a cancel
	broken atomic.Bool // protocol state unknown: never reuse

	// Requests may be pipelined: sent before the answers to earlier ones
	// have been read. Answers come in the order the requests went.
	pmu      sync.Mutex
	lastRead chan struct{} // closed once the answer to the last request sent has been read

	pool poolEntry // the pool's bookkeeping of it (pool.go), guarded by conn.mu
}

// bootstrap is the session's command. It must survive being run by any
// login shell (sh, bash, zsh, fish, csh): one single-quoted word with no
// single quote, "!" or newline inside. It reads the program line by line up
// to programEnd and runs it.
const bootstrap = `exec /bin/sh -c '` + bootstrapScript + `'`

// bootstrapScript is what bootstrap runs with /bin/sh. The lines join the
// program 32 at a time: appending each line to the whole copies it every
// time, and for the 1300 lines of the program that took dash 15 ms of CPU
// at every server start (31 KB copied 1300 times, a byte at a time), more
// than reading it.
const bootstrapScript = `n=$(printf "\nx"); n=${n%x}; p=; c=; i=0; while IFS= read -r l; do [ "$l" = "` + programEnd + `" ] && break; c=$c$l$n; i=$((i+1)); [ $i -lt 32 ] || { p=$p$c; c=; i=0; }; done; eval "$p$c"`

const programEnd = "#pi-remote-end"

// graceSeconds is ops.GraceAfterExit as the server's sleep argument.
var graceSeconds = strconv.FormatFloat(ops.GraceAfterExit.Seconds(), 'f', -1, 64)

var errServerExited = errors.New("command server on the host exited")

// errClosedEarly: the host closed a new session channel before its command
// ran (dropbear does, now and then, right after a failed subsystem). The
// channel is opened again.
var errClosedEarly = errors.New("the host closed a new session channel before the command started")

// startServer opens a session and starts a server in it. The exec request
// asks for no reply and the program follows it at once: a new server costs
// the channel's opening and one round trip (x/crypto's Session.Start would
// wait a round trip for the exec reply first). A host that refuses the
// command closes the channel, which the handshake sees.
//
// fence is the client's id and the connection's epoch (see serve and
// fence_start in serve.sh): a server of a connection the client gave up
// on acts on nothing once a newer connection has started a server.
func startServer(ctx context.Context, client *gossh.Client, useSetsid bool, fence ...string) (*server, error) {
	ch, reqs, err := client.OpenChannel("session", nil)
	if err != nil {
		return nil, err
	}
	s := &server{end: ch.Close, stdin: ch, stdout: bufio.NewReaderSize(ch, 64<<10), stderr: &tailBuffer{max: 4096}}
	// A server whose shell ended is never handed out again.
	ended := make(chan bool, 1) // whether the host sent an exit status
	go func() {
		ended <- drainSessionRequests(reqs)
		s.broken.Store(true)
	}()
	go io.Copy(s.stderr, ch.Stderr())
	fail := func(err error) (*server, error) {
		ch.Close()
		return nil, err
	}
	exec := gossh.Marshal(struct{ Command string }{bootstrap})
	if _, err := ch.SendRequest("exec", false, exec); err != nil {
		if errors.Is(err, io.EOF) {
			err = errClosedEarly
		}
		return fail(err)
	}
	if err := s.handshake(ctx, useSetsid, fence...); err != nil {
		// A channel closed with no exit status and not a word on stderr
		// ran nothing.
		if (errors.Is(err, io.EOF) || errors.Is(err, errServerExited)) && ctx.Err() == nil {
			select {
			case exited := <-ended:
				if !exited && s.stderr.suffix() == "" {
					err = fmt.Errorf("%w (%w)", errClosedEarly, err)
				}
			case <-time.After(time.Second):
			}
		}
		return fail(err)
	}
	return s, nil
}

// drainSessionRequests answers the host's requests on a session channel
// until it closes, and says whether one was an exit status (or signal).
func drainSessionRequests(reqs <-chan *gossh.Request) bool {
	exited := false
	for r := range reqs {
		switch r.Type {
		case "exit-status", "exit-signal":
			exited = true
		}
		if r.WantReply {
			r.Reply(false, nil)
		}
	}
	return exited
}

// handshake sends the program to a bootstrap that runs on the other end of
// s's pipes and waits until it is ready. fence: see startServer.
func (s *server) handshake(ctx context.Context, useSetsid bool, fence ...string) error {
	s.marker = []byte("\x1e@pi-remote:" + randhex.String(12) + ":")
	call := hostproto.Serve(string(s.marker), graceSeconds, useSetsid, randhex.String(6), fence...)
	stop := context.AfterFunc(ctx, func() { s.end() })
	_, err := io.WriteString(s.stdin, hostproto.Program+call+"\n"+programEnd+"\n")
	var status string
	if err == nil {
		status, err = s.readUntilMarker(io.Discard)
	}
	if !stop() {
		// ctx ended and closed the channel, perhaps just after the
		// server became ready.
		return ctx.Err()
	}
	if err != nil {
		return fmt.Errorf("starting command server: %w%s", err, s.stderr.suffix())
	}
	// READY <server's process group, 0 if it leads none> <setsid|-> <durable|private>
	fields := strings.Fields(status)
	if len(fields) == 0 || fields[0] != "READY" {
		return fmt.Errorf("starting command server: %s%s", status, s.stderr.suffix())
	}
	s.setsid = len(fields) > 2 && fields[2] == "setsid"
	s.privateJobs = len(fields) > 3 && fields[3] == "private"
	return nil
}

// close ends the server's channel; the server sees the end of its input.
// (Closing only stdin would race a write in progress: x/crypto's CloseWrite
// is not safe beside Write, Close is.)
func (s *server) close() {
	s.broken.Store(true)
	s.end()
}

// send writes the request line (and its data).
func (s *server) send(r hostproto.Request) error {
	var b strings.Builder
	b.Write(s.marker)
	b.WriteString(r.Name)
	for _, a := range r.Args {
		b.WriteByte(' ')
		b.WriteString(shellquote.QuoteLine(a))
	}
	b.WriteByte('\n')
	b.Write(r.Data)
	return s.write(b.String())
}

// post sends r behind the requests already in flight. The answer to r
// may be read once prev is closed (nil: at once); close mine once it has
// been read, or given up on.
func (s *server) post(r hostproto.Request) (prev, mine chan struct{}, err error) {
	s.pmu.Lock()
	defer s.pmu.Unlock()
	prev, mine = s.lastRead, make(chan struct{})
	s.lastRead = mine
	return prev, mine, s.send(r)
}

// control sends a control line to the request s runs. One that arrives
// after the request ended is ignored by the server.
func (s *server) control(c hostproto.Control) error { return s.write(string(c)) }

// controlLocked is control with s.wmu held.
func (s *server) controlLocked(c hostproto.Control) error { return s.writeLocked(string(c)) }

func (s *server) write(line string) error {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	return s.writeLocked(line)
}

func (s *server) writeLocked(line string) error {
	if _, err := io.WriteString(s.stdin, line); err != nil {
		s.broken.Store(true)
		return err
	}
	return nil
}

// readUntilMarker copies stdout to w up to the marker and returns the rest
// of the marker's line. After a write error it stops writing to w but goes
// on reading up to the marker, so the server stays usable.
func (s *server) readUntilMarker(w io.Writer) (string, error) {
	tok := s.marker
	var pending []byte
	var werr error
	emit := func(b []byte) {
		if werr == nil && len(b) > 0 {
			_, werr = w.Write(b)
		}
	}
	for {
		// Look for the token in what is buffered without consuming more
		// than the marker line.
		n := s.stdout.Buffered()
		if n == 0 {
			if _, err := s.stdout.Peek(1); err != nil {
				emit(pending)
				s.broken.Store(true)
				if errors.Is(err, io.EOF) {
					return "", errServerExited
				}
				return "", err
			}
			n = s.stdout.Buffered()
		}
		buf, _ := s.stdout.Peek(n)
		joined := append(pending, buf...)
		if i := bytes.Index(joined, tok); i >= 0 {
			emit(joined[:i])
			// Consume up to and including the token.
			s.stdout.Discard(i + len(tok) - len(pending))
			status, err := s.stdout.ReadString('\n')
			if err != nil {
				s.broken.Store(true)
				return "", err
			}
			return strings.TrimSuffix(status, "\n"), werr
		}
		// Hold back only a tail that could be the start of the token, so
		// output streams as it comes.
		keep := partialPrefix(joined, tok)
		emit(joined[:len(joined)-keep])
		pending = append(pending[:0], joined[len(joined)-keep:]...)
		s.stdout.Discard(n)
	}
}

// partialPrefix is the length of the longest suffix of b that is a proper
// prefix of tok.
func partialPrefix(b, tok []byte) int {
	for n := min(len(tok)-1, len(b)); n > 0; n-- {
		if bytes.Equal(b[len(b)-n:], tok[:n]) {
			return n
		}
	}
	return 0
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	buf []byte
	max int
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if len(t.buf) > t.max {
		t.buf = t.buf[len(t.buf)-t.max:]
	}
	return len(p), nil
}

// suffix is " (<last stderr>)" or "".
func (t *tailBuffer) suffix() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := strings.TrimSpace(string(t.buf))
	if s == "" {
		return ""
	}
	return " (" + s + ")"
}
