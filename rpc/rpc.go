// Package rpc serves an agent session and its tools over JSON lines: one
// command a line in, responses and events a line out. docs/rpc.md is the
// protocol's reference; this package is its one implementation, over a
// workspace any front end can open.
package rpc

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/pi-remote/pi-remote/agent"
	"github.com/pi-remote/pi-remote/loop"
	"github.com/pi-remote/pi-remote/tools"
	"github.com/pi-remote/pi-remote/workspace"
)

// command is one line of input.
type command struct {
	ID       json.RawMessage `json:"id,omitempty"`
	Type     string          `json:"type"`
	Message  string          `json:"message,omitempty"`
	Provider string          `json:"provider,omitempty"`
	Model    string          `json:"model,omitempty"`
	Name     string          `json:"name,omitempty"`
	Args     json.RawMessage `json:"args,omitempty"`
	Host     string          `json:"host,omitempty"`
	Focus    string          `json:"focus,omitempty"`
	Decision string          `json:"decision,omitempty"`
	Reason   string          `json:"reason,omitempty"`
}

// response answers one command.
type response struct {
	Type    string          `json:"type"` // "response"
	ID      json.RawMessage `json:"id,omitempty"`
	Command string          `json:"command"`
	Success bool            `json:"success"`
	Data    any             `json:"data,omitempty"`
	Error   string          `json:"error,omitempty"`
}

// Server serves one workspace's agent and tools over JSON lines, for one
// input (Serve).
type Server struct {
	ws       *workspace.Workspace
	newModel func(spec string) (loop.Model, error)
	maxArgs  int

	outMu sync.Mutex
	out   *bufio.Writer

	models agent.Models

	mu      sync.Mutex
	sess    *agent.Session
	model   string
	cancel  context.CancelFunc // the running prompt's, nil when idle
	running chan struct{}      // closed when the running prompt ends

	tools    sync.WaitGroup
	toolCtx  context.Context
	toolStop context.CancelFunc
	toolSeq  atomic.Int64
	// admitted is closed when the latest tool command has passed its
	// prepare stage; the next one waits for it, so admissions keep the
	// arrival order without holding up the input loop.
	admitted chan struct{}

	approvals *approvals
}

// Options are what a Server serves beside its workspace.
type Options struct {
	// Model is the spec ("provider/id") of w.Config.Model, "" for none.
	Model string
	// NewModel builds the model set_model names.
	NewModel func(spec string) (loop.Model, error)
	// Models and Compaction are the agent session's model table and
	// compaction settings.
	Models     agent.Models
	Compaction agent.CompactionSettings
	// MaxArgumentBytes bounds a tool command's arguments (0: the loop's
	// default).
	MaxArgumentBytes int
}

// New makes a server of w's agent and tools that writes its responses and
// events to out. The caller keeps w, and closes it after Serve. The
// server is the asker of w's gate (when w has one): calls that need a
// person's decision wait for the client's approve command.
func New(w *workspace.Workspace, out io.Writer, o Options) *Server {
	s := &Server{ws: w, newModel: o.NewModel, maxArgs: o.MaxArgumentBytes, models: o.Models, out: bufio.NewWriter(out), model: o.Model, admitted: make(chan struct{}), approvals: newApprovals()}
	close(s.admitted)
	// The prompt's calls and the tool commands pass the same gate; the
	// client decides what it asks (approval_request, approve).
	if w.Gate != nil {
		w.Gate.SetAsker(s.ask)
	}
	s.sess = agent.New(agent.Options{
		Config:      w.Config,
		Model:       o.Models.Lookup(o.Model),
		Compaction:  o.Compaction,
		DefaultHost: w.DefaultHost(),
		Emit:        s.event,
	})
	return s
}

// Retry tells the client that a model request is sent again (a "retry"
// event); give it to the model as its retry callback.
func (s *Server) Retry(attempt int, why string) {
	s.write(map[string]any{"type": "retry", "attempt": attempt, "error": why})
}

// Serve reads commands from in until its end, then lets the work in
// flight finish. Interrupts (ctx) do not end it: abort does, per command.
func (s *Server) Serve(ctx context.Context, in io.Reader) error {
	base := context.WithoutCancel(ctx)
	s.toolCtx, s.toolStop = context.WithCancel(base)
	r := bufio.NewReaderSize(in, 64<<10)
	for {
		line, err := r.ReadBytes('\n')
		line = bytes.TrimSuffix(bytes.TrimSuffix(line, []byte("\n")), []byte("\r"))
		if len(bytes.TrimSpace(line)) > 0 {
			s.handle(base, line)
		}
		if err != nil {
			break
		}
	}
	// End of input: let in-flight work finish. Calls that wait for a
	// decision are refused, as nobody is left to give it.
	s.approvals.endInput()
	s.tools.Wait()
	s.mu.Lock()
	running := s.running
	s.mu.Unlock()
	if running != nil {
		<-running
	}
	return nil
}

func (s *Server) write(v any) {
	b, err := json.Marshal(v)
	if err != nil {
		b, _ = json.Marshal(response{Type: "response", Command: "internal", Error: err.Error()})
	}
	s.outMu.Lock()
	defer s.outMu.Unlock()
	s.out.Write(b)
	s.out.WriteByte('\n')
	s.out.Flush()
}

func (s *Server) event(e loop.Event) {
	b, err := loop.MarshalEvent(e)
	if err != nil {
		return
	}
	s.outMu.Lock()
	defer s.outMu.Unlock()
	s.out.Write(b)
	s.out.WriteByte('\n')
	s.out.Flush()
}

func (s *Server) reply(c command, data any, err error) {
	r := response{Type: "response", ID: c.ID, Command: c.Type, Success: err == nil, Data: data}
	if err != nil {
		r.Error = err.Error()
		r.Data = nil
	}
	s.write(r)
}

func (s *Server) handle(ctx context.Context, line []byte) {
	var c command
	if err := json.Unmarshal(line, &c); err != nil {
		s.write(response{Type: "response", Command: "parse", Error: "malformed command: " + err.Error()})
		return
	}
	switch c.Type {
	case "prompt":
		msg, err := s.expand(c.Message)
		if err == nil {
			err = s.prompt(ctx, msg)
		}
		s.reply(c, nil, err)
	case "steer", "follow_up":
		if strings.TrimSpace(c.Message) == "" {
			s.reply(c, nil, errors.New("message is empty"))
			return
		}
		msg, err := s.expand(c.Message)
		if err != nil {
			s.reply(c, nil, err)
			return
		}
		if c.Type == "steer" {
			s.sess.Steer(loop.NewUserText(msg))
		} else {
			s.sess.FollowUp(loop.NewUserText(msg))
		}
		s.reply(c, nil, nil)
	case "get_commands":
		s.reply(c, map[string]any{"commands": commandList(s.ws.Commands())}, nil)
	case "abort":
		// The running prompt and the tool commands in flight stop; later
		// commands run normally.
		s.mu.Lock()
		cancelRun, stopTools := s.cancel, s.toolStop
		s.toolCtx, s.toolStop = context.WithCancel(ctx)
		s.mu.Unlock()
		if cancelRun != nil {
			cancelRun()
		}
		stopTools()
		s.reply(c, nil, nil)
	case "get_state":
		s.mu.Lock()
		hosts := s.ws.HostNames()
		msgs := s.sess.Messages()
		state := map[string]any{"running": s.cancel != nil, "model": s.model, "messages": len(msgs), "hosts": hosts, "tools": s.ws.Config.Active,
			"usage": s.sess.Usage(), "contextTokens": s.sess.ContextTokens(), "contextWindow": s.sess.Model().Window}
		s.mu.Unlock()
		s.reply(c, state, nil)
	case "get_messages":
		s.reply(c, map[string]any{"messages": s.sess.Messages()}, nil)
	case "compact":
		s.compact(ctx, c)
	case "set_model":
		s.reply(c, nil, s.setModel(c.Provider, c.Model))
	case "tool":
		s.tool(c)
	case "approve":
		s.reply(c, nil, s.approve(c))
	default:
		s.reply(c, nil, fmt.Errorf("unknown command %q", c.Type))
	}
}

func (s *Server) prompt(base context.Context, message string) error {
	if strings.TrimSpace(message) == "" {
		return errors.New("message is empty")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cancel != nil {
		return errors.New("a prompt is running: use steer or follow_up, or abort it first")
	}
	if s.ws.Config.Model == nil {
		return errors.New("no model: start with --model or send set_model first")
	}
	ctx, cancel := context.WithCancel(base)
	done := make(chan struct{})
	s.cancel, s.running = cancel, done
	go func() {
		defer close(done)
		// The loop's events tell of model and tool failures; a context
		// that compacting could not make fit is the session's own.
		if _, err := s.sess.Prompt(ctx, loop.NewUserText(message)); errors.Is(err, agent.ErrOverflow) {
			s.write(map[string]string{"type": "error", "error": err.Error()})
		}
		s.mu.Lock()
		s.cancel, s.running = nil, nil
		s.mu.Unlock()
		cancel()
	}()
	return nil
}

// compact compacts the conversation now (focus: what the summary should
// keep most), answering when it is done; abort stops it.
func (s *Server) compact(base context.Context, c command) {
	s.mu.Lock()
	if s.cancel != nil {
		s.mu.Unlock()
		s.reply(c, nil, errors.New("a prompt is running: compact when it has ended, or abort it first"))
		return
	}
	ctx, cancel := context.WithCancel(base)
	done := make(chan struct{})
	s.cancel, s.running = cancel, done
	s.mu.Unlock()
	go func() {
		defer close(done)
		before := s.sess.ContextTokens()
		err := s.sess.Compact(ctx, c.Focus)
		s.mu.Lock()
		s.cancel, s.running = nil, nil
		s.mu.Unlock()
		cancel()
		s.reply(c, map[string]any{"tokensBefore": before, "tokensAfter": s.sess.ContextTokens()}, err)
	}()
}

func (s *Server) setModel(provider, model string) error {
	if provider == "" || model == "" {
		return errors.New("set_model needs provider and model")
	}
	spec := provider + "/" + model
	m, err := s.newModel(spec)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cancel != nil {
		return errors.New("a prompt is running: set the model when it has ended")
	}
	s.ws.Config.Model = m
	s.model = spec
	s.sess.SetModel(m, s.models.Lookup(spec))
	return nil
}

// tool runs one tool directly. Its prepare stage (validation and its place
// in a file's mutation queue, which may ask the host for the file's
// canonical path) runs after the previous command's, so same-file edits
// apply in arrival order; execution then runs concurrently with other
// commands. Neither stage runs in the input loop: an abort sent while the
// host is slow to answer is read and answered at once.
func (s *Server) tool(c command) {
	args := c.Args
	if len(args) == 0 {
		args = json.RawMessage("{}")
	}
	if c.Host != "" {
		var m map[string]any
		if err := json.Unmarshal(args, &m); err != nil {
			s.reply(c, nil, fmt.Errorf("args: %v", err))
			return
		}
		if len(s.ws.Hosts) == 1 {
			if c.Host != s.ws.DefaultHost() {
				s.reply(c, nil, fmt.Errorf("unknown host %q (host: %s)", c.Host, s.ws.DefaultHost()))
				return
			}
		} else {
			m["host"] = c.Host
			args, _ = json.Marshal(m)
		}
	}
	// One of the seven that is not active (--tools) is told how to make it
	// so, before it takes its place in the order of calls.
	if active := s.ws.Config.Active; active != nil && slices.Contains(tools.AllNames, c.Name) && !slices.Contains(active, c.Name) {
		text := fmt.Sprintf("Tool %q is not active. Active tools: %s. Start rpc with --tools %s to use it.",
			c.Name, strings.Join(active, ", "), strings.Join(append(slices.Clone(active), c.Name), ","))
		r := loop.ErrorResult(text)
		s.reply(c, map[string]any{"content": r.Content, "details": r.Details, "isError": r.IsError}, nil)
		return
	}
	id := fmt.Sprintf("rpc-%d", s.toolSeq.Add(1))
	if len(c.ID) > 0 {
		id = strings.Trim(string(c.ID), `"`)
	}
	s.mu.Lock()
	ctx := s.toolCtx
	prev, mine := s.admitted, make(chan struct{})
	s.admitted = mine
	s.mu.Unlock()
	// Only the active tools (--tools, what get_state reports) run; the
	// loop answers any other name with an error result naming them. The
	// hooks run around it as around the agent's calls (the permission
	// gate is in the tools themselves).
	cfg := loop.Config{Tools: s.ws.Config.Tools, Active: s.ws.Config.Active, MaxArgumentBytes: s.maxArgs,
		BeforeToolCall: s.ws.Config.BeforeToolCall, AfterToolCall: s.ws.Config.AfterToolCall}
	s.tools.Go(func() {
		select {
		case <-prev:
		case <-ctx.Done():
			// Aborted: the prepare stage fails at once, in any order.
		}
		run := loop.StartTool(ctx, cfg, &loop.ToolCall{ID: id, Name: c.Name, Arguments: args}, nil)
		close(mine)
		m := run()
		s.reply(c, map[string]any{"content": m.Content, "details": m.Details, "isError": m.IsError}, nil)
	})
}
