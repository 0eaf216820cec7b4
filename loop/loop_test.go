package loop_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pi-remote/pi-remote/loop"
	"github.com/pi-remote/pi-remote/loop/looptest"
)

var update = flag.Bool("update", false, "rewrite golden files")

// recorder collects events; safe for the loop's serialized emit.
type recorder struct {
	mu     sync.Mutex
	events []loop.Event
}

func (r *recorder) emit(e loop.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, e)
}

func (r *recorder) types() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, e := range r.events {
		out = append(out, e.EventType())
	}
	return out
}

func (r *recorder) of(typ string) []loop.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []loop.Event
	for _, e := range r.events {
		if e.EventType() == typ {
			out = append(out, e)
		}
	}
	return out
}

var fixedClock = func() time.Time { return time.UnixMilli(1_700_000_000_000) }

// echoTool returns its "text" argument.
func echoTool() loop.Tool {
	return loop.Tool{
		Name:        "echo",
		Description: "Echo text.",
		Parameters:  json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}`),
		Execute: func(ctx context.Context, id string, args json.RawMessage, onUpdate func(loop.Result)) (loop.Result, error) {
			var in struct{ Text string }
			if err := json.Unmarshal(args, &in); err != nil {
				return loop.Result{}, err
			}
			onUpdate(loop.TextResult("working on " + in.Text))
			return loop.Result{Content: loop.ContentList{&loop.Text{Text: in.Text}}, Details: map[string]string{"id": id}}, nil
		},
	}
}

func TestGoldenTranscript(t *testing.T) {
	model := looptest.New(
		[]loop.StreamEvent{
			&loop.StreamStart{Model: "scripted"},
			&loop.ThinkingDelta{Index: 0, Delta: "Let me "},
			&loop.ThinkingDelta{Index: 0, Delta: "echo.", Signature: "sig"},
			&loop.TextDelta{Index: 1, Delta: "Echoing"},
			&loop.ToolCallDelta{Index: 2, ID: "c1", Name: "echo", ArgumentsDelta: `{"te`},
			&loop.ToolCallDelta{Index: 2, ArgumentsDelta: `xt":"a"}`},
			&loop.StreamDone{StopReason: loop.StopToolUse, Usage: &loop.Usage{Input: 3, Output: 4}},
		},
		looptest.Text("All done."),
	)
	rec := &recorder{}
	cfg := loop.Config{Model: model, Tools: []loop.Tool{echoTool()}, Now: fixedClock, ToolExecution: loop.Sequential}
	msgs, err := loop.Run(t.Context(), cfg, nil, []loop.Message{&loop.UserMessage{Content: loop.ContentList{&loop.Text{Text: "echo a"}}, Timestamp: 1}}, rec.emit)
	require.NoError(t, err)
	require.Len(t, msgs, 4) // user, assistant, tool result, assistant

	var buf bytes.Buffer
	for _, e := range rec.events {
		b, err := loop.MarshalEvent(e)
		require.NoError(t, err)
		buf.Write(b)
		buf.WriteByte('\n')
	}
	golden(t, "transcript.jsonl", buf.Bytes())
}

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	p := filepath.Join("testdata", name)
	if *update {
		require.NoError(t, os.WriteFile(p, got, 0o644))
	}
	want, err := os.ReadFile(p)
	require.NoError(t, err, "run with -update to create %s", p)
	assert.Equal(t, string(want), string(got))
}

// gate is a tool whose executions block until released, recording
// concurrency.
type gate struct {
	mu      sync.Mutex
	running int
	maxSeen int
	order   []string
	release map[string]chan struct{}
}

func newGate(ids ...string) *gate {
	g := &gate{release: map[string]chan struct{}{}}
	for _, id := range ids {
		g.release[id] = make(chan struct{})
	}
	return g
}

func (g *gate) tool(name string, mode loop.ExecutionMode) loop.Tool {
	return loop.Tool{
		Name:          name,
		Parameters:    json.RawMessage(`{"type":"object"}`),
		ExecutionMode: mode,
		Execute: func(ctx context.Context, id string, _ json.RawMessage, _ func(loop.Result)) (loop.Result, error) {
			g.mu.Lock()
			g.running++
			g.maxSeen = max(g.maxSeen, g.running)
			ch := g.release[id]
			g.mu.Unlock()
			if ch != nil {
				select {
				case <-ch:
				case <-ctx.Done():
				}
			}
			g.mu.Lock()
			g.running--
			g.order = append(g.order, id)
			g.mu.Unlock()
			return loop.TextResult("done " + id), nil
		},
	}
}

func calls(name string, ids ...string) []looptest.Call {
	var out []looptest.Call
	for _, id := range ids {
		out = append(out, looptest.Call{ID: id, Name: name, Args: map[string]any{}})
	}
	return out
}

func TestParallelBatchOrdering(t *testing.T) {
	g := newGate("a", "b", "c")
	model := looptest.New(looptest.ToolCalls(calls("gate", "a", "b", "c")...))
	rec := &recorder{}
	done := make(chan struct{})
	var msgs []loop.Message
	var runErr error
	go func() {
		defer close(done)
		msgs, runErr = loop.Run(t.Context(), loop.Config{Model: model, Tools: []loop.Tool{g.tool("gate", "")}}, nil, []loop.Message{loop.NewUserText("go")}, rec.emit)
	}()
	require.Eventually(t, func() bool {
		g.mu.Lock()
		defer g.mu.Unlock()
		return g.running == 3
	}, 5*time.Second, time.Millisecond, "all three run at once")
	// Finish c, then a, then b: completion order differs from call order.
	// Each is released once the previous one's end event is out (its
	// Execute returning is not enough: the event follows on its goroutine).
	for _, id := range []string{"c", "a", "b"} {
		close(g.release[id])
		require.Eventually(t, func() bool {
			for _, e := range rec.of("tool_execution_end") {
				if e.(loop.ToolExecutionEnd).ToolCallID == id {
					return true
				}
			}
			return false
		}, 5*time.Second, time.Millisecond)
	}
	<-done
	require.NoError(t, runErr)

	var starts, ends []string
	for _, e := range rec.of("tool_execution_start") {
		starts = append(starts, e.(loop.ToolExecutionStart).ToolCallID)
	}
	for _, e := range rec.of("tool_execution_end") {
		ends = append(ends, e.(loop.ToolExecutionEnd).ToolCallID)
	}
	assert.Equal(t, []string{"a", "b", "c"}, starts, "starts in call order")
	assert.Equal(t, []string{"c", "a", "b"}, ends, "ends in completion order")
	var resultIDs []string
	for _, m := range msgs {
		if tr, ok := m.(*loop.ToolResultMessage); ok {
			resultIDs = append(resultIDs, tr.ToolCallID)
		}
	}
	assert.Equal(t, []string{"a", "b", "c"}, resultIDs, "result messages in call order")
	assert.Equal(t, 3, g.maxSeen, "all three ran at once")
}

func TestSequentialBatches(t *testing.T) {
	for _, tc := range []struct {
		name     string
		cfgMode  loop.ExecutionMode
		toolMode loop.ExecutionMode
	}{
		{"config sequential", loop.Sequential, ""},
		{"one sequential tool", "", loop.Sequential},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := newGate()
			seq := newGate()
			model := looptest.New(looptest.ToolCalls(append(calls("par", "a", "b"), calls("seq", "c")...)...))
			_, err := loop.Run(t.Context(), loop.Config{
				Model:         model,
				ToolExecution: tc.cfgMode,
				Tools:         []loop.Tool{g.tool("par", ""), seq.tool("seq", tc.toolMode)},
			}, nil, []loop.Message{loop.NewUserText("go")}, nil)
			require.NoError(t, err)
			assert.Equal(t, 1, g.maxSeen)
			assert.Equal(t, []string{"a", "b"}, g.order)
		})
	}
}

func TestBoundedParallelism(t *testing.T) {
	var running, maxSeen atomic.Int32
	tool := loop.Tool{
		Name:       "slow",
		Parameters: json.RawMessage(`{"type":"object"}`),
		Execute: func(ctx context.Context, id string, _ json.RawMessage, _ func(loop.Result)) (loop.Result, error) {
			n := running.Add(1)
			for {
				m := maxSeen.Load()
				if n <= m || maxSeen.CompareAndSwap(m, n) {
					break
				}
			}
			time.Sleep(20 * time.Millisecond) // hold the slot so overlap is observable
			running.Add(-1)
			return loop.TextResult(id), nil
		},
	}
	model := looptest.New(looptest.ToolCalls(calls("slow", "1", "2", "3", "4", "5", "6")...))
	msgs, err := loop.Run(t.Context(), loop.Config{Model: model, Tools: []loop.Tool{tool}, MaxParallel: 2}, nil, []loop.Message{loop.NewUserText("go")}, nil)
	require.NoError(t, err)
	assert.LessOrEqual(t, maxSeen.Load(), int32(2))
	assert.Len(t, msgs, 1+1+6+1)
}

func resultOf(t *testing.T, msgs []loop.Message, id string) *loop.ToolResultMessage {
	t.Helper()
	for _, m := range msgs {
		if tr, ok := m.(*loop.ToolResultMessage); ok && tr.ToolCallID == id {
			return tr
		}
	}
	t.Fatalf("no result for %s", id)
	return nil
}

func textOf(m *loop.ToolResultMessage) string { return m.Content.Text() }

func TestFailuresAreData(t *testing.T) {
	panicky := loop.Tool{Name: "boom", Parameters: json.RawMessage(`{"type":"object"}`),
		Execute: func(context.Context, string, json.RawMessage, func(loop.Result)) (loop.Result, error) {
			panic("kaboom")
		}}
	failing := loop.Tool{Name: "fail", Parameters: json.RawMessage(`{"type":"object"}`),
		Execute: func(context.Context, string, json.RawMessage, func(loop.Result)) (loop.Result, error) {
			return loop.Result{}, errors.New("disk on fire")
		}}
	strict := echoTool()
	strict.Validate = func(args json.RawMessage) (json.RawMessage, error) {
		var m map[string]any
		if err := json.Unmarshal(args, &m); err != nil {
			return nil, err
		}
		if _, ok := m["text"].(string); !ok {
			return nil, errors.New(`field "text": want string`)
		}
		return args, nil
	}
	model := looptest.New(
		looptest.ToolCalls(
			looptest.Call{ID: "unknown", Name: "nope", Args: map[string]any{}},
			looptest.Call{ID: "badjson", Name: "echo", Args: `{"text": "unterminated`},
			looptest.Call{ID: "wrongtype", Name: "echo", Args: map[string]any{"text": 5}},
			looptest.Call{ID: "panic", Name: "boom", Args: map[string]any{}},
			looptest.Call{ID: "err", Name: "fail", Args: map[string]any{}},
			looptest.Call{ID: "array", Name: "echo", Args: `[1,2]`},
			looptest.Call{ID: "double", Name: "echo", Args: `"{\"text\":\"twice\"}"`},
		),
		looptest.Text("recovered"),
	)
	msgs, err := loop.Run(t.Context(), loop.Config{Model: model, Tools: []loop.Tool{strict, panicky, failing}}, nil, []loop.Message{loop.NewUserText("go")}, nil)
	require.NoError(t, err, "the loop goes on after tool failures")
	for id, want := range map[string]string{
		"unknown":   `Tool "nope" not found`,
		"badjson":   "not valid JSON",
		"wrongtype": `field "text"`,
		"panic":     "kaboom",
		"err":       "disk on fire",
		"array":     "must be a JSON object",
	} {
		r := resultOf(t, msgs, id)
		assert.True(t, r.IsError, id)
		assert.Contains(t, textOf(r), want, id)
	}
	double := resultOf(t, msgs, "double")
	assert.False(t, double.IsError)
	assert.Equal(t, "twice", textOf(double), "double-encoded arguments are decoded")
	last := msgs[len(msgs)-1].(*loop.AssistantMessage)
	assert.Equal(t, "recovered", last.Text())
}

func TestOversizedArguments(t *testing.T) {
	big := fmt.Sprintf(`{"text":%q}`, string(bytes.Repeat([]byte("x"), 2000)))
	msg := loop.ExecuteTool(t.Context(), loop.Config{Tools: []loop.Tool{echoTool()}, MaxArgumentBytes: 1000},
		&loop.ToolCall{ID: "1", Name: "echo", Arguments: json.RawMessage(big)}, nil)
	assert.True(t, msg.IsError)
	assert.Contains(t, textOf(msg), "more than the limit")
}

func TestHooks(t *testing.T) {
	var executed []string
	var mu sync.Mutex
	tool := echoTool()
	inner := tool.Execute
	tool.Execute = func(ctx context.Context, id string, args json.RawMessage, u func(loop.Result)) (loop.Result, error) {
		mu.Lock()
		executed = append(executed, id)
		mu.Unlock()
		return inner(ctx, id, args, u)
	}
	model := looptest.New(looptest.ToolCalls(
		looptest.Call{ID: "blocked", Name: "echo", Args: map[string]any{"text": "secret"}},
		looptest.Call{ID: "rewritten", Name: "echo", Args: map[string]any{"text": "plain"}},
	))
	yes := true
	msgs, err := loop.Run(t.Context(), loop.Config{
		Model: model,
		Tools: []loop.Tool{tool},
		BeforeToolCall: func(ctx context.Context, c loop.BeforeToolCallContext) (*loop.BeforeToolCallResult, error) {
			if c.Call.ID == "blocked" {
				return &loop.BeforeToolCallResult{Block: true, Reason: "policy forbids secrets"}, nil
			}
			assert.NotNil(t, c.Assistant)
			return nil, nil
		},
		AfterToolCall: func(ctx context.Context, c loop.AfterToolCallContext) (*loop.AfterToolCallResult, error) {
			if c.Call.ID != "rewritten" {
				return nil, nil
			}
			return &loop.AfterToolCallResult{Content: loop.ContentList{&loop.Text{Text: "replaced"}}, Details: "audited", IsError: &yes}, nil
		},
	}, nil, []loop.Message{loop.NewUserText("go")}, nil)
	require.NoError(t, err)
	assert.Equal(t, []string{"rewritten"}, executed, "blocked call never executes")
	b := resultOf(t, msgs, "blocked")
	assert.True(t, b.IsError)
	assert.Equal(t, "policy forbids secrets", textOf(b))
	r := resultOf(t, msgs, "rewritten")
	assert.True(t, r.IsError)
	assert.Equal(t, "replaced", textOf(r))
	assert.Equal(t, "audited", r.Details)
}

func terminator(terminate bool) loop.Tool {
	return loop.Tool{Name: fmt.Sprintf("t%v", terminate), Parameters: json.RawMessage(`{"type":"object"}`),
		Execute: func(context.Context, string, json.RawMessage, func(loop.Result)) (loop.Result, error) {
			return loop.Result{Content: loop.ContentList{&loop.Text{Text: "ok"}}, Terminate: terminate}, nil
		}}
}

func TestTerminateRule(t *testing.T) {
	t.Run("every result terminates", func(t *testing.T) {
		model := looptest.New(looptest.ToolCalls(calls("ttrue", "1", "2")...), looptest.Text("unreached"))
		_, err := loop.Run(t.Context(), loop.Config{Model: model, Tools: []loop.Tool{terminator(true)}}, nil, []loop.Message{loop.NewUserText("go")}, nil)
		require.NoError(t, err)
		assert.Len(t, model.Requests(), 1, "no second model call")
	})
	t.Run("one result does not terminate", func(t *testing.T) {
		model := looptest.New(looptest.ToolCalls(append(calls("ttrue", "1"), calls("tfalse", "2")...)...), looptest.Text("end"))
		_, err := loop.Run(t.Context(), loop.Config{Model: model, Tools: []loop.Tool{terminator(true), terminator(false)}}, nil, []loop.Message{loop.NewUserText("go")}, nil)
		require.NoError(t, err)
		assert.Len(t, model.Requests(), 2)
	})
}

func TestLengthStopDoesNotRunTools(t *testing.T) {
	g := newGate()
	cut := looptest.ToolCalls(calls("gate", "x")...)
	cut[len(cut)-1] = &loop.StreamDone{StopReason: loop.StopLength}
	model := looptest.New(cut, looptest.Text("retrying later"))
	msgs, err := loop.Run(t.Context(), loop.Config{Model: model, Tools: []loop.Tool{g.tool("gate", "")}}, nil, []loop.Message{loop.NewUserText("go")}, nil)
	require.NoError(t, err)
	assert.Empty(t, g.order, "the cut-off call never ran")
	r := resultOf(t, msgs, "x")
	assert.True(t, r.IsError)
	assert.Contains(t, textOf(r), "output token limit")
}

func TestTurnLimit(t *testing.T) {
	var responses [][]loop.StreamEvent
	for i := range 10 {
		responses = append(responses, looptest.ToolCalls(looptest.Call{ID: fmt.Sprint(i), Name: "echo", Args: map[string]string{"text": "again"}}))
	}
	model := looptest.New(responses...)
	_, err := loop.Run(t.Context(), loop.Config{Model: model, Tools: []loop.Tool{echoTool()}, MaxTurns: 3}, nil, []loop.Message{loop.NewUserText("go")}, nil)
	require.ErrorIs(t, err, loop.ErrTurnLimit)
	assert.Len(t, model.Requests(), 3)
}

func TestAbort(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	started := make(chan struct{})
	tool := loop.Tool{Name: "wait", Parameters: json.RawMessage(`{"type":"object"}`),
		Execute: func(ctx context.Context, _ string, _ json.RawMessage, _ func(loop.Result)) (loop.Result, error) {
			close(started)
			<-ctx.Done()
			return loop.ErrorResult("aborted: " + ctx.Err().Error()), nil
		}}
	model := looptest.New(looptest.ToolCalls(calls("wait", "w")...), looptest.Text("unreached"))
	go func() {
		<-started
		cancel()
	}()
	msgs, err := loop.Run(ctx, loop.Config{Model: model, Tools: []loop.Tool{tool}}, nil, []loop.Message{loop.NewUserText("go")}, nil)
	require.ErrorIs(t, err, context.Canceled)
	assert.True(t, resultOf(t, msgs, "w").IsError)
	assert.Len(t, model.Requests(), 1)
}

func TestModelError(t *testing.T) {
	model := looptest.New([]loop.StreamEvent{&loop.StreamStart{}, &loop.TextDelta{Delta: "par"}, &loop.StreamError{StopReason: loop.StopError, Message: "overloaded"}})
	msgs, err := loop.Run(t.Context(), loop.Config{Model: model}, nil, []loop.Message{loop.NewUserText("go")}, nil)
	require.Error(t, err)
	am := msgs[len(msgs)-1].(*loop.AssistantMessage)
	assert.Equal(t, loop.StopError, am.StopReason)
	assert.Equal(t, "overloaded", am.ErrorMessage)
	assert.Equal(t, "par", am.Text())
}

func TestSteeringAndFollowUp(t *testing.T) {
	var steer, follow loop.MessageQueue
	model := looptest.New(looptest.ToolCalls(looptest.Call{ID: "1", Name: "echo", Args: map[string]string{"text": "x"}}), looptest.Text("first stop"), looptest.Text("second stop"))
	tool := echoTool()
	inner := tool.Execute
	tool.Execute = func(ctx context.Context, id string, args json.RawMessage, u func(loop.Result)) (loop.Result, error) {
		steer.Push(loop.NewUserText("steer: use tabs"))
		follow.Push(loop.NewUserText("follow: now the docs"))
		return inner(ctx, id, args, u)
	}
	msgs, err := loop.Run(t.Context(), loop.Config{Model: model, Tools: []loop.Tool{tool}, Steering: steer.Drain, FollowUp: follow.Drain}, nil, []loop.Message{loop.NewUserText("go")}, nil)
	require.NoError(t, err)
	reqs := model.Requests()
	require.Len(t, reqs, 3)
	// Second request: user, assistant, tool result, steering message.
	second := reqs[1].Messages
	require.Len(t, second, 4)
	assert.Equal(t, "toolResult", second[2].Role())
	assert.Equal(t, "steer: use tabs", second[3].(*loop.UserMessage).Content[0].(*loop.Text).Text)
	third := reqs[2].Messages
	assert.Equal(t, "follow: now the docs", third[len(third)-1].(*loop.UserMessage).Content[0].(*loop.Text).Text)
	assert.Equal(t, "second stop", msgs[len(msgs)-1].(*loop.AssistantMessage).Text())
}

func TestLateUpdatesDropped(t *testing.T) {
	var captured func(loop.Result)
	tool := loop.Tool{Name: "leaky", Parameters: json.RawMessage(`{"type":"object"}`),
		Execute: func(_ context.Context, _ string, _ json.RawMessage, u func(loop.Result)) (loop.Result, error) {
			u(loop.TextResult("during"))
			captured = u
			return loop.TextResult("done"), nil
		}}
	rec := &recorder{}
	loop.ExecuteTool(t.Context(), loop.Config{Tools: []loop.Tool{tool}}, &loop.ToolCall{ID: "1", Name: "leaky", Arguments: json.RawMessage(`{}`)}, rec.emit)
	captured(loop.TextResult("after return"))
	assert.Equal(t, []string{"tool_execution_start", "tool_execution_update", "tool_execution_end"}, rec.types())
}

func TestAddedToolNames(t *testing.T) {
	opener := loop.Tool{Name: "open", Parameters: json.RawMessage(`{"type":"object"}`),
		Execute: func(context.Context, string, json.RawMessage, func(loop.Result)) (loop.Result, error) {
			return loop.Result{Content: loop.ContentList{&loop.Text{Text: "echo unlocked"}}, AddedToolNames: []string{"echo"}}, nil
		}}
	model := looptest.New(looptest.ToolCalls(calls("open", "1")...), looptest.ToolCalls(looptest.Call{ID: "2", Name: "echo", Args: map[string]string{"text": "hi"}}), looptest.Text("end"))
	var prompts []string
	msgs, err := loop.Run(t.Context(), loop.Config{
		Model:  model,
		Tools:  []loop.Tool{opener, echoTool()},
		Active: []string{"open"},
		SystemPrompt: func(active []loop.Tool) string {
			var names []string
			for _, a := range active {
				names = append(names, a.Name)
			}
			p := fmt.Sprint(names)
			prompts = append(prompts, p)
			return p
		},
	}, nil, []loop.Message{loop.NewUserText("go")}, nil)
	require.NoError(t, err)
	assert.Equal(t, []string{"[open]", "[open echo]", "[open echo]"}, prompts)
	assert.Equal(t, []string{"echo"}, resultOf(t, msgs, "1").AddedToolNames)
	assert.False(t, resultOf(t, msgs, "2").IsError)
	assert.Len(t, model.Requests()[0].Tools, 1)
}

func TestMessageJSONRoundTrip(t *testing.T) {
	msgs := []loop.Message{
		&loop.UserMessage{Content: loop.ContentList{&loop.Text{Text: "hi"}, &loop.Image{Data: "AAAA", MimeType: "image/png"}}, Timestamp: 1},
		&loop.AssistantMessage{Content: loop.ContentList{&loop.Thinking{Thinking: "hmm", Signature: "s"}, &loop.ToolCall{ID: "c", Name: "read", Arguments: json.RawMessage(`{"path":"a"}`)}}, StopReason: loop.StopToolUse, Usage: &loop.Usage{Input: 1, Output: 2}, Timestamp: 2},
		&loop.ToolResultMessage{ToolCallID: "c", ToolName: "read", Content: loop.ContentList{&loop.Text{Text: "x"}}, AddedToolNames: []string{"ls"}, IsError: true, Timestamp: 3},
	}
	for _, m := range msgs {
		b, err := json.Marshal(m)
		require.NoError(t, err)
		back, err := loop.UnmarshalMessage(b)
		require.NoError(t, err)
		b2, err := json.Marshal(back)
		require.NoError(t, err)
		assert.JSONEq(t, string(b), string(b2))
		assert.Equal(t, m.Role(), back.Role())
	}
	_, err := loop.UnmarshalMessage([]byte(`{"role":"system"}`))
	assert.Error(t, err)
}

// BeforeTurn sees every turn's transcript and may replace it; the
// replacement is what the turn sends and what later turns build on.
func TestBeforeTurnReplacesTheTranscript(t *testing.T) {
	model := looptest.New(
		looptest.ToolCalls(looptest.Call{ID: "c1", Name: "echo", Args: map[string]string{"text": "a"}}),
		looptest.Text("done"),
	)
	var seen [][]string
	roles := func(msgs []loop.Message) []string {
		var out []string
		for _, m := range msgs {
			out = append(out, m.Role())
		}
		return out
	}
	summary := loop.NewUserText("summary of the earlier part")
	cfg := loop.Config{Model: model, Tools: []loop.Tool{echoTool()}, Now: fixedClock,
		BeforeTurn: func(_ context.Context, transcript []loop.Message) ([]loop.Message, error) {
			seen = append(seen, roles(transcript))
			if len(seen) == 2 {
				// Drop everything before the tool call's assistant message.
				return append([]loop.Message{summary}, transcript[2:]...), nil
			}
			return transcript, nil
		}}
	history := []loop.Message{loop.NewUserText("old"), &loop.AssistantMessage{Content: loop.ContentList{&loop.Text{Text: "old answer"}}, StopReason: loop.StopEnd}}
	_, err := loop.Run(t.Context(), cfg, history, []loop.Message{loop.NewUserText("echo a")}, nil)
	require.NoError(t, err)
	assert.Equal(t, [][]string{
		{"user", "assistant", "user"},
		{"user", "assistant", "user", "assistant", "toolResult"},
	}, seen)
	reqs := model.Requests()
	require.Len(t, reqs, 2)
	assert.Equal(t, []string{"user", "user", "assistant", "toolResult"}, roles(reqs[1].Messages))
	assert.Same(t, summary, reqs[1].Messages[0])

	// An error ends the run before the turn.
	model = looptest.New(looptest.Text("never"))
	cfg = loop.Config{Model: model, BeforeTurn: func(context.Context, []loop.Message) ([]loop.Message, error) {
		return nil, errors.New("compaction failed")
	}}
	_, err = loop.Run(t.Context(), cfg, nil, []loop.Message{loop.NewUserText("hi")}, nil)
	require.ErrorContains(t, err, "compaction failed")
	assert.Empty(t, model.Requests())
}

// Admit learns which call it admits (CallIDFrom), for a person asked
// about it; an admission given up with the call reads as an abort, not
// as the context's error.
func TestAdmitKnowsItsCall(t *testing.T) {
	var seen string
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	tool := loop.Tool{
		Name:       "gated",
		Parameters: json.RawMessage(`{"type":"object"}`),
		Admit: func(ctx context.Context, _ json.RawMessage) (any, func(), error) {
			seen = loop.CallIDFrom(ctx)
			cancel()
			<-ctx.Done()
			return nil, nil, ctx.Err()
		},
		Execute: func(context.Context, string, json.RawMessage, func(loop.Result)) (loop.Result, error) {
			t.Error("an aborted admission ran the call")
			return loop.Result{}, nil
		},
	}
	m := loop.ExecuteTool(ctx, loop.Config{Tools: []loop.Tool{tool}}, &loop.ToolCall{ID: "call-9", Name: "gated", Arguments: json.RawMessage(`{}`)}, nil)
	assert.Equal(t, "call-9", seen)
	assert.True(t, m.IsError)
	assert.Equal(t, "Tool call aborted.", textOf(m))
	assert.Equal(t, "", loop.CallIDFrom(t.Context()))
}
