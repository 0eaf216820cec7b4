package mcpclient

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/pi-remote/pi-remote/internal/termtext"
)

// Options say how a Manager reaches its servers.
type Options struct {
	// Connect makes a server's transport (nil: Local).
	Connect Connect
	// StartTimeout bounds starting one server, its tool list included
	// (0: 30 s).
	StartTimeout time.Duration
	// Version is what pi-remote tells servers its version is.
	Version string
}

// States of a server.
const (
	Running = "running"
	Failed  = "failed"  // did not start; the session goes on without it
	Stopped = "stopped" // died, or was stopped; started again at its next call
	Skipped = "not started"
)

// Status is what a server is doing, for check and /mcp.
type Status struct {
	Name      string   `json:"name"`
	Transport string   `json:"transport"`
	Where     string   `json:"where"`
	From      string   `json:"from,omitempty"`
	State     string   `json:"state"`
	Error     string   `json:"error,omitempty"`
	Tools     []string `json:"tools,omitempty"` // the names the model sees
	// Server is the name and version the server gave.
	Server string `json:"server,omitempty"`
}

// Manager holds the MCP servers of a session. Safe for concurrent use;
// a nil Manager has no servers.
type Manager struct {
	servers []*server
	skipped []Status
	tools   []Tool // set by Start, then only read
}

// Start starts every server of cfgs, all at once, and waits for each to
// answer with its tools or fail (each within o.StartTimeout). A server
// that fails is kept in the Manager as failed (Failures, Status) and has
// no tools; the others serve. Start never fails as a whole.
func Start(ctx context.Context, cfgs []Config, o Options) *Manager {
	if o.Connect == nil {
		o.Connect = Local
	}
	if o.StartTimeout <= 0 {
		o.StartTimeout = 30 * time.Second
	}
	if o.Version == "" {
		o.Version = "dev"
	}
	m := &Manager{}
	for _, c := range sorted(cfgs) {
		m.servers = append(m.servers, &server{cfg: c, o: o, progress: map[string]func(*mcp.ProgressNotificationParams){}})
	}
	var wg sync.WaitGroup
	for _, s := range m.servers {
		wg.Go(func() { s.start(ctx) })
	}
	wg.Wait()
	m.define()
	return m
}

// Skip records servers that were configured but not started (a project's,
// when the user does not trust it), with why: Status lists them.
func (m *Manager) Skip(names []string, why string) {
	for _, n := range names {
		m.skipped = append(m.skipped, Status{Name: n, State: Skipped, Error: why})
	}
}

// Failures are the servers that could not start, one line each, for a
// notice: "MCP server NAME (WHERE) did not start: WHY".
func (m *Manager) Failures() []string {
	if m == nil {
		return nil
	}
	var out []string
	for _, s := range m.servers {
		if st := s.status(); st.State == Failed {
			out = append(out, fmt.Sprintf("MCP server %s (%s) did not start: %s; the session goes on without its tools", st.Name, st.Where, st.Error))
		}
	}
	return out
}

// Status is every server's state and tools, in name order, then the
// servers not started.
func (m *Manager) Status() []Status {
	if m == nil {
		return nil
	}
	var out []Status
	for _, s := range m.servers {
		out = append(out, s.status())
	}
	return append(out, m.skipped...)
}

// Close stops every server (a local one's whole process group), all at
// once.
func (m *Manager) Close() {
	if m == nil {
		return
	}
	var wg sync.WaitGroup
	for _, s := range m.servers {
		wg.Go(s.stop)
	}
	wg.Wait()
}

// server is one configured server and its session, if any.
type server struct {
	cfg Config
	o   Options

	mu        sync.Mutex
	session   *mcp.ClientSession
	transport mcp.Transport
	ended     chan struct{} // closed when session's connection ends
	state     string
	err       string
	info      string // the server's name and version
	tools     []*mcp.Tool
	names     []string // the tools' names as the model sees them (define)
	problems  string   // the tools left out, and why (define)
	closed    bool
	ends      []context.CancelFunc // end each connection's reads (stop)

	// progress routes notifications by token to the call that asked.
	progressMu sync.Mutex
	progress   map[string]func(*mcp.ProgressNotificationParams)
	seq        atomic.Int64
}

// start starts the server and lists its tools; a failure leaves it
// Failed.
func (s *server) start(ctx context.Context) {
	cs, t, err := s.connect(ctx)
	s.mu.Lock()
	defer s.mu.Unlock()
	if err != nil {
		s.state, s.err = Failed, err.Error()
		return
	}
	ctx, cancel := context.WithTimeout(ctx, s.o.StartTimeout)
	defer cancel()
	var tools []*mcp.Tool
	for tool, err := range cs.Tools(ctx, nil) {
		if err != nil {
			cs.Close()
			s.state, s.err = Failed, s.explain("listing its tools", err, t)
			return
		}
		tools = append(tools, tool)
	}
	s.tools = tools
	s.adopt(cs, t)
}

// connect starts a session with the server.
func (s *server) connect(ctx context.Context) (*mcp.ClientSession, mcp.Transport, error) {
	ctx, cancel := context.WithTimeout(ctx, s.o.StartTimeout)
	defer cancel()
	cfg, missing := s.cfg.Expand(os.LookupEnv)
	if len(missing) > 0 {
		return nil, nil, fmt.Errorf("its settings name environment variables that are not set: %s", strings.Join(missing, ", "))
	}
	t, err := s.o.Connect(ctx, cfg)
	if err != nil {
		return nil, nil, err
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "pi-remote", Version: s.o.Version}, &mcp.ClientOptions{
		// No roots, sampling or elicitation: the server gets tool calls
		// and nothing else of the session.
		Capabilities:                &mcp.ClientCapabilities{},
		ProgressNotificationHandler: s.onProgress,
	})
	// The connection lives beyond ctx (an SSE stream is a request made
	// with the context Connect gets), until the session ends; starting
	// it is bounded still.
	life, end := context.WithCancel(context.WithoutCancel(ctx))
	timer := time.AfterFunc(s.o.StartTimeout, end)
	cs, err := client.Connect(ctx, lasting{t, life}, nil)
	if !timer.Stop() && err == nil {
		cs.Close()
		err = context.DeadlineExceeded
	}
	if err != nil {
		end()
		return nil, nil, errors.New(s.explain("starting", err, t))
	}
	go func() {
		cs.Wait()
		end()
	}()
	s.mu.Lock()
	s.ends = append(s.ends, end)
	s.mu.Unlock()
	return cs, t, nil
}

// lasting is a transport whose connection gets a context of its own, not
// the one it is started in, and whose reads end when that context does:
// a session can be ended (stop) without waiting for its calls, which then
// fail as on a closed connection.
type lasting struct {
	mcp.Transport
	ctx context.Context
}

func (l lasting) Connect(context.Context) (mcp.Connection, error) {
	c, err := l.Transport.Connect(l.ctx)
	if err != nil {
		return nil, err
	}
	return endingConn{c, l.ctx}, nil
}

// endingConn is a connection whose reads end with ctx.
type endingConn struct {
	mcp.Connection
	ctx context.Context
}

func (c endingConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer context.AfterFunc(c.ctx, cancel)()
	defer cancel()
	return c.Connection.Read(ctx)
}

// adopt makes cs the server's session (s.mu held) and watches for its
// end.
func (s *server) adopt(cs *mcp.ClientSession, t mcp.Transport) {
	s.session, s.transport, s.state, s.err = cs, t, Running, ""
	if r := cs.InitializeResult(); r != nil && r.ServerInfo != nil {
		// (One short line: a newline could forge a line of the status.)
		s.info = cut(strings.Join(strings.Fields(r.ServerInfo.Name+" "+r.ServerInfo.Version), " "), maxInfo)
	}
	ended := make(chan struct{})
	s.ended = ended
	go func() {
		cs.Wait()
		close(ended)
		s.mu.Lock()
		if s.session == cs {
			s.state, s.err = Stopped, s.explain("running", errors.New("the connection ended"), t)
		}
		s.mu.Unlock()
	}()
}

// maxInfo bounds the name and version a server gives, as the status
// shows them.
const maxInfo = 100

// stderrTail is a transport that keeps the end of its server's stderr
// (CommandTransport; a transport to a program on a host may too), for
// error messages.
type stderrTail interface{ Stderr() string }

// explain says what went wrong while doing what, with the last lines
// the server wrote on stderr when its transport keeps them.
func (s *server) explain(doing string, err error, t mcp.Transport) string {
	msg := fmt.Sprintf("%s: %v", doing, err)
	if ct, ok := t.(stderrTail); ok {
		if e := ct.Stderr(); e != "" {
			msg += "; its stderr ends with: " + termtext.String(e)
		}
	}
	return msg
}

// stop closes the session (and so the server).
func (s *server) stop() {
	s.mu.Lock()
	cs, ends := s.session, s.ends
	s.session, s.closed, s.ends = nil, true, nil
	if s.state == Running {
		s.state = Stopped
	}
	s.mu.Unlock()
	// (First the reads: a call in flight then fails at once, and Close,
	// which waits for calls, does not wait for it.)
	for _, end := range ends {
		end()
	}
	if cs != nil {
		cs.Close()
	}
}

func (s *server) status() Status {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := Status{Name: s.cfg.Name, Transport: s.cfg.Transport(), Where: s.cfg.Where(), From: s.cfg.From, State: s.state, Error: s.err, Server: s.info, Tools: s.names}
	if s.problems != "" {
		st.Error = strings.TrimPrefix(st.Error+"; "+s.problems, "; ")
	}
	return st
}

// live is the server's session, started again when it died; restarted
// says that it was (the state the server held is gone).
func (s *server) live(ctx context.Context) (cs *mcp.ClientSession, restarted bool, err error) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil, false, errors.New("the session is over: the server was stopped")
	}
	if s.session != nil {
		select {
		case <-s.ended:
		default:
			cs = s.session
			s.mu.Unlock()
			return cs, false, nil
		}
	}
	old := s.session
	s.session = nil
	s.mu.Unlock()
	if old != nil {
		old.Close()
	}
	// (Two calls may both start it; the second's session wins and the
	// first's is closed.)
	cs, t, err := s.connect(ctx)
	if err != nil {
		s.mu.Lock()
		s.state, s.err = Stopped, err.Error()
		s.mu.Unlock()
		return nil, false, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		cs.Close()
		return nil, false, errors.New("the session is over: the server was stopped")
	}
	if s.session != nil {
		cs.Close()
		return s.session, true, nil
	}
	s.adopt(cs, t)
	return cs, true, nil
}

// died says whether cs's connection has ended (the server died), and
// forgets the session so that the next call starts the server again. A
// call's error may arrive before the end is seen: it waits a little, and
// then takes any error but the server's own answer for a connection that
// failed.
func (s *server) died(cs *mcp.ClientSession, err error) bool {
	s.mu.Lock()
	ended := s.ended
	current := s.session == cs
	s.mu.Unlock()
	if !current {
		return true
	}
	wait := 100 * time.Millisecond
	if errors.Is(err, mcp.ErrConnectionClosed) {
		wait = 2 * time.Second
	}
	select {
	case <-ended:
	case <-time.After(wait):
		var answer *jsonrpc.Error
		if errors.As(err, &answer) {
			return false // the server answered: it refused the call
		}
		// The connection failed without an answer (a message too
		// large, a broken stream) and is still closing: it takes no
		// more calls, and the next one starts the server again.
		s.mu.Lock()
		if s.session == cs {
			s.session, s.state = nil, Stopped
		}
		s.mu.Unlock()
		go cs.Close()
		return true
	}
	s.mu.Lock()
	if s.session == cs {
		s.state = Stopped
	}
	s.mu.Unlock()
	return true
}

// lastWords is the end of what the server wrote on stderr ("" when its
// transport does not keep it, or there is nothing).
func (s *server) lastWords() string {
	s.mu.Lock()
	t := s.transport
	s.mu.Unlock()
	if ct, ok := t.(stderrTail); ok {
		return termtext.String(ct.Stderr())
	}
	return ""
}

// onProgress hands a progress notification to the call that asked for it.
func (s *server) onProgress(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
	token, _ := req.Params.ProgressToken.(string)
	s.progressMu.Lock()
	f := s.progress[token]
	s.progressMu.Unlock()
	if f != nil {
		f(req.Params)
	}
}

// watch routes progress notifications for a new token to f until the
// returned function is called.
func (s *server) watch(f func(*mcp.ProgressNotificationParams)) (string, func()) {
	token := "pi-remote-" + strconv.FormatInt(s.seq.Add(1), 10)
	s.progressMu.Lock()
	s.progress[token] = f
	s.progressMu.Unlock()
	return token, func() {
		s.progressMu.Lock()
		delete(s.progress, token)
		s.progressMu.Unlock()
	}
}

// schema is a tool's input schema as JSON.
func schema(t *mcp.Tool) (json.RawMessage, error) {
	if t.InputSchema == nil {
		return json.RawMessage(`{"type":"object","properties":{}}`), nil
	}
	return json.Marshal(t.InputSchema)
}
