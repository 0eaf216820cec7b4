package mcpclient

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Connect makes the transport that reaches the server c describes. The
// Manager calls it at start and at each restart.
type Connect func(ctx context.Context, c Config) (mcp.Transport, error)

// ErrHostUnsupported is Local's answer for a server that runs on a host:
// Local starts programs on this machine only. A Connect that knows the
// hosts (the workspace's) starts it there with a SpawnTransport.
var ErrHostUnsupported = errors.New("this Connect starts MCP servers on this machine only, not on a host")

// Local reaches the servers of this machine: a stdio server is started
// as a process of its own group (its stdin and stdout carry the
// protocol, its stderr is kept for error messages), an HTTP or SSE one
// is reached at its URL with its headers. A server with a Host is
// ErrHostUnsupported.
func Local(_ context.Context, c Config) (mcp.Transport, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	switch c.Transport() {
	case HTTP:
		return &mcp.StreamableClientTransport{Endpoint: c.URL, HTTPClient: withHeaders(c.URL, c.Headers), MaxRetries: -1}, nil
	case SSE:
		return &mcp.SSEClientTransport{Endpoint: c.URL, HTTPClient: withHeaders(c.URL, c.Headers)}, nil
	}
	if c.Host != "" {
		return nil, fmt.Errorf("host %s: %w", c.Host, ErrHostUnsupported)
	}
	return &CommandTransport{Command: c.Command, Args: c.Args, Env: c.Env}, nil
}

// withHeaders is an HTTP client that adds headers to every request to
// the origin (scheme, host and port) of endpoint, and to no other: the
// headers are the user's credentials for that server, and neither a
// redirect nor the message endpoint an SSE server names may take them
// elsewhere. Its responses are bounded (boundedTransport).
func withHeaders(endpoint string, h map[string]string) *http.Client {
	var next http.RoundTripper = http.DefaultTransport
	if u, err := url.Parse(endpoint); err == nil && len(h) > 0 {
		next = headerTransport{scheme: u.Scheme, host: u.Host, headers: h, next: next}
	}
	return &http.Client{Transport: boundedTransport{next}}
}

// maxBody bounds a response body that is one message (not an event
// stream, whose events the SDK bounds): the size of the largest message
// the SDK takes on the other transports.
const maxBody = mcp.DefaultMaxEventSize

// boundedTransport cuts a response body that is not an event stream at
// maxBody, failing the read beyond it: the SDK reads such a body whole,
// and a server could make it read without end.
type boundedTransport struct{ next http.RoundTripper }

func (t boundedTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := t.next.RoundTrip(r)
	if err != nil || strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		return resp, err
	}
	resp.Body = &boundedBody{ReadCloser: resp.Body, left: maxBody}
	return resp, nil
}

type boundedBody struct {
	io.ReadCloser
	left int64
}

func (b *boundedBody) Read(p []byte) (int, error) {
	if b.left <= 0 {
		return 0, fmt.Errorf("the server's response is larger than %d bytes", maxBody)
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.ReadCloser.Read(p)
	b.left -= int64(n)
	return n, err
}

type headerTransport struct {
	scheme, host string // the origin the headers are for
	headers      map[string]string
	next         http.RoundTripper
}

func (t headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if !strings.EqualFold(r.URL.Scheme, t.scheme) || !strings.EqualFold(r.URL.Host, t.host) {
		return t.next.RoundTrip(r)
	}
	r = r.Clone(r.Context())
	for k, v := range t.headers {
		r.Header.Set(k, v)
	}
	return t.next.RoundTrip(r)
}

// CommandTransport runs a stdio MCP server on this machine: the program
// in a process group of its own, newline-delimited JSON-RPC on its stdin
// and stdout. Closing the connection closes the server's stdin (MCP's
// stdio shutdown), waits up to StopGrace for the program to exit, and then
// kills its whole process group, so nothing it started outlives it.
type CommandTransport struct {
	Command string
	Args    []string
	Env     map[string]string // added to this process's environment
	// StopGrace is how long Close waits for the program to exit after
	// closing its stdin (0: 2 s).
	StopGrace time.Duration

	stderr tail
}

var _ mcp.Transport = (*CommandTransport)(nil)

// Connect starts the program.
func (t *CommandTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	// (Not CommandContext: the program outlives the context it was
	// started in; Close stops it.)
	cmd := exec.Command(t.Command, t.Args...)
	cmd.Env = os.Environ()
	for k, v := range t.Env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	cmd.Stderr = &t.stderr
	// (What the program started may hold stderr open after it exits.)
	cmd.WaitDelay = time.Second
	ownGroup(cmd)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	// stdout is a pipe of ours, not exec's: Wait would close exec's
	// before the last message in it is read.
	stdout, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	cmd.Stdout = w
	err = cmd.Start()
	w.Close()
	if err != nil {
		stdout.Close()
		stdin.Close()
		return nil, err
	}
	grace := t.StopGrace
	if grace <= 0 {
		grace = 2 * time.Second
	}
	p := &process{cmd: cmd, stdin: stdin, grace: grace, exited: make(chan struct{})}
	go p.wait()
	return (&mcp.IOTransport{Reader: stdout, Writer: p}).Connect(ctx)
}

// Stderr is the end of what the program wrote on its stderr (the last
// few lines), for error messages.
func (t *CommandTransport) Stderr() string { return t.stderr.String() }

// process is a started server: its stdin, and the end of it.
type process struct {
	cmd       *exec.Cmd
	stdin     io.WriteCloser
	grace     time.Duration
	exited    chan struct{}
	closeOnce sync.Once

	// mu orders killing the group and reaping the program: the group is
	// killed only while the program is not reaped (its pid, the group's
	// id, cannot be another's until then).
	mu     sync.Mutex
	reaped bool
}

// wait reaps the program when it exits, and first kills what it left in
// its group where the system lets it wait without reaping (Linux): a
// server that died is gone whole, and its stdout ends (EOF, after what it
// wrote is read) once nothing holds it open.
func (p *process) wait() {
	if awaitExit(p.cmd.Process.Pid) {
		p.mu.Lock()
		killGroup(p.cmd)
		p.mu.Unlock()
	}
	p.cmd.Wait()
	p.mu.Lock()
	p.reaped = true
	p.mu.Unlock()
	close(p.exited)
}

func (p *process) Write(b []byte) (int, error) { return p.stdin.Write(b) }

// Close stops the server: stdin closed (MCP's stdio shutdown), a grace
// period, then the whole group killed.
func (p *process) Close() error {
	p.closeOnce.Do(func() {
		p.stdin.Close()
		select {
		case <-p.exited:
		case <-time.After(p.grace):
		}
		p.mu.Lock()
		if !p.reaped {
			killGroup(p.cmd)
		}
		p.mu.Unlock()
		<-p.exited
	})
	return nil
}

// tail keeps the last bytes written to it.
type tail struct {
	mu  sync.Mutex
	buf []byte
}

const tailBytes = 4 << 10

func (t *tail) Write(b []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, b...)
	if len(t.buf) > tailBytes {
		t.buf = append(t.buf[:0], t.buf[len(t.buf)-tailBytes:]...)
	}
	return len(b), nil
}

// String is the last lines written (up to 5).
func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	lines := strings.Split(strings.TrimSpace(strings.ToValidUTF8(string(t.buf), "\uFFFD")), "\n")
	if len(lines) > 5 {
		lines = lines[len(lines)-5:]
	}
	return strings.Join(lines, "\n")
}
