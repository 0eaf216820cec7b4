package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pi-remote/pi-remote/loop"
	"github.com/pi-remote/pi-remote/session"
)

// fakeModel is a model with a small window: it refuses a request larger
// than limit tokens (estimated as the session does) with refusal, asks
// for the "big" tool turns times, then says done, and answers summary
// requests with a numbered summary. Every request is kept.
type fakeModel struct {
	limit   int
	turns   int
	refusal string
	refuse  int // refuse this many requests whatever their size

	mu        sync.Mutex
	requests  []loop.Request
	summaries []loop.Request
	asked     int
}

func (f *fakeModel) Stream(_ context.Context, req loop.Request) iter.Seq[loop.StreamEvent] {
	f.mu.Lock()
	defer f.mu.Unlock()
	size := len(req.SystemPrompt) / 4
	for _, m := range req.Messages {
		size += estimate(m)
	}
	var evs []loop.StreamEvent
	switch {
	case req.SystemPrompt == summaryInstructions:
		f.summaries = append(f.summaries, req)
		evs = text(fmt.Sprintf("## Goal\nsummary %d", len(f.summaries)), loop.Usage{Input: size, Output: 20})
	case f.refuse > 0 || size > f.limit:
		f.requests = append(f.requests, req)
		if f.refuse > 0 {
			f.refuse--
		}
		evs = []loop.StreamEvent{&loop.StreamError{StopReason: loop.StopError, Message: f.refusal}}
	default:
		f.requests = append(f.requests, req)
		f.asked++
		if f.asked <= f.turns {
			args, _ := json.Marshal(map[string]string{"path": fmt.Sprintf("f%d.txt", f.asked)})
			evs = []loop.StreamEvent{
				&loop.StreamStart{},
				&loop.ToolCallDelta{Index: 0, ID: fmt.Sprintf("call%d", f.asked), Name: "read", ArgumentsDelta: string(args)},
				&loop.StreamDone{StopReason: loop.StopToolUse, Usage: &loop.Usage{Input: size, Output: 10}},
			}
		} else {
			evs = text("done", loop.Usage{Input: size, Output: 5})
		}
	}
	return func(yield func(loop.StreamEvent) bool) {
		for _, e := range evs {
			if !yield(e) {
				return
			}
		}
	}
}

func text(s string, u loop.Usage) []loop.StreamEvent {
	return []loop.StreamEvent{&loop.StreamStart{}, &loop.TextDelta{Delta: s}, &loop.StreamDone{StopReason: loop.StopEnd, Usage: &u}}
}

// bigRead answers every read with 2,000 characters (about 500 tokens).
func bigRead() loop.Tool {
	return loop.Tool{Name: "read", Parameters: json.RawMessage(`{"type":"object"}`),
		Execute: func(_ context.Context, id string, _ json.RawMessage, _ func(loop.Result)) (loop.Result, error) {
			return loop.TextResult(id + " " + strings.Repeat("x", 2000)), nil
		}}
}

func newTestSession(t *testing.T, m *fakeModel, window int, path string) (*Session, *[]loop.Event) {
	t.Helper()
	var file *session.Session
	var c session.Context
	var err error
	if path != "" {
		file, c, err = session.Open(path)
		if err != nil {
			file, err = session.Create(path, session.Header{Host: "local", Cwd: "/"})
			require.NoError(t, err)
		}
		t.Cleanup(func() { file.Close() })
	}
	var events []loop.Event
	s := New(Options{
		Config:      loop.Config{Model: m, Tools: []loop.Tool{bigRead()}, MaxTurns: 100},
		Model:       ModelInfo{Window: window, MaxOutput: 1000},
		File:        file,
		Context:     c,
		DefaultHost: "devbox",
		Emit:        func(e loop.Event) { events = append(events, e) },
		SaveError:   func(err error) { t.Errorf("save: %v", err) },
	})
	return s, &events
}

// requireCallsWithResults checks that every tool result a request sends
// follows the assistant message that made its call.
func requireCallsWithResults(t *testing.T, req loop.Request) {
	t.Helper()
	calls := map[string]bool{}
	for _, m := range req.Messages {
		switch m := m.(type) {
		case *loop.AssistantMessage:
			for _, c := range m.ToolCalls() {
				calls[c.ID] = true
			}
		case *loop.ToolResultMessage:
			require.True(t, calls[m.ToolCallID], "result of %s sent without its call", m.ToolCallID)
		}
	}
}

func TestLongRunCompactsAndFinishes(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.jsonl")
	m := &fakeModel{limit: 8000, turns: 40, refusal: "never"}
	s, events := newTestSession(t, m, 8000, path)
	_, err := s.Prompt(t.Context(), loop.NewUserText("read forty files"))
	require.NoError(t, err)

	assert.Equal(t, "done", loop.LastAssistant(s.Messages()).Text())
	require.Len(t, m.requests, 41, "40 tool turns and the last answer, none refused")
	for _, req := range m.requests {
		requireCallsWithResults(t, req)
	}
	require.GreaterOrEqual(t, len(m.summaries), 3, "compacted several times")
	assert.NotContains(t, m.summaries[0].Messages[0].(*loop.UserMessage).Content.Text(), "<previous-summary>")
	for i, sr := range m.summaries[1:] {
		body := sr.Messages[0].(*loop.UserMessage).Content.Text()
		assert.Contains(t, body, fmt.Sprintf("<previous-summary>\n## Goal\nsummary %d", i+1), "compaction %d updates the one before", i+2)
	}
	starts, ends := 0, 0
	for _, e := range *events {
		switch e := e.(type) {
		case CompactionStart:
			starts++
			assert.Equal(t, "threshold", e.Reason)
		case CompactionEnd:
			ends++
			assert.Empty(t, e.Error)
			assert.Less(t, e.TokensAfter, e.TokensBefore)
		}
	}
	assert.Equal(t, len(m.summaries), starts)
	assert.Equal(t, starts, ends)

	// The summary names the files read, with their host.
	ctx := s.Messages()
	first := ctx[0].(*loop.UserMessage).Content.Text()
	assert.Contains(t, first, "<files-read>\ndevbox:f1.txt\ndevbox:f2.txt")

	// The file rebuilds the same context, without summarizing again.
	_, c, err := session.Open(path)
	require.NoError(t, err)
	want, err := json.Marshal(ctx)
	require.NoError(t, err)
	got, err := json.Marshal(c.Messages)
	require.NoError(t, err)
	assert.JSONEq(t, string(want), string(got))
	assert.Equal(t, len(m.summaries), strings.Count(readAll(t, path), `"type":"compaction"`))

	// A session continued from the file sends what this one would have
	// sent going on.
	m1, m2 := &fakeModel{limit: 8000}, &fakeModel{limit: 8000}
	prompt := loop.NewUserText("one more")
	again, _ := newTestSession(t, m1, 8000, path)
	_, err = again.Prompt(t.Context(), prompt)
	require.NoError(t, err)
	s.opts.Config.Model = m2
	_, err = s.Prompt(t.Context(), prompt)
	require.NoError(t, err)
	require.Len(t, m1.requests, 1)
	require.Len(t, m2.requests, 1)
	want, err = json.Marshal(m2.requests[0].Messages)
	require.NoError(t, err)
	got, err = json.Marshal(m1.requests[0].Messages)
	require.NoError(t, err)
	assert.Equal(t, string(want), string(got))
}

// overflowRefusals are providers' context-length errors; those that state
// the window state 6,000 tokens.
var overflowRefusals = map[string]struct {
	refusal string
	stated  bool
}{
	"openai":        {"This model's maximum context length is 6000 tokens. However, your messages resulted in 9000 tokens. Please reduce the length of the messages. (HTTP 400)", true},
	"openai code":   {"context_length_exceeded", false},
	"anthropic":     {"prompt is too long: 9000 tokens > 6000 maximum (HTTP 400)", true},
	"vllm":          {"This model's maximum context length is 6000 tokens. However, you requested 9000 tokens (8000 in the messages, 1000 in the completion). (HTTP 400)", true},
	"vllm input":    {"This model's maximum context length is 6000 tokens and your request has 9000 input tokens (HTTP 400)", true},
	"sglang":        {"The input (9000 tokens) is longer than the model's context length (6000 tokens). (HTTP 400)", true},
	"llama.cpp":     {"request (9000 tokens) exceeds the available context size (6000 tokens), try increasing it (HTTP 400)", true},
	"llama.cpp old": {"the request exceeds the available context size, try increasing it (HTTP 400)", false},
	"openrouter":    {"This endpoint's maximum context length is 6,000 tokens. However, you requested about 9,000 tokens. (HTTP 400)", true},
	"mistral":       {"Prompt contains 9000 tokens, too large for model with 6000 maximum context length (HTTP 400)", true},
	"responses":     {"Your input exceeds the context window of this model. Please adjust your input and try again. (HTTP 400)", false},
	"window of":     {"the input exceeds the context window of 6000 tokens (HTTP 400)", true},
	"ollama":        {"input is too long for the model (HTTP 400)", false},
}

// Each wording is an overflow, and the window it states (if any) is
// read from it.
func TestStatedWindow(t *testing.T) {
	for name, tc := range overflowRefusals {
		t.Run(name, func(t *testing.T) {
			assert.True(t, IsContextOverflow(&loop.AssistantMessage{StopReason: loop.StopError, ErrorMessage: tc.refusal}, 0))
			want := 0
			if tc.stated {
				want = 6000
			}
			assert.Equal(t, want, statedWindow(tc.refusal))
		})
	}
	assert.Equal(t, 0, statedWindow("Internal server error (HTTP 500)"))
}

// A provider's context-length error (each one's wording) compacts the
// context and runs the turn again; the window is the one the error
// states, or at most what was sent. A second one ends the run with
// ErrOverflow and what to do.
func TestOverflowCompactsAndRetriesOnce(t *testing.T) {
	for name, tc := range overflowRefusals {
		t.Run(name, func(t *testing.T) {
			// The session takes the window for 100,000 tokens (an unknown
			// model); the server holds 6,000.
			m := &fakeModel{limit: 6000, turns: 14, refusal: tc.refusal}
			s, events := newTestSession(t, m, 100_000, filepath.Join(t.TempDir(), "s.jsonl"))
			_, err := s.Prompt(t.Context(), loop.NewUserText("read"))
			require.NoError(t, err)
			assert.Equal(t, "done", loop.LastAssistant(s.Messages()).Text())
			require.Len(t, m.summaries, 1)
			var reasons []string
			for _, e := range *events {
				if c, ok := e.(CompactionStart); ok {
					reasons = append(reasons, c.Reason)
				}
			}
			assert.Equal(t, []string{"overflow"}, reasons)
			for _, req := range m.requests {
				requireCallsWithResults(t, req)
			}
			if tc.stated {
				assert.Equal(t, 6000, s.Model().Window)
			} else {
				assert.Less(t, s.Model().Window, 100_000)
			}
		})
	}
	t.Run("twice", func(t *testing.T) {
		m := &fakeModel{limit: 6000, turns: 14, refusal: overflowRefusals["anthropic"].refusal, refuse: 1 << 30}
		s, _ := newTestSession(t, m, 100_000, "")
		for range 3 {
			s.record(loop.NewUserText(strings.Repeat("y", 4000)), &Totals{})
			s.record(&loop.AssistantMessage{Content: loop.ContentList{&loop.Text{Text: "ok"}}, StopReason: loop.StopEnd}, &Totals{})
		}
		_, err := s.Prompt(t.Context(), loop.NewUserText("read"))
		require.ErrorIs(t, err, ErrOverflow)
		assert.Contains(t, err.Error(), "start a new session")
		assert.Len(t, m.summaries, 1)
		assert.Len(t, m.requests, 2, "the turn, and once more after compacting")
	})
	t.Run("not an overflow", func(t *testing.T) {
		m := &fakeModel{limit: 6000, refusal: "Internal server error (HTTP 500)", refuse: 1}
		s, _ := newTestSession(t, m, 100_000, "")
		_, err := s.Prompt(t.Context(), loop.NewUserText("read"))
		require.Error(t, err)
		assert.NotErrorIs(t, err, ErrOverflow)
		assert.Empty(t, m.summaries)
	})
}

// A run's cost is its usage at the table's prices, exactly.
func TestCostFromTheTable(t *testing.T) {
	info := BuiltinModels().Lookup("anthropic/claude-sonnet-4-5-20250929")
	require.True(t, info.Known)
	assert.Equal(t, 200_000, info.Window)
	m := &scripted{usage: []loop.Usage{
		{Input: 1_000_000, Output: 100_000, CacheRead: 2_000_000, CacheWrite: 400_000},
		{Input: 10_000, Output: 2_000},
	}}
	var events []loop.Event
	s := New(Options{Config: loop.Config{Model: m, Tools: []loop.Tool{bigRead()}}, Model: info, Compaction: CompactionSettings{Off: true}, Emit: func(e loop.Event) { events = append(events, e) }})
	run, err := s.Prompt(t.Context(), loop.NewUserText("go"))
	require.NoError(t, err)
	// 1M × $3 + 0.1M × $15 + 2M × $0.30 + 0.4M × $3.75 = 3 + 1.5 + 0.6 + 1.5;
	// then 0.01M × $3 + 0.002M × $15 = 0.03 + 0.03.
	assert.InDelta(t, 6.66, run.Cost, 1e-9)
	assert.Equal(t, loop.Usage{Input: 1_010_000, Output: 102_000, CacheRead: 2_000_000, CacheWrite: 400_000}, run.Usage)
	assert.Equal(t, 2, run.Calls)
	assert.Equal(t, run, s.Usage())
	var last UsageUpdate
	for _, e := range events {
		if u, ok := e.(UsageUpdate); ok {
			last = u
		}
	}
	assert.Equal(t, run, last.Run)
	assert.Equal(t, 200_000, last.ContextWindow)
	assert.Equal(t, "1,010,000 in, 102,000 out, cache 2,000,000 read / 400,000 written, $6.6600", run.String())

	unknown := BuiltinModels().Lookup("openai/qwen3-coder")
	assert.False(t, unknown.Known)
	assert.Equal(t, DefaultWindow, unknown.Window)
	assert.Zero(t, unknown.Price)
	assert.False(t, BuiltinModels().Lookup("anthropic/claude-opus-4-7").Known, "a newer version is not the old one")
	assert.Equal(t, 15.0, BuiltinModels().Lookup("anthropic/claude-opus-4-1-20250805").Price.Input)
	assert.Equal(t, 0.15, BuiltinModels().Lookup("openai/gpt-4o-mini-2024-07-18").Price.Input)
}

// scripted asks for one read, then answers; each call reports the next
// usage.
type scripted struct {
	usage []loop.Usage
	n     int
}

func (s *scripted) Stream(context.Context, loop.Request) iter.Seq[loop.StreamEvent] {
	u := s.usage[s.n]
	s.n++
	evs := text("done", u)
	if s.n == 1 {
		evs = []loop.StreamEvent{&loop.StreamStart{}, &loop.ToolCallDelta{ID: "c1", Name: "read", ArgumentsDelta: "{}"}, &loop.StreamDone{StopReason: loop.StopToolUse, Usage: &u}}
	}
	return func(yield func(loop.StreamEvent) bool) {
		for _, e := range evs {
			if !yield(e) {
				return
			}
		}
	}
}

func readAll(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	require.NoError(t, err)
	return string(b)
}

// Steering goes in after the current tool batch; a follow-up when the run
// would end.
func TestSteerAndFollowUp(t *testing.T) {
	m := &fakeModel{limit: 100_000, turns: 2}
	var s *Session
	s = New(Options{
		Config: loop.Config{Model: m, Tools: []loop.Tool{{Name: "read", Parameters: json.RawMessage(`{"type":"object"}`),
			Execute: func(_ context.Context, id string, _ json.RawMessage, _ func(loop.Result)) (loop.Result, error) {
				if id == "call1" {
					s.Steer(loop.NewUserText("steered"))
					s.FollowUp(loop.NewUserText("followed up"))
				}
				return loop.TextResult("ok"), nil
			}}}},
		Model: ModelInfo{Window: 100_000},
	})
	_, err := s.Prompt(t.Context(), loop.NewUserText("go"))
	require.NoError(t, err)
	var users []string
	for _, msg := range s.Messages() {
		if u, ok := msg.(*loop.UserMessage); ok {
			users = append(users, u.Content.Text())
		}
	}
	assert.Equal(t, []string{"go", "steered", "followed up"}, users)
	// The steering message came right after the first call's result.
	second := m.requests[1].Messages
	assert.Equal(t, "steered", second[len(second)-1].(*loop.UserMessage).Content.Text())
}

// A program that knows nothing of its model (the zero ModelInfo) gets
// DefaultWindow: its session does not compact a short conversation.
func TestZeroModelInfoTakesTheDefaultWindow(t *testing.T) {
	m := &fakeModel{limit: 1 << 30, turns: 1}
	s := New(Options{Config: loop.Config{Model: m, Tools: []loop.Tool{bigRead()}}, Emit: func(loop.Event) {}})
	defer s.Close()
	_, err := s.Prompt(t.Context(), loop.NewUserText("go"))
	require.NoError(t, err)
	assert.Empty(t, m.summaries, "nothing to compact in a short conversation")
	assert.Equal(t, DefaultWindow, s.Model().Window)
}
