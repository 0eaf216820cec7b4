package llm

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pi-remote/pi-remote/loop"
)

// fakeAnthropic serves scripted Messages API responses and records requests.
type fakeAnthropic struct {
	mu        sync.Mutex
	responses []func(w http.ResponseWriter)
	requests  []map[string]any
}

func (f *fakeAnthropic) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	var req map[string]any
	json.Unmarshal(body, &req)
	f.mu.Lock()
	f.requests = append(f.requests, req)
	n := len(f.requests)
	f.mu.Unlock()
	if r.URL.Path != "/v1/messages" || n > len(f.responses) {
		http.Error(w, `{"type":"error","error":{"type":"api_error","message":"unexpected"}}`, 500)
		return
	}
	f.responses[n-1](w)
}

// events streams Anthropic SSE events (name, JSON data).
func events(evs ...[2]string) func(w http.ResponseWriter) {
	return func(w http.ResponseWriter) {
		w.Header().Set("Content-Type", "text/event-stream")
		for _, e := range evs {
			fmt.Fprintf(w, "event: %s\ndata: %s\n\n", e[0], e[1])
			w.(http.Flusher).Flush()
		}
	}
}

func msgStart() [2]string {
	return [2]string{"message_start", `{"type":"message_start","message":{"id":"msg_01","type":"message","role":"assistant","model":"claude-sonnet-4-5-20250929","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":310,"cache_creation_input_tokens":0,"cache_read_input_tokens":128,"output_tokens":1}}}`}
}

func blockStart(i int, block string) [2]string {
	return [2]string{"content_block_start", fmt.Sprintf(`{"type":"content_block_start","index":%d,"content_block":%s}`, i, block)}
}

func blockDelta(i int, delta string) [2]string {
	return [2]string{"content_block_delta", fmt.Sprintf(`{"type":"content_block_delta","index":%d,"delta":%s}`, i, delta)}
}

func blockStop(i int) [2]string {
	return [2]string{"content_block_stop", fmt.Sprintf(`{"type":"content_block_stop","index":%d}`, i)}
}

func msgDelta(stop string, out int) [2]string {
	return [2]string{"message_delta", fmt.Sprintf(`{"type":"message_delta","delta":{"stop_reason":%q,"stop_sequence":null},"usage":{"output_tokens":%d}}`, stop, out)}
}

var msgStop = [2]string{"message_stop", `{"type":"message_stop"}`}
var ping = [2]string{"ping", `{"type":"ping"}`}

func newFakeAnthropic(t *testing.T, responses ...func(w http.ResponseWriter)) (*fakeAnthropic, *Anthropic) {
	f := &fakeAnthropic{responses: responses}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	return f, NewAnthropic(Options{Model: "claude-sonnet-4-5", APIKey: "sk-ant-test", BaseURL: srv.URL})
}

func TestAnthropicTextAndThinking(t *testing.T) {
	f, m := newFakeAnthropic(t, events(
		msgStart(), ping,
		blockStart(0, `{"type":"thinking","thinking":"","signature":""}`),
		blockDelta(0, `{"type":"thinking_delta","thinking":"Short answer."}`),
		blockDelta(0, `{"type":"signature_delta","signature":"EqQBsig"}`),
		blockStop(0),
		blockStart(1, `{"type":"text","text":""}`),
		blockDelta(1, `{"type":"text_delta","text":"Hel"}`),
		blockDelta(1, `{"type":"text_delta","text":"lo."}`),
		blockStop(1),
		msgDelta("end_turn", 12), msgStop,
	))
	evs := collect(m, t.Context(), loop.Request{SystemPrompt: "be brief", Messages: []loop.Message{loop.NewUserText("hi")}})
	assert.Equal(t, []loop.StreamEvent{
		&loop.StreamStart{Model: "claude-sonnet-4-5-20250929"},
		&loop.ThinkingDelta{Index: 0, Delta: "Short answer."},
		&loop.ThinkingDelta{Index: 0, Signature: "EqQBsig"},
		&loop.TextDelta{Index: 1, Delta: "Hel"},
		&loop.TextDelta{Index: 1, Delta: "lo."},
		&loop.StreamDone{StopReason: loop.StopEnd, Usage: &loop.Usage{Input: 310, Output: 12, CacheRead: 128}},
	}, evs)
	req := f.requests[0]
	assert.Equal(t, "claude-sonnet-4-5", req["model"])
	assert.Equal(t, true, req["stream"])
	assert.Equal(t, []any{map[string]any{"type": "text", "text": "be brief"}}, req["system"])
}

func TestAnthropicParallelToolCallsThroughTheLoop(t *testing.T) {
	f, m := newFakeAnthropic(t,
		events(msgStart(),
			blockStart(0, `{"type":"text","text":""}`), blockDelta(0, `{"type":"text_delta","text":"Both."}`), blockStop(0),
			blockStart(1, `{"type":"tool_use","id":"toolu_01A","name":"echo","input":{}}`),
			blockDelta(1, `{"type":"input_json_delta","partial_json":""}`),
			blockDelta(1, `{"type":"input_json_delta","partial_json":"{\"text\": \"fi"}`),
			blockDelta(1, `{"type":"input_json_delta","partial_json":"rst\"}"}`),
			blockStop(1),
			blockStart(2, `{"type":"tool_use","id":"toolu_02B","name":"echo","input":{}}`),
			blockDelta(2, `{"type":"input_json_delta","partial_json":"{\"text\":\"second\"}"}`),
			blockStop(2),
			msgDelta("tool_use", 80), msgStop),
		events(msgStart(), blockStart(0, `{"type":"text","text":""}`), blockDelta(0, `{"type":"text_delta","text":"done"}`), blockStop(0), msgDelta("end_turn", 3), msgStop),
	)
	echo := loop.Tool{Name: "echo", Description: "echo text", Parameters: json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}`),
		Execute: func(ctx context.Context, id string, args json.RawMessage, _ func(loop.Result)) (loop.Result, error) {
			var in struct{ Text string }
			json.Unmarshal(args, &in)
			return loop.Result{Content: loop.ContentList{&loop.Text{Text: "echo: " + in.Text}}}, nil
		}}
	_, err := loop.Run(t.Context(), loop.Config{Model: m, Tools: []loop.Tool{echo}}, nil, []loop.Message{loop.NewUserText("go")}, nil)
	require.NoError(t, err)
	require.Len(t, f.requests, 2)
	msgs := f.requests[1]["messages"].([]any)
	require.Len(t, msgs, 3, "user, assistant, one user turn holding both results")
	assistant := msgs[1].(map[string]any)["content"].([]any)
	assert.Equal(t, map[string]any{"type": "tool_use", "id": "toolu_01A", "name": "echo", "input": map[string]any{"text": "first"}}, assistant[1])
	results := msgs[2].(map[string]any)["content"].([]any)
	require.Len(t, results, 2)
	assert.Equal(t, "toolu_01A", results[0].(map[string]any)["tool_use_id"])
	assert.Equal(t, "toolu_02B", results[1].(map[string]any)["tool_use_id"])
	tool := f.requests[0]["tools"].([]any)[0].(map[string]any)
	assert.Equal(t, "echo", tool["name"])
	assert.Equal(t, []any{"text"}, tool["input_schema"].(map[string]any)["required"])
}

func TestAnthropicMaxTokensIsALengthStop(t *testing.T) {
	_, m := newFakeAnthropic(t, events(msgStart(), blockStart(0, `{"type":"text","text":""}`), blockDelta(0, `{"type":"text_delta","text":"cut"}`), msgDelta("max_tokens", 4096), msgStop))
	evs := collect(m, t.Context(), loop.Request{Messages: []loop.Message{loop.NewUserText("hi")}})
	assert.Equal(t, loop.StopLength, evs[len(evs)-1].(*loop.StreamDone).StopReason)
}

func TestAnthropicRetriesOverloaded(t *testing.T) {
	overloaded := func(w http.ResponseWriter) {
		w.Header().Set("retry-after-ms", "5")
		w.WriteHeader(529)
		io.WriteString(w, `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`)
	}
	f, m := newFakeAnthropic(t, overloaded,
		events(msgStart(), blockStart(0, `{"type":"text","text":""}`), blockDelta(0, `{"type":"text_delta","text":"ok"}`), msgDelta("end_turn", 1), msgStop))
	evs := collect(m, t.Context(), loop.Request{Messages: []loop.Message{loop.NewUserText("hi")}})
	assert.IsType(t, &loop.StreamDone{}, evs[len(evs)-1])
	assert.Len(t, f.requests, 2)
}

func TestAnthropicStreamErrorEvent(t *testing.T) {
	_, m := newFakeAnthropic(t, events(msgStart(), blockStart(0, `{"type":"text","text":""}`), blockDelta(0, `{"type":"text_delta","text":"par"}`),
		[2]string{"error", `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`}))
	evs := collect(m, t.Context(), loop.Request{Messages: []loop.Message{loop.NewUserText("hi")}})
	e, ok := evs[len(evs)-1].(*loop.StreamError)
	require.True(t, ok, "%#v", evs[len(evs)-1])
	assert.Equal(t, loop.StopError, e.StopReason)
}

func TestAnthropicAbort(t *testing.T) {
	release := make(chan struct{})
	_, m := newFakeAnthropic(t, func(w http.ResponseWriter) {
		events(msgStart(), blockStart(0, `{"type":"text","text":""}`), blockDelta(0, `{"type":"text_delta","text":"slow"}`))(w)
		<-release
	})
	t.Cleanup(func() { close(release) })
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

func TestAnthropicRetriesA429(t *testing.T) {
	limited := func(w http.ResponseWriter) {
		w.Header().Set("retry-after-ms", "5")
		w.WriteHeader(429)
		io.WriteString(w, `{"type":"error","error":{"type":"rate_limit_error","message":"Number of request tokens has exceeded your per-minute rate limit"}}`)
	}
	f, m := newFakeAnthropic(t, limited,
		events(msgStart(), blockStart(0, `{"type":"text","text":""}`), blockDelta(0, `{"type":"text_delta","text":"ok"}`), msgDelta("end_turn", 1), msgStop))
	evs := collect(m, t.Context(), loop.Request{Messages: []loop.Message{loop.NewUserText("hi")}})
	assert.Equal(t, &loop.TextDelta{Index: 0, Delta: "ok"}, evs[1])
	assert.IsType(t, &loop.StreamDone{}, evs[len(evs)-1])
	assert.Len(t, f.requests, 2)
}

func TestAnthropicStreamCut(t *testing.T) {
	_, m := newFakeAnthropic(t, func(w http.ResponseWriter) {
		events(msgStart(), blockStart(0, `{"type":"text","text":""}`), blockDelta(0, `{"type":"text_delta","text":"half"}`))(w)
		if conn, _, err := w.(http.Hijacker).Hijack(); err == nil {
			conn.Close()
		}
	})
	evs := collect(m, t.Context(), loop.Request{Messages: []loop.Message{loop.NewUserText("hi")}})
	e, ok := evs[len(evs)-1].(*loop.StreamError)
	require.True(t, ok, "a cut stream is an error, not a finished answer: %#v", evs[len(evs)-1])
	assert.Equal(t, loop.StopError, e.StopReason)
}

func TestAnthropicStreamWithoutMessageStop(t *testing.T) {
	_, m := newFakeAnthropic(t, events(msgStart(), blockStart(0, `{"type":"text","text":""}`), blockDelta(0, `{"type":"text_delta","text":"half"}`), msgDelta("end_turn", 1)))
	evs := collect(m, t.Context(), loop.Request{Messages: []loop.Message{loop.NewUserText("hi")}})
	e, ok := evs[len(evs)-1].(*loop.StreamError)
	require.True(t, ok, "%#v", evs[len(evs)-1])
	assert.Contains(t, e.Message, "before message_stop")
}

// --thinking enables extended thinking with the level's budget, and
// max_tokens leaves room for the answer after it.
func TestAnthropicThinkingLevel(t *testing.T) {
	for level, budget := range map[string]float64{"": 0, "off": 0, "low": 2048, "medium": 8192, "high": 16384} {
		f := &fakeAnthropic{responses: []func(http.ResponseWriter){events(msgStart(), msgDelta("end_turn", 1), msgStop)}}
		srv := httptest.NewServer(f)
		m := NewAnthropic(Options{Model: "claude-sonnet-4-5", APIKey: "k", BaseURL: srv.URL, Thinking: level})
		collect(m, t.Context(), loop.Request{Messages: []loop.Message{loop.NewUserText("hi")}})
		srv.Close()
		require.Len(t, f.requests, 1)
		req := f.requests[0]
		if budget == 0 {
			assert.Nil(t, req["thinking"], "level %q", level)
			assert.Equal(t, 16384.0, req["max_tokens"])
			continue
		}
		assert.Equal(t, map[string]any{"type": "enabled", "budget_tokens": budget}, req["thinking"], "level %q", level)
		assert.Greater(t, req["max_tokens"], budget)
	}
}
