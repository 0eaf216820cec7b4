// Package loop is pi-remote's agent loop: a model turn, then the tool calls
// it asked for (prepare → execute → finalize), then the next turn, with
// every step reported as an event.
//
// The loop knows tools only through the lean Tool type and models only
// through the Model interface. Failures are data: a missing tool, invalid
// arguments, a blocked call, a tool error or panic all become error tool
// results fed back to the model, and the loop goes on.
//
// Batches: prepare runs in call order; execution is parallel (bounded by
// MaxParallel) unless Config.ToolExecution or any tool in the batch says
// Sequential. tool_execution_start events come in call order,
// tool_execution_end in completion order, and tool-result messages are
// appended in call order. A batch stops the run only when every result in it
// asks to terminate. A response cut off by the output-token limit does not
// run its tool calls. A run has a turn limit.
package loop

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"
)

// Config is one run's setup.
type Config struct {
	Model Model
	// SystemPrompt builds the system prompt from the active tools; it is
	// called each turn, so tools activated by AddedToolNames appear.
	SystemPrompt func(active []Tool) string
	// Tools are all available tools; Active names those offered to the
	// model (nil means all). Results' AddedToolNames activate more.
	Tools  []Tool
	Active []string
	// ToolExecution Sequential runs every batch one call at a time.
	ToolExecution ExecutionMode
	// MaxParallel bounds concurrent tool executions (default 8).
	MaxParallel int
	// MaxTurns bounds model turns in one run (default 50).
	MaxTurns int
	// MaxArgumentBytes bounds a tool call's arguments (default 16 MiB).
	MaxArgumentBytes int

	// BeforeToolCall, when set, sees each call after its arguments are
	// prepared and validated, before Admit, in call order. It may block the
	// call (an error result with the reason), replace its arguments (then
	// validated again) and add a note to its result. A Go error blocks the
	// call too, its text the result.
	BeforeToolCall func(ctx context.Context, c BeforeToolCallContext) (*BeforeToolCallResult, error)
	// AfterToolCall, when set, sees each executed call's result (with the
	// note BeforeToolCall added) and may replace parts of it. A Go error
	// becomes the result.
	AfterToolCall func(ctx context.Context, c AfterToolCallContext) (*AfterToolCallResult, error)

	// Steering returns messages to deliver after the current tool batch,
	// before the next model turn. FollowUp returns messages to deliver when
	// the run would otherwise end. MessageQueue provides both.
	Steering func() []Message
	FollowUp func() []Message

	// BeforeTurn, when set, is called before every model turn with the
	// transcript the turn would send (the history, then this run's
	// messages); what it returns is sent instead and is the transcript
	// from then on. Compaction happens here, between the turns of a run.
	// An error ends the run.
	BeforeTurn func(ctx context.Context, transcript []Message) ([]Message, error)

	// Now is the clock for message timestamps (default time.Now).
	Now func() time.Time
}

// BeforeToolCallContext is what BeforeToolCall sees.
type BeforeToolCallContext struct {
	Assistant *AssistantMessage // nil for calls outside a model turn
	Call      *ToolCall
	Args      json.RawMessage // prepared and validated
}

// BeforeToolCallResult lets BeforeToolCall block a call, replace its
// arguments or add a note to its result.
type BeforeToolCallResult struct {
	Block  bool
	Reason string
	// Args, when not nil, are the arguments the call runs with instead:
	// Tool.Validate checks them again (a failure is an error result), and
	// Admit, Execute and AfterToolCall see them. The assistant message and
	// the events keep the model's arguments.
	Args json.RawMessage
	// Note, when not empty, is a text block added at the end of the call's
	// result, whatever the result is (a block's reason, a refusal at Admit,
	// the tool's output), for the model to read.
	Note string
}

// AfterToolCallContext is what AfterToolCall sees.
type AfterToolCallContext struct {
	Assistant *AssistantMessage
	Call      *ToolCall
	Args      json.RawMessage // what the tool ran with (BeforeToolCall's, if it replaced them)
	Result    Result
}

// AfterToolCallResult replaces parts of a result; nil fields keep the
// original.
type AfterToolCallResult struct {
	Content   ContentList
	Details   any
	Usage     *Usage
	IsError   *bool
	Terminate *bool
}

// ErrTurnLimit ends a run that reached Config.MaxTurns.
var ErrTurnLimit = errors.New("turn limit reached")

// ModelError ends a run whose model call failed (the provider refused
// the request, the connection failed, retries ran out). The assistant
// message that ended the run carries the same text in ErrorMessage, so a
// front end that shows the run's messages has shown it already.
type ModelError struct{ Message string }

func (e *ModelError) Error() string { return "model: " + e.Message }

const (
	defaultMaxParallel  = 8
	defaultMaxTurns     = 50
	defaultMaxArgsBytes = 16 << 20
)

type runner struct {
	cfg    Config
	active []string
	mu     sync.Mutex // serializes emit
	emitFn func(Event)
}

func newRunner(cfg Config, emit func(Event)) *runner {
	if cfg.MaxParallel <= 0 {
		cfg.MaxParallel = defaultMaxParallel
	}
	if cfg.MaxTurns <= 0 {
		cfg.MaxTurns = defaultMaxTurns
	}
	if cfg.MaxArgumentBytes <= 0 {
		cfg.MaxArgumentBytes = defaultMaxArgsBytes
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if emit == nil {
		emit = func(Event) {}
	}
	r := &runner{cfg: cfg, emitFn: emit}
	if cfg.Active == nil {
		for _, t := range cfg.Tools {
			r.active = append(r.active, t.Name)
		}
	} else {
		r.active = slices.Clone(cfg.Active)
	}
	return r
}

func (r *runner) emit(e Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.emitFn(e)
}

func (r *runner) now() int64 { return r.cfg.Now().UnixMilli() }

func (r *runner) activeTools() []Tool {
	var out []Tool
	for _, t := range r.cfg.Tools {
		if slices.Contains(r.active, t.Name) {
			out = append(out, t)
		}
	}
	return out
}

func (r *runner) lookup(name string) (Tool, bool) {
	for _, t := range r.activeTools() {
		if t.Name == name {
			return t, true
		}
	}
	return Tool{}, false
}

// Run runs the agent from history plus prompts until the model stops asking
// for tools (and no follow-up is queued), a batch terminates, the turn limit
// is hit, the model fails, or ctx ends. It returns the messages added by
// this run (prompts included). The error is ErrTurnLimit, ctx's error, or
// nil; a model failure is recorded in the last assistant message
// (StopReason StopError) and also returned.
func Run(ctx context.Context, cfg Config, history, prompts []Message, emit func(Event)) ([]Message, error) {
	if cfg.Model == nil {
		return nil, errors.New("loop: no model configured")
	}
	r := newRunner(cfg, emit)
	var added []Message
	transcript := slices.Clone(history)
	push := func(m Message) {
		r.emit(MessageStart{Message: m})
		r.emit(MessageEnd{Message: m})
		added = append(added, m)
		transcript = append(transcript, m)
	}
	end := func(err error) ([]Message, error) {
		r.emit(AgentEnd{Messages: added})
		return added, err
	}

	r.emit(AgentStart{})
	pending := prompts
	turns := 0
	for {
		toolCalls := true
		for toolCalls || len(pending) > 0 {
			if err := ctx.Err(); err != nil {
				return end(err)
			}
			if turns >= r.cfg.MaxTurns {
				return end(fmt.Errorf("%w (%d)", ErrTurnLimit, r.cfg.MaxTurns))
			}
			turns++
			r.emit(TurnStart{})
			for _, m := range pending {
				push(m)
			}
			pending = nil
			if r.cfg.BeforeTurn != nil {
				t, err := r.cfg.BeforeTurn(ctx, slices.Clone(transcript))
				if err != nil {
					return end(err)
				}
				transcript = t
			}

			msg := r.streamAssistant(ctx, transcript)
			added = append(added, msg)
			transcript = append(transcript, msg)
			if msg.StopReason == StopError || msg.StopReason == StopAborted {
				r.emit(TurnEnd{Message: msg, ToolResults: []*ToolResultMessage{}})
				if msg.StopReason == StopAborted && ctx.Err() != nil {
					return end(ctx.Err())
				}
				return end(&ModelError{Message: msg.ErrorMessage})
			}

			calls := msg.ToolCalls()
			toolCalls = len(calls) > 0
			results := []*ToolResultMessage{}
			terminate := false
			if toolCalls {
				if msg.StopReason == StopLength {
					results = r.notRun(calls, "The response was cut off by the output token limit before this tool call was complete, so it was not run. Send it again, smaller (split large writes into several calls).")
				} else {
					results, terminate = r.executeBatch(ctx, msg, calls)
				}
				for _, m := range results {
					push(m)
					for _, name := range m.AddedToolNames {
						if _, ok := r.findTool(name); ok && !slices.Contains(r.active, name) {
							r.active = append(r.active, name)
						}
					}
				}
			}
			r.emit(TurnEnd{Message: msg, ToolResults: results})
			if terminate {
				return end(nil)
			}
			if err := ctx.Err(); err != nil {
				return end(err)
			}
			if r.cfg.Steering != nil {
				pending = append(pending, r.cfg.Steering()...)
			}
		}
		if r.cfg.FollowUp != nil {
			pending = r.cfg.FollowUp()
		}
		if len(pending) == 0 {
			return end(nil)
		}
	}
}

func (r *runner) findTool(name string) (Tool, bool) {
	for _, t := range r.cfg.Tools {
		if t.Name == name {
			return t, true
		}
	}
	return Tool{}, false
}

// streamAssistant runs one model call and assembles its message, emitting
// message_start, message_update per event and message_end.
func (r *runner) streamAssistant(ctx context.Context, transcript []Message) *AssistantMessage {
	active := r.activeTools()
	req := Request{Messages: slices.Clone(transcript)}
	if r.cfg.SystemPrompt != nil {
		req.SystemPrompt = r.cfg.SystemPrompt(active)
	}
	for _, t := range active {
		req.Tools = append(req.Tools, ToolSpec{Name: t.Name, Description: t.Description, Parameters: t.Parameters, Strict: t.Strict})
	}
	a := newAssembler(r.now())
	r.emit(MessageStart{Message: a.snapshot()})
	a.consume(ctx, r.cfg.Model.Stream(ctx, req), func(ev StreamEvent) {
		r.emit(MessageUpdate{Message: a.snapshot(), Delta: ev})
	})
	msg := a.finish()
	if msg.StopReason == StopError && ctx.Err() != nil {
		msg.StopReason = StopAborted
	}
	r.emit(MessageEnd{Message: msg})
	return msg
}

// notRun gives every call an error result without running it.
func (r *runner) notRun(calls []*ToolCall, reason string) []*ToolResultMessage {
	out := make([]*ToolResultMessage, len(calls))
	for i, c := range calls {
		r.emit(ToolExecutionStart{ToolCallID: c.ID, ToolName: c.Name, Args: c.Arguments})
		f := finalized{call: c, result: ErrorResult(reason)}
		r.emitEnd(f)
		out[i] = r.resultMessage(f)
	}
	return out
}
