package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/spf13/cobra"

	"github.com/pi-remote/pi-remote/agent"
	"github.com/pi-remote/pi-remote/loop"
	"github.com/pi-remote/pi-remote/tools"
	"github.com/pi-remote/pi-remote/workspace"
)

func newRPCCmd(ios iostreams, g *globalOptions) *cobra.Command {
	o := &runOptions{}
	cmd := &cobra.Command{
		Use:   "rpc",
		Short: "Serve JSONL commands on stdin; responses and events on stdout",
		Long: `Serve the agent and its tools over JSON lines: one command object per line on
stdin, one response or event object per line on stdout. See docs/rpc.md.

Commands: prompt, steer, follow_up, abort, get_state, get_messages, set_model,
compact, and tool (run one tool directly, no model). Several tool commands may be in
flight at once; mutations of one file still apply in arrival order.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return rpcRun(cmd.Context(), ios, g, o)
		},
	}
	f := cmd.Flags()
	registerAgentFlags(f, o)
	return cmd
}

// rpcCommand is one line of input.
type rpcCommand struct {
	ID       json.RawMessage `json:"id,omitempty"`
	Type     string          `json:"type"`
	Message  string          `json:"message,omitempty"`
	Provider string          `json:"provider,omitempty"`
	Model    string          `json:"model,omitempty"`
	Name     string          `json:"name,omitempty"`
	Args     json.RawMessage `json:"args,omitempty"`
	Host     string          `json:"host,omitempty"`
	Focus    string          `json:"focus,omitempty"`
}

// rpcResponse answers one command.
type rpcResponse struct {
	Type    string          `json:"type"` // "response"
	ID      json.RawMessage `json:"id,omitempty"`
	Command string          `json:"command"`
	Success bool            `json:"success"`
	Data    any             `json:"data,omitempty"`
	Error   string          `json:"error,omitempty"`
}

type rpcServer struct {
	ws   *workspace.Workspace
	opts *runOptions

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
}

func rpcRun(ctx context.Context, ios iostreams, g *globalOptions, o *runOptions) error {
	var s *rpcServer
	o.retried = func(n int, why string) {
		s.write(map[string]any{"type": "retry", "attempt": n, "error": why})
	}
	w, err := openWorkspace(ctx, g, o, false, nil)
	if err != nil {
		return err
	}
	defer w.Close()
	s = &rpcServer{ws: w, opts: o, models: g.settings.ModelTable(), out: bufio.NewWriter(ios.out), model: o.model, admitted: make(chan struct{})}
	close(s.admitted)
	s.sess = agent.New(agent.Options{
		Config:      w.Config,
		Model:       g.settings.ModelTable().Lookup(o.model),
		Compaction:  g.settings.compaction(),
		DefaultHost: w.DefaultHost(),
		Emit:        s.event,
	})
	// Interrupts do not end the server; abort does, per command.
	base := context.WithoutCancel(ctx)
	s.toolCtx, s.toolStop = context.WithCancel(base)
	r := bufio.NewReaderSize(ios.in, 64<<10)
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
	// End of input: let in-flight work finish.
	s.tools.Wait()
	s.mu.Lock()
	running := s.running
	s.mu.Unlock()
	if running != nil {
		<-running
	}
	return nil
}

func (s *rpcServer) write(v any) {
	b, err := json.Marshal(v)
	if err != nil {
		b, _ = json.Marshal(rpcResponse{Type: "response", Command: "internal", Error: err.Error()})
	}
	s.outMu.Lock()
	defer s.outMu.Unlock()
	s.out.Write(b)
	s.out.WriteByte('\n')
	s.out.Flush()
}

func (s *rpcServer) event(e loop.Event) {
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

func (s *rpcServer) reply(c rpcCommand, data any, err error) {
	r := rpcResponse{Type: "response", ID: c.ID, Command: c.Type, Success: err == nil, Data: data}
	if err != nil {
		r.Error = err.Error()
		r.Data = nil
	}
	s.write(r)
}

func (s *rpcServer) handle(ctx context.Context, line []byte) {
	var c rpcCommand
	if err := json.Unmarshal(line, &c); err != nil {
		s.write(rpcResponse{Type: "response", Command: "parse", Error: "malformed command: " + err.Error()})
		return
	}
	switch c.Type {
	case "prompt":
		s.reply(c, nil, s.prompt(ctx, c.Message))
	case "steer", "follow_up":
		if strings.TrimSpace(c.Message) == "" {
			s.reply(c, nil, errors.New("message is empty"))
			return
		}
		if c.Type == "steer" {
			s.sess.Steer(loop.NewUserText(c.Message))
		} else {
			s.sess.FollowUp(loop.NewUserText(c.Message))
		}
		s.reply(c, nil, nil)
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
	default:
		s.reply(c, nil, fmt.Errorf("unknown command %q", c.Type))
	}
}

func (s *rpcServer) prompt(base context.Context, message string) error {
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
func (s *rpcServer) compact(base context.Context, c rpcCommand) {
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

func (s *rpcServer) setModel(provider, model string) error {
	if provider == "" || model == "" {
		return errors.New("set_model needs provider and model")
	}
	o := *s.opts
	o.model = provider + "/" + model
	m, err := newModel(&o)
	if err != nil {
		var ee *exitError
		if errors.As(err, &ee) {
			return ee.err
		}
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cancel != nil {
		return errors.New("a prompt is running: set the model when it has ended")
	}
	s.ws.Config.Model = m
	s.model = o.model
	s.sess.SetModel(m, s.models.Lookup(o.model))
	return nil
}

// tool runs one tool directly. Its prepare stage (validation and its place
// in a file's mutation queue, which may ask the host for the file's
// canonical path) runs after the previous command's, so same-file edits
// apply in arrival order; execution then runs concurrently with other
// commands. Neither stage runs in the input loop: an abort sent while the
// host is slow to answer is read and answered at once.
func (s *rpcServer) tool(c rpcCommand) {
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
	// loop answers any other name with an error result naming them.
	cfg := loop.Config{Tools: s.ws.Config.Tools, Active: s.ws.Config.Active, MaxArgumentBytes: maxArgsInput}
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
