package ssh

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"golang.org/x/crypto/ssh"

	"github.com/pi-remote/pi-remote/internal/shellquote"
)

// A server is one long-lived POSIX sh on the host, started once on its own
// SSH session channel and then fed one request at a time on stdin. A
// command costs one round trip instead of a new session (a fork of sshd,
// PAM, the login shell): that is what makes steady-state tool calls cheap.
//
// Protocol. A request is shell code calling one of the functions of
// serverProgram, followed by a line holding only the token. Every request
// ends with the marker
// — a random token per server — followed by a status and a newline, on
// stdout. Everything on stdout before the marker is the request's output.
// stderr carries control lines ("P <pid>": the process group of a user
// command), never output.
//
// User commands (x) run in their own session and process group (setsid,
// when the host has it), with stdin from /dev/null, their stdout and stderr
// merged into a FIFO that a relay copies to the server's stdout. When the
// command exits the server waits briefly for the relay and then cuts it, so
// a background child holding the output cannot delay or pollute the next
// request. Internal requests (q) are pi-remote's own short scripts and run
// in a subshell writing straight to stdout.
type server struct {
	sess   *ssh.Session
	stdin  io.WriteCloser
	stdout *bufio.Reader
	token  []byte
	setsid bool
	pgid   int64 // the server's own process group

	pid    atomic.Int64 // process group of the running user command
	stderr *tailBuffer  // last lines of unexpected stderr, for errors
	broken atomic.Bool  // protocol state unknown: never reuse
}

// bootstrap is the session's command. It must survive being run by any
// login shell (sh, bash, zsh, fish, csh): one single-quoted word with no
// single quote, "!" or newline inside. It reads the server program line by
// line up to programEnd and runs it.
const bootstrap = `exec /bin/sh -c 'n=$(printf "\nx"); n=${n%x}; p=; while IFS= read -r l; do [ "$l" = "` + programEnd + `" ] && break; p=$p$l$n; done; eval "$p"'`

const programEnd = "#pi-remote-end"

// serverProgram is the body of the server, run by /bin/sh. %[1]s is the
// marker token, %[2]s a random suffix for the private directory, %[3]s the
// grace period in seconds, %[4]s whether to use setsid when the host has it.
const serverProgram = `T=%[1]s
d="${TMPDIR:-/tmp}/.pi-remote.$$.%[2]s"
(umask 077 && mkdir "$d" && mkfifo "$d/o") || { printf '%%sFAIL cannot create %%s\n' "$T" "$d"; exit 1; }
trap 'rm -rf "$d"' EXIT
trap 'exit 129' HUP
trap 'exit 143' TERM
S=
[ %[4]s = yes ] && command -v setsid >/dev/null 2>&1 && S=setsid
U=$(id -u); G=$(id -g)
# bash sources ~/.bashrc when it thinks sshd started it as a top-level
# shell (SSH_CLIENT set, SHLVL below 2 after its own increment). Commands
# here are not top-level: give them the level a login shell would.
[ "${SHLVL:-0}" -ge 1 ] 2>/dev/null || { SHLVL=1; export SHLVL; }
x() {
	if [ -n "$2" ] && [ ! -d "$2" ]; then
		if [ -e "$2" ]; then printf '%%s!ENOTDIR\n' "$T"; else printf '%%s!ENOENT\n' "$T"; fi
		return
	fi
	cat "$d/o" & c=$!
	( if [ -n "$2" ]; then cd "$2" || exit 126; fi; exec $S sh -c "$1" ) >"$d/o" 2>&1 </dev/null & p=$!
	printf 'P %%s\n' "$p" >&2
	wait "$p"; s=$?
	( sleep %[3]s 2>/dev/null || sleep 1; kill "$c" ) 2>/dev/null & k=$!
	wait "$c"
	kill "$k" 2>/dev/null
	printf '%%s%%s\n' "$T" "$s"
}
q() {
	( LC_ALL=C; export LC_ALL; eval "$1" ) </dev/null 2>&1
	printf '%%s%%s\n' "$T" "$?"
}
`

// serverLoop follows the function definitions: announce, then serve.
// A request is its lines followed by a line holding only the token.
const serverLoop = `
P=$$; kill -s 0 -- -$$ 2>/dev/null || P=0
printf '%sREADY %s %s\n' "$T" "$P" "$S"
while :; do
	r=; e=1
	while IFS= read -r l; do
		if [ "$l" = "$T" ]; then e=; break; fi
		r=$r$l$n
	done
	[ -n "$e" ] && exit 0
	eval "$r"
done
`

// encodeRequest frames a request: its lines, then the token on a line of
// its own.
func (s *server) encodeRequest(req string) string {
	return req + "\n" + string(s.token) + "\n"
}

var errServerExited = errors.New("command server on the host exited")

// startServer opens a session and starts the server in it.
func startServer(ctx context.Context, client *ssh.Client, useSetsid bool) (*server, error) {
	sess, err := client.NewSession()
	if err != nil {
		return nil, err
	}
	s := &server{sess: sess, stderr: &tailBuffer{max: 4096}}
	fail := func(err error) (*server, error) {
		sess.Close()
		return nil, err
	}
	if s.stdin, err = sess.StdinPipe(); err != nil {
		return fail(err)
	}
	out, err := sess.StdoutPipe()
	if err != nil {
		return fail(err)
	}
	s.stdout = bufio.NewReaderSize(out, 64<<10)
	errPipe, err := sess.StderrPipe()
	if err != nil {
		return fail(err)
	}
	go s.readControl(errPipe)
	if err := sess.Start(bootstrap); err != nil {
		return fail(err)
	}
	var tok [12]byte
	rand.Read(tok[:])
	s.token = []byte("\x1e@pi-remote:" + hex.EncodeToString(tok[:]) + ":")
	var suffix [6]byte
	rand.Read(suffix[:])
	program := fmt.Sprintf(serverProgram, shellquote.Quote(string(s.token)), hex.EncodeToString(suffix[:]),
		strconv.FormatFloat(graceSeconds, 'f', -1, 64), yesNo(useSetsid)) + fileFunctions + serverLoop
	stop := context.AfterFunc(ctx, func() { sess.Close() })
	defer stop()
	if _, err := io.WriteString(s.stdin, program+"\n"+programEnd+"\n"); err != nil {
		return fail(err)
	}
	status, err := s.readUntilMarker(io.Discard)
	if err != nil {
		if ctx.Err() != nil {
			return fail(ctx.Err())
		}
		return fail(fmt.Errorf("starting command server: %w%s", err, s.stderr.suffix()))
	}
	if !strings.HasPrefix(status, "READY") {
		return fail(fmt.Errorf("starting command server: %s%s", status, s.stderr.suffix()))
	}
	// READY <server's process group, 0 if it leads none> [setsid]
	fields := strings.Fields(strings.TrimPrefix(status, "READY"))
	if len(fields) > 0 {
		s.pgid, _ = strconv.ParseInt(fields[0], 10, 64)
	}
	s.setsid = len(fields) > 1 && fields[1] == "setsid"
	return s, nil
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// graceSeconds is ops.GraceAfterExit as the server's sleep argument.
const graceSeconds = 0.3

func (s *server) close() {
	s.broken.Store(true)
	s.stdin.Close()
	s.sess.Close()
}

// readControl consumes stderr: "P <pid>" lines, and anything else the
// shell itself complains about.
func (s *server) readControl(r io.Reader) {
	br := bufio.NewReader(r)
	for {
		line, err := br.ReadString('\n')
		if pid, ok := strings.CutPrefix(strings.TrimSuffix(line, "\n"), "P "); ok {
			if n, perr := strconv.ParseInt(pid, 10, 64); perr == nil {
				s.pid.Store(n)
				if err == nil {
					continue
				}
			}
		}
		if line != "" {
			s.stderr.Write([]byte(line))
		}
		if err != nil {
			return
		}
	}
}

// request sends one request line and copies its output to w until the
// marker; it returns the status that follows the marker.
func (s *server) request(line string, w io.Writer) (string, error) {
	if _, err := io.WriteString(s.stdin, s.encodeRequest(line)); err != nil {
		s.broken.Store(true)
		return "", err
	}
	status, err := s.readUntilMarker(w)
	if err != nil {
		s.broken.Store(true)
	}
	return status, err
}

// readUntilMarker copies stdout to w up to the marker and returns the rest
// of the marker's line.
func (s *server) readUntilMarker(w io.Writer) (string, error) {
	tok := s.token
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
			consumed := i + len(tok) - len(pending)
			s.stdout.Discard(consumed)
			status, err := s.stdout.ReadString('\n')
			if err != nil {
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

// suffix is ": <last stderr>" or "".
func (t *tailBuffer) suffix() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := strings.TrimSpace(string(t.buf))
	if s == "" {
		return ""
	}
	return " (" + s + ")"
}
