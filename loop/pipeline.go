package loop

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
)

// prepared is a call that passed the prepare stage.
type prepared struct {
	call      *ToolCall
	tool      Tool
	args      json.RawMessage
	admission any
	release   func()
	note      string // BeforeToolCall's, for the result
}

// finalized is a call with its final result.
type finalized struct {
	call   *ToolCall
	result Result
}

// prepare looks the tool up, prepares and validates the arguments, runs
// BeforeToolCall (validating the arguments it gives again) and Admit. A
// failure returns an immediate error result (with BeforeToolCall's note).
func (r *runner) prepare(ctx context.Context, assistant *AssistantMessage, call *ToolCall) (*prepared, *Result) {
	note := ""
	fail := func(format string, a ...any) (*prepared, *Result) {
		res := withNote(ErrorResult(fmt.Sprintf(format, a...)), note)
		return nil, &res
	}
	tool, ok := r.lookup(call.Name)
	if !ok {
		names := []string{}
		for _, t := range r.activeTools() {
			names = append(names, t.Name)
		}
		return fail("Tool %q not found. Available tools: %s.", call.Name, joinNames(names))
	}
	args, err := normalizeArguments(call.Arguments, r.cfg.MaxArgumentBytes)
	if err != nil {
		return fail("Invalid arguments for %s: %v", call.Name, err)
	}
	if tool.PrepareArguments != nil {
		if args, err = tool.PrepareArguments(args); err != nil {
			return fail("Invalid arguments for %s: %v", call.Name, err)
		}
	}
	if tool.Validate != nil {
		if args, err = tool.Validate(args); err != nil {
			return fail("Invalid arguments for %s: %v", call.Name, err)
		}
	}
	if r.cfg.BeforeToolCall != nil {
		res, err := r.cfg.BeforeToolCall(ctx, BeforeToolCallContext{Assistant: assistant, Call: call, Args: args})
		if err != nil {
			return fail("%v", err)
		}
		if ctx.Err() != nil {
			return fail("Tool call aborted.")
		}
		if res != nil {
			note = res.Note
		}
		if res != nil && res.Block {
			if res.Reason == "" {
				return fail("Tool call was blocked.")
			}
			return fail("%s", res.Reason)
		}
		if res != nil && res.Args != nil {
			args = res.Args
			if tool.Validate != nil {
				if args, err = tool.Validate(args); err != nil {
					return fail("Invalid arguments for %s (as rewritten before the call): %v", call.Name, err)
				}
			}
		}
	}
	if ctx.Err() != nil {
		return fail("Tool call aborted.")
	}
	p := &prepared{call: call, tool: tool, args: args, note: note}
	if tool.Admit != nil {
		p.admission, p.release, err = tool.Admit(context.WithValue(ctx, callIDKey{}, call.ID), args)
		if err != nil && ctx.Err() != nil {
			// (An admission that waited, for a person's approval or for
			// its host, and was given up with the call.)
			return fail("Tool call aborted.")
		}
		if err != nil {
			return fail("%s: %v", call.Name, err)
		}
	}
	return p, nil
}

// normalizeArguments checks size and shape. Arguments a model double-encoded
// as a JSON string holding an object are decoded.
func normalizeArguments(raw json.RawMessage, max int) (json.RawMessage, error) {
	if len(raw) > max {
		return nil, fmt.Errorf("arguments are %d bytes, more than the limit of %d", len(raw), max)
	}
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return json.RawMessage("{}"), nil
	}
	if !json.Valid(raw) {
		return nil, fmt.Errorf("arguments are not valid JSON")
	}
	if raw[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err == nil {
			inner := bytes.TrimSpace([]byte(s))
			if len(inner) > 0 && inner[0] == '{' && json.Valid(inner) {
				return inner, nil
			}
			if len(inner) > 0 && inner[0] == '{' {
				return nil, fmt.Errorf("arguments are not valid JSON (cut off or malformed): %.200q", s)
			}
			return nil, fmt.Errorf("arguments must be a JSON object, got a string: %.200q", s)
		}
	}
	if raw[0] != '{' {
		return nil, fmt.Errorf("arguments must be a JSON object")
	}
	return raw, nil
}

func joinNames(names []string) string {
	if len(names) == 0 {
		return "(none)"
	}
	return strings.Join(names, ", ")
}

// execute runs the tool, forwarding updates until it returns and turning a
// panic or Go error into an error result.
func (r *runner) execute(ctx context.Context, p *prepared) (res Result) {
	if p.release != nil {
		defer p.release()
	}
	var mu sync.Mutex
	accepting := true
	onUpdate := func(partial Result) {
		mu.Lock()
		defer mu.Unlock()
		if !accepting {
			return
		}
		r.emit(ToolExecutionUpdate{ToolCallID: p.call.ID, ToolName: p.call.Name, Args: p.call.Arguments, PartialResult: partial})
	}
	defer func() {
		mu.Lock()
		accepting = false
		mu.Unlock()
	}()
	defer func() {
		if v := recover(); v != nil {
			res = ErrorResult(fmt.Sprintf("Tool %s crashed: %v\n%s", p.call.Name, v, firstLines(string(debug.Stack()), 12)))
		}
	}()
	if p.admission != nil {
		ctx = context.WithValue(ctx, admissionKey{}, p.admission)
	}
	res, err := p.tool.Execute(ctx, p.call.ID, p.args, onUpdate)
	if err != nil {
		return ErrorResult(err.Error())
	}
	if res.Content == nil {
		res.Content = ContentList{}
	}
	return res
}

func firstLines(s string, n int) string {
	lines := 0
	for i, c := range s {
		if c == '\n' {
			lines++
			if lines == n {
				return s[:i]
			}
		}
	}
	return s
}

// withNote adds note, when there is one, at the end of res's content.
func withNote(res Result, note string) Result {
	if note == "" {
		return res
	}
	res.Content = append(slices.Clip(res.Content), &Text{Text: note})
	return res
}

// finalize adds BeforeToolCall's note, then gives AfterToolCall the last
// word.
func (r *runner) finalize(ctx context.Context, assistant *AssistantMessage, p *prepared, res Result) Result {
	res = withNote(res, p.note)
	if r.cfg.AfterToolCall == nil {
		return res
	}
	after, err := r.cfg.AfterToolCall(ctx, AfterToolCallContext{Assistant: assistant, Call: p.call, Args: p.args, Result: res})
	if err != nil {
		return ErrorResult(err.Error())
	}
	if after == nil {
		return res
	}
	if after.Content != nil {
		res.Content = after.Content
	}
	if after.Details != nil {
		res.Details = after.Details
	}
	if after.Usage != nil {
		res.Usage = after.Usage
	}
	if after.IsError != nil {
		res.IsError = *after.IsError
	}
	if after.Terminate != nil {
		res.Terminate = *after.Terminate
	}
	return res
}

func (r *runner) emitEnd(f finalized) {
	r.emit(ToolExecutionEnd{ToolCallID: f.call.ID, ToolName: f.call.Name, Result: f.result, IsError: f.result.IsError})
}

func (r *runner) resultMessage(f finalized) *ToolResultMessage {
	content := f.result.Content
	if content == nil {
		content = ContentList{}
	}
	return &ToolResultMessage{
		ToolCallID:     f.call.ID,
		ToolName:       f.call.Name,
		Content:        content,
		Details:        f.result.Details,
		Usage:          f.result.Usage,
		AddedToolNames: f.result.AddedToolNames,
		IsError:        f.result.IsError,
		Timestamp:      r.now(),
	}
}

// executeBatch runs one assistant message's tool calls and returns their
// result messages in call order, and whether the batch terminates the run.
func (r *runner) executeBatch(ctx context.Context, assistant *AssistantMessage, calls []*ToolCall) ([]*ToolResultMessage, bool) {
	sequential := r.cfg.ToolExecution == Sequential
	for _, c := range calls {
		if t, ok := r.lookup(c.Name); ok && t.ExecutionMode == Sequential {
			sequential = true
		}
	}
	results := make([]finalized, len(calls))
	run := func(i int, p *prepared) {
		res := r.execute(ctx, p)
		res = r.finalize(ctx, assistant, p, res)
		results[i] = finalized{call: p.call, result: res}
		r.emitEnd(results[i])
	}

	sem := make(chan struct{}, r.cfg.MaxParallel)
	var wg sync.WaitGroup
	for i, call := range calls {
		r.emit(ToolExecutionStart{ToolCallID: call.ID, ToolName: call.Name, Args: call.Arguments})
		p, immediate := r.prepare(ctx, assistant, call)
		if immediate != nil {
			results[i] = finalized{call: call, result: *immediate}
			r.emitEnd(results[i])
			continue
		}
		if sequential {
			run(i, p)
			continue
		}
		// Slots are taken in call order, so a call only ever waits (in a
		// mutation queue) for calls that already run: no deadlock.
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			run(i, p)
		})
	}
	wg.Wait()

	msgs := make([]*ToolResultMessage, len(results))
	terminate := len(results) > 0
	for i, f := range results {
		msgs[i] = r.resultMessage(f)
		terminate = terminate && f.result.Terminate
	}
	return msgs, terminate
}

// ExecuteTool runs one tool call outside a model turn through the same
// prepare → execute → finalize pipeline, emitting tool_execution events.
// tools.Call wraps it for the front ends (the tool command, the MCP
// server, the terminal's helpers); the rpc server uses StartTool.
func ExecuteTool(ctx context.Context, cfg Config, call *ToolCall, emit func(Event)) *ToolResultMessage {
	return StartTool(ctx, cfg, call, emit)()
}

// StartTool runs a call's prepare stage now — lookup, argument
// preparation, validation, BeforeToolCall and Admit — and returns the
// function that executes and finalizes it. Calls started one after another
// are admitted in that order (a file's mutation queue keeps it) even when
// they then execute concurrently.
func StartTool(ctx context.Context, cfg Config, call *ToolCall, emit func(Event)) func() *ToolResultMessage {
	r := newRunner(cfg, emit)
	r.emit(ToolExecutionStart{ToolCallID: call.ID, ToolName: call.Name, Args: call.Arguments})
	p, immediate := r.prepare(ctx, nil, call)
	return func() *ToolResultMessage {
		var f finalized
		if immediate != nil {
			f = finalized{call: call, result: *immediate}
		} else {
			res := r.execute(ctx, p)
			f = finalized{call: call, result: r.finalize(ctx, nil, p, res)}
		}
		r.emitEnd(f)
		return r.resultMessage(f)
	}
}

// MessageQueue is a concurrency-safe queue of messages, for steering and
// follow-up: Push from any goroutine, and pass Drain as Config.Steering or
// Config.FollowUp.
type MessageQueue struct {
	mu   sync.Mutex
	msgs []Message
}

// Push appends messages.
func (q *MessageQueue) Push(m ...Message) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.msgs = append(q.msgs, m...)
}

// Drain removes and returns every queued message.
func (q *MessageQueue) Drain() []Message {
	q.mu.Lock()
	defer q.mu.Unlock()
	out := slices.Clone(q.msgs)
	q.msgs = nil
	return out
}
