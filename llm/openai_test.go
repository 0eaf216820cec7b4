package llm

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pi-remote/pi-remote/loop"
)

// chunk is one Chat Completions stream chunk as OpenAI sends it.
func chunk(delta string, finish string) string {
	fin := "null"
	if finish != "" {
		fin = `"` + finish + `"`
	}
	return fmt.Sprintf(`{"id":"chatcmpl-9x","object":"chat.completion.chunk","created":1764460000,"model":"gpt-4o-mini-2024-07-18","system_fingerprint":"fp_1","choices":[{"index":0,"delta":%s,"logprobs":null,"finish_reason":%s}],"usage":null}`, delta, fin)
}

const usageChunk = `{"id":"chatcmpl-9x","object":"chat.completion.chunk","created":1764460000,"model":"gpt-4o-mini-2024-07-18","choices":[],"usage":{"prompt_tokens":120,"completion_tokens":17,"total_tokens":137,"prompt_tokens_details":{"cached_tokens":64}}}`

// fakeOpenAI serves scripted responses in order and records requests.
type fakeOpenAI struct {
	mu        sync.Mutex
	responses []func(w http.ResponseWriter)
	requests  []map[string]any
}

func (f *fakeOpenAI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	var req map[string]any
	json.Unmarshal(body, &req)
	f.mu.Lock()
	f.requests = append(f.requests, req)
	n := len(f.requests)
	f.mu.Unlock()
	if r.URL.Path != "/v1/chat/completions" {
		http.NotFound(w, r)
		return
	}
	if n > len(f.responses) {
		http.Error(w, `{"error":{"message":"no more responses","type":"server_error"}}`, 500)
		return
	}
	f.responses[n-1](w)
}

func sse(chunks ...string) func(w http.ResponseWriter) {
	return func(w http.ResponseWriter) {
		w.Header().Set("Content-Type", "text/event-stream")
		for _, c := range chunks {
			fmt.Fprintf(w, "data: %s\n\n", c)
			w.(http.Flusher).Flush()
		}
		fmt.Fprint(w, "data: [DONE]\n\n")
	}
}

func newFake(t *testing.T, responses ...func(w http.ResponseWriter)) (*fakeOpenAI, *OpenAI) {
	f := &fakeOpenAI{responses: responses}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	return f, NewOpenAI(Options{Model: "gpt-4o-mini", APIKey: "sk-test", BaseURL: srv.URL + "/v1"})
}

func collect(m loop.Model, ctx context.Context, req loop.Request) []loop.StreamEvent {
	var evs []loop.StreamEvent
	for ev := range m.Stream(ctx, req) {
		evs = append(evs, ev)
	}
	return evs
}

func TestOpenAIText(t *testing.T) {
	f, m := newFake(t, sse(
		chunk(`{"role":"assistant","content":"","refusal":null}`, ""),
		chunk(`{"content":"Hel"}`, ""),
		chunk(`{"content":"lo."}`, ""),
		chunk(`{}`, "stop"),
		usageChunk,
	))
	evs := collect(m, t.Context(), loop.Request{SystemPrompt: "be brief", Messages: []loop.Message{loop.NewUserText("hi")}})
	require.Len(t, evs, 4)
	assert.Equal(t, &loop.StreamStart{Model: "gpt-4o-mini-2024-07-18"}, evs[0])
	assert.Equal(t, &loop.TextDelta{Index: 0, Delta: "Hel"}, evs[1])
	assert.Equal(t, &loop.TextDelta{Index: 0, Delta: "lo."}, evs[2])
	assert.Equal(t, &loop.StreamDone{StopReason: loop.StopEnd, Usage: &loop.Usage{Input: 56, Output: 17, CacheRead: 64}}, evs[3])

	req := f.requests[0]
	assert.Equal(t, "gpt-4o-mini", req["model"])
	assert.Equal(t, true, req["stream"])
	assert.Equal(t, map[string]any{"include_usage": true}, req["stream_options"])
	msgs := req["messages"].([]any)
	assert.Equal(t, map[string]any{"role": "system", "content": "be brief"}, msgs[0])
	assert.Equal(t, "user", msgs[1].(map[string]any)["role"])
}

// Two parallel tool calls whose arguments arrive split and interleaved run
// through the loop; their results go back in call order with their ids.
func TestOpenAIParallelToolCallsThroughTheLoop(t *testing.T) {
	f, m := newFake(t,
		sse(
			chunk(`{"role":"assistant","content":null}`, ""),
			chunk(`{"tool_calls":[{"index":0,"id":"call_A1","type":"function","function":{"name":"echo","arguments":""}}]}`, ""),
			chunk(`{"tool_calls":[{"index":0,"function":{"arguments":"{\"te"}}]}`, ""),
			chunk(`{"tool_calls":[{"index":1,"id":"call_B2","type":"function","function":{"name":"echo","arguments":"{\"text\":"}}]}`, ""),
			chunk(`{"tool_calls":[{"index":0,"function":{"arguments":"xt\":\"first\"}"}}]}`, ""),
			chunk(`{"tool_calls":[{"index":1,"function":{"arguments":"\"second\"}"}}]}`, ""),
			chunk(`{}`, "tool_calls"),
			usageChunk,
		),
		sse(chunk(`{"content":"done"}`, ""), chunk(`{}`, "stop")),
	)
	echo := loop.Tool{Name: "echo", Description: "echo text", Parameters: json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"}}}`),
		Execute: func(ctx context.Context, id string, args json.RawMessage, _ func(loop.Result)) (loop.Result, error) {
			var in struct{ Text string }
			json.Unmarshal(args, &in)
			if in.Text == "first" {
				time.Sleep(50 * time.Millisecond) // finishes second
			}
			return loop.Result{Content: loop.ContentList{&loop.Text{Text: "echo: " + in.Text}}}, nil
		}}
	msgs, err := loop.Run(t.Context(), loop.Config{Model: m, Tools: []loop.Tool{echo}}, nil, []loop.Message{loop.NewUserText("go")}, nil)
	require.NoError(t, err)
	a := msgs[1].(*loop.AssistantMessage)
	assert.Equal(t, loop.StopToolUse, a.StopReason)
	require.Len(t, a.Content, 2)
	assert.JSONEq(t, `{"text":"first"}`, string(a.Content[0].(*loop.ToolCall).Arguments))
	assert.JSONEq(t, `{"text":"second"}`, string(a.Content[1].(*loop.ToolCall).Arguments))

	require.Len(t, f.requests, 2)
	sent := f.requests[1]["messages"].([]any)
	// user, assistant with two tool calls, two tool results in call order.
	require.Len(t, sent, 4)
	calls := sent[1].(map[string]any)["tool_calls"].([]any)
	assert.Equal(t, "call_A1", calls[0].(map[string]any)["id"])
	assert.Equal(t, "call_B2", calls[1].(map[string]any)["id"])
	assert.Equal(t, map[string]any{"role": "tool", "tool_call_id": "call_A1", "content": "echo: first"}, sent[2])
	assert.Equal(t, map[string]any{"role": "tool", "tool_call_id": "call_B2", "content": "echo: second"}, sent[3])
	tools := f.requests[0]["tools"].([]any)
	assert.Equal(t, "echo", tools[0].(map[string]any)["function"].(map[string]any)["name"])
}

func TestOpenAILengthStop(t *testing.T) {
	_, m := newFake(t, sse(chunk(`{"content":"partial"}`, ""), chunk(`{}`, "length")))
	evs := collect(m, t.Context(), loop.Request{Messages: []loop.Message{loop.NewUserText("hi")}})
	assert.Equal(t, loop.StopLength, evs[len(evs)-1].(*loop.StreamDone).StopReason)
}

func TestOpenAIRetriesA429(t *testing.T) {
	f, m := newFake(t,
		func(w http.ResponseWriter) {
			w.Header().Set("retry-after-ms", "10")
			w.WriteHeader(429)
			io.WriteString(w, `{"error":{"message":"Rate limit reached","type":"requests","code":"rate_limit_exceeded"}}`)
		},
		sse(chunk(`{"content":"ok"}`, ""), chunk(`{}`, "stop")),
	)
	evs := collect(m, t.Context(), loop.Request{Messages: []loop.Message{loop.NewUserText("hi")}})
	assert.Equal(t, &loop.TextDelta{Index: 0, Delta: "ok"}, evs[1])
	assert.IsType(t, &loop.StreamDone{}, evs[len(evs)-1])
	assert.Len(t, f.requests, 2)
}

// OnRetry hears of each retry and of why the attempt before failed.
func TestOpenAIRetriesAreTold(t *testing.T) {
	limited := func(w http.ResponseWriter) {
		w.Header().Set("retry-after-ms", "1")
		w.WriteHeader(429)
		io.WriteString(w, `{"error":{"message":"Rate limit reached"}}`)
	}
	overloaded := func(w http.ResponseWriter) {
		w.Header().Set("retry-after-ms", "1")
		w.WriteHeader(503)
		io.WriteString(w, `{"error":{"message":"overloaded"}}`)
	}
	f := &fakeOpenAI{responses: []func(http.ResponseWriter){limited, overloaded, sse(chunk(`{"content":"ok"}`, "stop"))}}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	var told []string
	m := NewOpenAI(Options{Model: "gpt-4o-mini", APIKey: "k", BaseURL: srv.URL + "/v1", OnRetry: func(n int, why string) {
		told = append(told, fmt.Sprintf("%d: %s", n, why))
	}})
	evs := collect(m, t.Context(), loop.Request{Messages: []loop.Message{loop.NewUserText("hi")}})
	assert.IsType(t, &loop.StreamDone{}, evs[len(evs)-1])
	assert.Equal(t, []string{"1: rate limited (HTTP 429)", "2: server error (HTTP 503)"}, told)
}

func TestOpenAIErrorsAfterRetries(t *testing.T) {
	overloaded := func(w http.ResponseWriter) {
		w.Header().Set("retry-after-ms", "1")
		w.WriteHeader(503)
		io.WriteString(w, `{"error":{"message":"The server is overloaded","type":"server_error"}}`)
	}
	f, m := newFake(t, overloaded, overloaded, overloaded, overloaded, overloaded)
	evs := collect(m, t.Context(), loop.Request{Messages: []loop.Message{loop.NewUserText("hi")}})
	e := evs[len(evs)-1].(*loop.StreamError)
	assert.Equal(t, loop.StopError, e.StopReason)
	assert.Contains(t, e.Message, "HTTP 503")
	assert.Len(t, f.requests, 4, "first try and three retries")
}

func TestOpenAIStreamCut(t *testing.T) {
	_, m := newFake(t, func(w http.ResponseWriter) {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprintf(w, "data: %s\n\n", chunk(`{"content":"half"}`, ""))
		w.(http.Flusher).Flush()
		conn, _, err := w.(http.Hijacker).Hijack()
		if err == nil {
			conn.Close()
		}
	})
	evs := collect(m, t.Context(), loop.Request{Messages: []loop.Message{loop.NewUserText("hi")}})
	require.NotEmpty(t, evs)
	e, ok := evs[len(evs)-1].(*loop.StreamError)
	require.True(t, ok, "%#v", evs[len(evs)-1])
	assert.Equal(t, loop.StopError, e.StopReason)
}

func TestOpenAIAbort(t *testing.T) {
	release := make(chan struct{})
	_, m := newFake(t, func(w http.ResponseWriter) {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprintf(w, "data: %s\n\n", chunk(`{"content":"thinking..."}`, ""))
		w.(http.Flusher).Flush()
		<-release
	})
	t.Cleanup(func() { close(release) }) // before the server's Close, which waits for the handler
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var last loop.StreamEvent
	for ev := range m.Stream(ctx, loop.Request{Messages: []loop.Message{loop.NewUserText("hi")}}) {
		if _, ok := ev.(*loop.TextDelta); ok {
			cancel()
		}
		last = ev
	}
	assert.Equal(t, loop.StopAborted, last.(*loop.StreamError).StopReason)
}

func TestOpenAIReasoningField(t *testing.T) {
	_, m := newFake(t, sse(
		chunk(`{"role":"assistant","content":null,"reasoning_content":"Let me think"}`, ""),
		chunk(`{"content":"Answer"}`, ""),
		chunk(`{}`, "stop"),
	))
	evs := collect(m, t.Context(), loop.Request{Messages: []loop.Message{loop.NewUserText("hi")}})
	assert.Equal(t, &loop.ThinkingDelta{Index: 0, Delta: "Let me think"}, evs[1])
	assert.Equal(t, &loop.TextDelta{Index: 1, Delta: "Answer"}, evs[2])
}

// A tool call left without a result (the run was aborted) gets a synthetic
// error result; ids another provider made are normalized for both.
func TestRequestRepair(t *testing.T) {
	f, m := newFake(t, sse(chunk(`{"content":"ok"}`, ""), chunk(`{}`, "stop")))
	longID := "toolu_01" + strings.Repeat("X", 40) + "|weird"
	history := []loop.Message{
		loop.NewUserText("do it"),
		&loop.AssistantMessage{StopReason: loop.StopToolUse, Content: loop.ContentList{
			&loop.ToolCall{ID: longID, Name: "bash", Arguments: json.RawMessage(`{"command":"sleep 100"}`)},
		}},
		&loop.AssistantMessage{StopReason: loop.StopAborted},
		loop.NewUserText("never mind"),
	}
	collect(m, t.Context(), loop.Request{Messages: history})
	sent := f.requests[0]["messages"].([]any)
	require.Len(t, sent, 4)
	id := sent[1].(map[string]any)["tool_calls"].([]any)[0].(map[string]any)["id"].(string)
	assert.Regexp(t, `^[A-Za-z0-9_-]{1,40}$`, id)
	assert.Equal(t, map[string]any{"role": "tool", "tool_call_id": id, "content": interruptedResult}, sent[2])
	assert.Equal(t, "user", sent[3].(map[string]any)["role"])
}

// A stream that closes cleanly but never says why it stopped is cut, not a
// finished answer.
func TestOpenAIStreamWithoutFinishReason(t *testing.T) {
	_, m := newFake(t, sse(chunk(`{"content":"half an ans"}`, "")))
	evs := collect(m, t.Context(), loop.Request{Messages: []loop.Message{loop.NewUserText("hi")}})
	e, ok := evs[len(evs)-1].(*loop.StreamError)
	require.True(t, ok, "%#v", evs[len(evs)-1])
	assert.Contains(t, e.Message, "without a finish reason")
}

// --thinking maps to reasoning_effort; off (or unset) sends nothing.
func TestOpenAIThinkingLevel(t *testing.T) {
	for level, want := range map[string]any{"": nil, "off": nil, "low": "low", "high": "high"} {
		f := &fakeOpenAI{responses: []func(http.ResponseWriter){sse(chunk(`{"content":"ok"}`, "stop"))}}
		srv := httptest.NewServer(f)
		m := NewOpenAI(Options{Model: "o4-mini", APIKey: "k", BaseURL: srv.URL + "/v1", Thinking: level})
		collect(m, t.Context(), loop.Request{Messages: []loop.Message{loop.NewUserText("hi")}})
		srv.Close()
		require.Len(t, f.requests, 1)
		assert.Equal(t, want, f.requests[0]["reasoning_effort"], "level %q", level)
	}
}
