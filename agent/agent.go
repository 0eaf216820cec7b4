// Package agent is one agent session, as every front end (run's print and
// JSON modes, interactive mode, rpc) uses it: the loop with its model and
// tools, the conversation's context and its JSONL session file, automatic
// and on-demand compaction, recovery from a context-length error, and
// usage and cost.
//
// Compaction replaces the older part of the context with a summary made by
// the session's model (updated from the previous summary on later
// compactions), keeping about CompactionSettings.KeepRecentTokens of the
// latest messages word for word. It happens between the turns of a run
// whenever the context passes the window minus the reserve, on demand
// (Compact), and when the provider says a request did not fit: then the
// window becomes the one the refusal states (at most what was sent, when
// it states none) and the turn is tried once more. Errors that the
// session's events have shown already (Shown) need not be printed again
// by a front end. The session file keeps every message; a
// compaction entry records the summary and the first message kept, from
// which session.Open rebuilds the same context without summarizing again.
package agent

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/pi-remote/pi-remote/loop"
	"github.com/pi-remote/pi-remote/session"
)

// Options configure a Session.
type Options struct {
	// Config is the loop's configuration (model, tools, system prompt);
	// its BeforeTurn, Steering and FollowUp belong to the session.
	Config loop.Config
	// Model is what the session knows of Config.Model (Models.Lookup);
	// a zero Window is DefaultWindow.
	Model ModelInfo
	// Compaction settings; zero values take the defaults.
	Compaction CompactionSettings
	// File is the open session file and Context what it holds (from
	// session.Open; empty for a new file).
	File    *session.Session
	Context session.Context
	// DefaultHost names the host of tool calls that name none (for the
	// summary's file lists).
	DefaultHost string
	// Emit receives the loop's events and the session's own (compaction,
	// usage); called from one goroutine at a time.
	Emit func(loop.Event)
	// SaveError is told when the session file could not be written (the
	// run goes on unsaved).
	SaveError func(error)
	// PriorUsage is what the session's model calls cost before this
	// process (a resumed file): the session totals start from it.
	PriorUsage Totals
}

// Session is one conversation. Its methods may be called from several
// goroutines, but one run (Prompt) at a time; Close ends it, once the
// calls under way have returned.
type Session struct {
	opts Options

	// Steering messages go in after the current tool batch, follow-ups
	// when a run would otherwise end.
	steer, followUp loop.MessageQueue

	mu      sync.Mutex
	msgs    []loop.Message
	ids     []string // session entry of each message ("" when unsaved)
	summary string   // the latest compaction's summary
	fresh   int      // msgs[fresh:] came after the latest compaction
	usage   Totals   // this session's model calls in this process
	saveErr error
	calls   int        // Prompt and Compact calls under way
	idle    *sync.Cond // on mu: calls fell to 0
	closed  bool
}

// New starts a session from opts.Context.
func New(opts Options) *Session {
	opts.Compaction = opts.Compaction.withDefaults()
	opts.Model = opts.Model.withDefaults()
	if opts.Emit == nil {
		opts.Emit = func(loop.Event) {}
	}
	if opts.SaveError == nil {
		opts.SaveError = func(error) {}
	}
	s := &Session{opts: opts, msgs: slices.Clone(opts.Context.Messages), ids: slices.Clone(opts.Context.IDs), summary: opts.Context.Summary, fresh: opts.Context.Fresh, usage: opts.PriorUsage}
	s.idle = sync.NewCond(&s.mu)
	return s
}

// ErrClosed is the answer of Prompt and Compact after Close.
var ErrClosed = errors.New("the session is closed")

// Close waits for the Prompt and Compact calls under way to return
// (their callers cancel them: a front end that quits mid-run) and makes
// later ones fail with ErrClosed. After it, nothing more is appended to
// Options.File, which its owner may then close; what the calls did up to
// their end, the aborted answer included, is in it.
func (s *Session) Close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	for s.calls > 0 {
		s.idle.Wait()
	}
}

// begin counts a Prompt or Compact call until the func it returns is
// called, or refuses it after Close.
func (s *Session) begin() (end func(), err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, ErrClosed
	}
	s.calls++
	return func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.calls--; s.calls == 0 {
			s.idle.Broadcast()
		}
	}, nil
}

// Compaction events tell front ends that the context is being compacted
// (Reason "threshold", "overflow" or "manual") and how it went.
type (
	CompactionStart struct {
		Reason string `json:"reason"`
	}
	CompactionEnd struct {
		Reason       string `json:"reason"`
		TokensBefore int    `json:"tokensBefore"`
		TokensAfter  int    `json:"tokensAfter"`
		Error        string `json:"error,omitempty"`
	}
	// UsageUpdate follows each model call: its usage, the run's and the
	// session's totals, and how full the context is.
	UsageUpdate struct {
		Call          loop.Usage `json:"call"`
		Run           Totals     `json:"run"`
		Session       Totals     `json:"session"`
		ContextTokens int        `json:"contextTokens"`
		ContextWindow int        `json:"contextWindow"`
	}
)

func (CompactionStart) EventType() string { return "compaction_start" }
func (CompactionEnd) EventType() string   { return "compaction_end" }
func (UsageUpdate) EventType() string     { return "usage" }

// Messages is the current context.
func (s *Session) Messages() []loop.Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.msgs)
}

// Usage is the session's total usage (PriorUsage and this process's).
func (s *Session) Usage() Totals {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.usage
}

// ContextTokens is the context's size as the model will see it.
func (s *Session) ContextTokens() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return contextTokens(s.msgs, s.fresh)
}

// Steer queues messages for the running run, delivered after its current
// tool batch (before the next model turn).
func (s *Session) Steer(m ...loop.Message) { s.steer.Push(m...) }

// FollowUp queues messages delivered when the run would otherwise end.
func (s *Session) FollowUp(m ...loop.Message) { s.followUp.Push(m...) }

// SetTools replaces the tools and the system prompt for the next run (not
// during one): another default host, say.
func (s *Session) SetTools(tools []loop.Tool, prompt func(active []loop.Tool) string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.opts.Config.Tools, s.opts.Config.SystemPrompt = tools, prompt
}

// SetModel switches the model for the next run (not during one); a zero
// info.Window is DefaultWindow.
func (s *Session) SetModel(m loop.Model, info ModelInfo) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.opts.Config.Model = m
	s.opts.Model = info.withDefaults()
}

// withDefaults is info with DefaultWindow when it has no window: without
// one, every conversation would be over the compaction threshold.
func (info ModelInfo) withDefaults() ModelInfo {
	if info.Window <= 0 {
		info.Window = DefaultWindow
	}
	return info
}

// Model is what the session knows of its model (its window as learnt from
// a context-length error, if smaller than the table's).
func (s *Session) Model() ModelInfo {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.opts.Model
}

// CompactionError is a compaction's failure; CompactionEnd.Error has
// carried its text to the front end already.
type CompactionError struct{ Err error }

func (e *CompactionError) Error() string { return e.Err.Error() }
func (e *CompactionError) Unwrap() error { return e.Err }

// Shown says whether err's text has reached the front end already in
// the session's events: a model call's failure (the assistant message's
// ErrorMessage, loop.ModelError) or a compaction's (CompactionEnd.Error,
// CompactionError). A front end that shows the events does not print
// such an error a second time.
func Shown(err error) bool {
	var model *loop.ModelError
	var compaction *CompactionError
	return errors.As(err, &model) || errors.As(err, &compaction)
}

// ErrOverflow ends a run whose context still did not fit after compacting.
var ErrOverflow = errors.New("the conversation does not fit the model's context window even after compacting it")

// Prompt runs the agent on prompts (none: continue from the context) and
// returns the run's usage. The error is the loop's (ctx's, the turn
// limit, a model failure) or ErrOverflow.
func (s *Session) Prompt(ctx context.Context, prompts ...loop.Message) (Totals, error) {
	var run Totals
	end, err := s.begin()
	if err != nil {
		return run, err
	}
	defer end()
	s.mu.Lock()
	cfg := s.opts.Config
	s.mu.Unlock()
	if cfg.Model == nil {
		return run, errors.New("no model")
	}
	cfg.Steering, cfg.FollowUp = s.steer.Drain, s.followUp.Drain
	cfg.BeforeTurn = func(ctx context.Context, _ []loop.Message) ([]loop.Message, error) {
		s.mu.Lock()
		due := !s.opts.Compaction.Off && contextTokens(s.msgs, s.fresh) > s.opts.Compaction.threshold(s.opts.Model.Window)
		s.mu.Unlock()
		if due {
			// A compaction that fails leaves the context as it was: the
			// turn is tried anyway (the provider may still take it).
			s.compact(ctx, "threshold", "", &run)
		}
		return s.Messages(), nil
	}
	emit := func(e loop.Event) {
		if end, ok := e.(loop.MessageEnd); ok {
			s.record(end.Message, &run)
		}
		s.opts.Emit(e)
	}
	added, err := loop.Run(ctx, cfg, s.Messages(), prompts, emit)
	last := loop.LastAssistant(added)
	if err == nil || ctx.Err() != nil || !IsContextOverflow(last, s.opts.Model.Window) {
		return run, err
	}
	if s.opts.Compaction.Off {
		return run, fmt.Errorf("%w: %v (automatic compaction is off: compact, or start a new session)", ErrOverflow, err)
	}
	// The provider refused the context: the failed answer leaves it (the
	// file keeps it), the rest is compacted, and the turn runs again.
	// The window is smaller than the session took it to be (the model
	// may be one nobody described): it is what the refusal states, or,
	// when it states none, at most what was sent. Compactions from now
	// on leave room accordingly.
	s.mu.Lock()
	if n := len(s.msgs); n > 0 && s.msgs[n-1] == last {
		s.msgs, s.ids = s.msgs[:n-1], s.ids[:n-1]
		s.fresh = min(s.fresh, n-1)
	}
	window := statedWindow(last.ErrorMessage)
	if window == 0 {
		window = contextTokens(s.msgs, s.fresh)
	}
	if window < s.opts.Model.Window {
		s.opts.Model.Window = max(window, 1024)
	}
	s.mu.Unlock()
	if cerr := s.compact(ctx, "overflow", "", &run); cerr != nil {
		return run, fmt.Errorf("%w: %v; compacting failed: %v", ErrOverflow, err, cerr)
	}
	_, err = loop.Run(ctx, cfg, s.Messages(), nil, emit)
	if err != nil && ctx.Err() == nil && IsContextOverflow(loop.LastAssistant(s.Messages()), s.opts.Model.Window) {
		return run, fmt.Errorf("%w (%v): start a new session, or compact with a focus on what matters now, or use a model with a larger window", ErrOverflow, err)
	}
	return run, err
}

// record adds a finished message to the context and the file, and counts
// its usage.
func (s *Session) record(m loop.Message, run *Totals) {
	id := ""
	if s.opts.File != nil {
		var err error
		if id, err = s.opts.File.Append(m); err != nil {
			s.mu.Lock()
			first := s.saveErr == nil
			s.saveErr = err
			s.mu.Unlock()
			if first {
				s.opts.SaveError(err)
			}
		}
	}
	s.mu.Lock()
	s.msgs = append(s.msgs, m)
	s.ids = append(s.ids, id)
	s.mu.Unlock()
	if a, ok := m.(*loop.AssistantMessage); ok && a.Usage != nil {
		s.count(a.Usage, run)
	}
}

// count adds one model call's usage and tells the front end.
func (s *Session) count(u *loop.Usage, run *Totals) {
	price := s.opts.Model.Price
	run.Add(u, price)
	s.mu.Lock()
	s.usage.Add(u, price)
	ev := UsageUpdate{Call: *u, Run: *run, Session: s.usage, ContextTokens: contextTokens(s.msgs, s.fresh), ContextWindow: s.opts.Model.Window}
	s.mu.Unlock()
	s.opts.Emit(ev)
}

// Compact compacts the context now, with an optional focus for the
// summary.
func (s *Session) Compact(ctx context.Context, focus string) error {
	end, err := s.begin()
	if err != nil {
		return err
	}
	defer end()
	var run Totals
	return s.compact(ctx, "manual", focus, &run)
}

// compact summarizes the older part of the context and replaces it.
func (s *Session) compact(ctx context.Context, reason, focus string, run *Totals) error {
	s.opts.Emit(CompactionStart{Reason: reason})
	s.mu.Lock()
	msgs, ids, previous := slices.Clone(s.msgs), slices.Clone(s.ids), s.summary
	before := contextTokens(s.msgs, s.fresh)
	window := s.opts.Model.Window
	s.mu.Unlock()
	fail := func(err error) error {
		s.opts.Emit(CompactionEnd{Reason: reason, TokensBefore: before, TokensAfter: before, Error: err.Error()})
		return &CompactionError{Err: err}
	}
	from := 0
	if previous != "" && len(msgs) > 0 && len(ids) > 0 && s.isSummary(msgs[0]) {
		from = 1
	}
	keep := s.opts.Compaction.keep(window)
	if reason == "manual" {
		// Asked for: something is summarized even in a short
		// conversation (at most half of it is kept).
		keep = min(keep, before/2)
	}
	cut := cutPoint(msgs, from, keep)
	if cut <= from {
		return fail(ErrNothingToCompact)
	}
	s.mu.Lock()
	model := s.opts.Config.Model
	s.mu.Unlock()
	if model == nil {
		return fail(errors.New("no model to summarize with"))
	}
	summary, u, err := summarize(ctx, model, previous, msgs[from:cut], focus, s.opts.DefaultHost)
	if u != nil {
		s.count(u, run)
	}
	if err != nil {
		return fail(err)
	}
	c := session.Compaction{Summary: summary, FirstKeptID: ids[cut], TokensBefore: before}
	var summaryMsg *loop.UserMessage
	entryID := ""
	if s.opts.File != nil {
		id, at, err := s.opts.File.AppendCompaction(c)
		if err != nil {
			return fail(fmt.Errorf("saving the compaction: %w", err))
		}
		entryID, summaryMsg = id, session.SummaryMessage(summary, at)
	} else {
		summaryMsg = session.SummaryMessage(summary, s.now())
	}
	s.mu.Lock()
	// Messages that arrived meanwhile (none during a run's BeforeTurn)
	// stay after the kept ones.
	s.msgs = append([]loop.Message{summaryMsg}, s.msgs[cut:]...)
	s.ids = append([]string{entryID}, s.ids[cut:]...)
	s.summary = summary
	s.fresh = len(s.msgs)
	after := contextTokens(s.msgs, s.fresh)
	s.mu.Unlock()
	s.opts.Emit(CompactionEnd{Reason: reason, TokensBefore: before, TokensAfter: after})
	return nil
}

// isSummary says whether m is the summary message the context starts with.
func (s *Session) isSummary(m loop.Message) bool {
	u, ok := m.(*loop.UserMessage)
	return ok && s.summary != "" && u.Content.Text() == session.SummaryMessage(s.summary, s.now()).Content.Text()
}

func (s *Session) now() time.Time {
	if s.opts.Config.Now != nil {
		return s.opts.Config.Now()
	}
	return time.Now()
}
