package integration

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// compactingOpenAI is an OpenAI-compatible server for long runs: it asks
// for turns bash calls that print 3,000 characters each, then says "done";
// a prompt "next" gets "ok, next"; a summary request (recognised by its
// system prompt) gets "summary N". It reports usage as the request's size
// (bytes / 4) and refuses, as OpenAI does, a request past limit tokens.
type compactingOpenAI struct {
	turns, limit int
	refusal      string // the error message past limit (default: OpenAI's)

	mu        sync.Mutex
	requests  [][]byte // every request body
	summaries []string // the summary requests' user message
	answered  int
}

func (s *compactingOpenAI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	var req struct {
		Messages []struct {
			Role    string `json:"role"`
			Content any    `json:"content"`
		} `json:"messages"`
	}
	json.Unmarshal(body, &req)
	s.mu.Lock()
	defer s.mu.Unlock()
	tokens := len(body) / 4
	if tokens > s.limit {
		w.WriteHeader(400)
		if s.refusal != "" {
			msg, _ := json.Marshal(s.refusal)
			fmt.Fprintf(w, `{"error":{"message":%s,"type":"BadRequestError"}}`, msg)
			return
		}
		fmt.Fprintf(w, `{"error":{"message":"This model's maximum context length is %d tokens. However, your messages resulted in %d tokens.","type":"invalid_request_error","code":"context_length_exceeded"}}`, s.limit, tokens)
		return
	}
	text := func(m int) string {
		b, _ := json.Marshal(req.Messages[m].Content)
		return string(b)
	}
	last := len(req.Messages) - 1
	var delta string
	finish := "stop"
	switch {
	case strings.Contains(text(0), "working memory of a coding agent"):
		s.summaries = append(s.summaries, text(last))
		delta = fmt.Sprintf(`{"content":"## Goal\nsummary %d"}`, len(s.summaries))
	case req.Messages[last].Role == "user" && strings.Contains(text(last), `next`):
		s.requests = append(s.requests, body)
		delta = `{"content":"ok, next"}`
	case s.answered < s.turns:
		s.requests = append(s.requests, body)
		s.answered++
		args, _ := json.Marshal(`{"command":"head -c 3000 /dev/zero | tr '\\0' x; echo ` + fmt.Sprint(s.answered) + `"}`)
		delta = fmt.Sprintf(`{"tool_calls":[{"index":0,"id":"call_%d","type":"function","function":{"name":"bash","arguments":%s}}]}`, s.answered, args)
		finish = "tool_calls"
	default:
		s.requests = append(s.requests, body)
		delta = `{"content":"done"}`
	}
	w.Header().Set("Content-Type", "text/event-stream")
	fmt.Fprintf(w, "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"fake-1\",\"choices\":[{\"index\":0,\"delta\":%s,\"finish_reason\":null}]}\n\n", delta)
	fmt.Fprintf(w, "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"fake-1\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":%q}]}\n\n", finish)
	fmt.Fprintf(w, "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"fake-1\",\"choices\":[],\"usage\":{\"prompt_tokens\":%d,\"completion_tokens\":20,\"total_tokens\":%d}}\n\n", tokens, tokens+20)
	fmt.Fprint(w, "data: [DONE]\n\n")
}

// got is a copy of the requests and summary requests so far.
func (s *compactingOpenAI) got() ([][]byte, []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.requests), slices.Clone(s.summaries)
}

// checkPairs fails when a request sends a tool result whose call is not
// in an assistant message before it.
func checkPairs(t *testing.T, body []byte) {
	t.Helper()
	var req struct {
		Messages []struct {
			Role       string `json:"role"`
			ToolCallID string `json:"tool_call_id"`
			ToolCalls  []struct {
				ID string `json:"id"`
			} `json:"tool_calls"`
		} `json:"messages"`
	}
	require.NoError(t, json.Unmarshal(body, &req))
	calls := map[string]bool{}
	for _, m := range req.Messages {
		for _, c := range m.ToolCalls {
			calls[c.ID] = true
		}
		if m.Role == "tool" {
			assert.True(t, calls[m.ToolCallID], "result of %s sent without its call", m.ToolCallID)
		}
	}
}

// A 40-turn run whose tool outputs outgrow an 8,000-token window compacts
// by itself and finishes; every request keeps each tool result with its
// call and fits; each summary after the first updates the one before; the
// session file holds the compactions, and the next run (--continue) sends
// exactly what a process that never stopped (rpc) sends.
func TestLongRunCompactsThroughTheCLI(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("PI_REMOTE_MODEL", "")
	require.NoError(t, os.MkdirAll(filepath.Join(home, ".pi-remote"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(home, ".pi-remote", "settings.json"),
		[]byte(`{"models":{"openai/fake-1":{"contextWindow":8000,"maxOutput":2000}}}`), 0o644))
	dir := t.TempDir()
	start := func(fake *compactingOpenAI) []string {
		api := httptest.NewServer(fake)
		t.Cleanup(api.Close)
		return []string{"--cwd", dir, "--model", "openai/fake-1", "--base-url", api.URL + "/v1", "--tools", "read,bash"}
	}

	viaRun := &compactingOpenAI{turns: 40, limit: 8000}
	flags := start(viaRun)
	code, out, stderr := cli(t, "", append(flags, "run", "print forty blocks")...)
	require.Equal(t, 0, code, stderr)
	files, err := filepath.Glob(filepath.Join(home, ".pi-remote", "sessions", "*", "*.jsonl"))
	require.NoError(t, err)
	require.Len(t, files, 1)
	sessionFile := files[0]
	assert.Equal(t, "done\n", out)
	assert.Contains(t, stderr, "compacting the context")
	assert.Contains(t, stderr, "usage: ")
	runRequests, runSummaries := viaRun.got()
	require.Len(t, runRequests, 41, "40 tool turns and the answer, none refused")
	for _, body := range runRequests {
		checkPairs(t, body)
	}
	require.GreaterOrEqual(t, len(runSummaries), 2)
	assert.NotContains(t, runSummaries[0], "previous-summary")
	for i, s := range runSummaries[1:] {
		assert.Contains(t, s, fmt.Sprintf(`\u003cprevious-summary\u003e\n## Goal\nsummary %d`, i+1), "summary %d updates the one before", i+2)
	}
	saved, err := os.ReadFile(sessionFile)
	require.NoError(t, err)
	assert.Equal(t, len(runSummaries), strings.Count(string(saved), `"type":"compaction"`))
	assert.Equal(t, 41, strings.Count(string(saved), `"role":"assistant"`), "the file keeps every message")

	code, out, stderr = cli(t, "", append(flags, "run", "--continue", "next")...)
	require.Equal(t, 0, code, stderr)
	assert.Equal(t, "ok, next\n", out)
	assert.Contains(t, stderr, "session: "+sessionFile)
	assert.NotContains(t, stderr, "compacting", "the context came back from the file, not from a new summary")
	runRequests, _ = viaRun.got()
	continued := runRequests[len(runRequests)-1]
	t.Logf("%d compactions; the continued request has %d bytes", len(runSummaries), len(continued))

	viaRPC := &compactingOpenAI{turns: 40, limit: 8000}
	c := startRPC(t, start(viaRPC)...)
	c.send(`{"id":"go","type":"prompt","message":"print forty blocks"}`)
	c.response("go")
	require.Eventually(t, func() bool {
		return c.find(func(l map[string]any) bool { return l["type"] == "agent_end" }) != nil
	}, 60*time.Second, 10*time.Millisecond)
	c.send(`{"id":"next","type":"prompt","message":"next"}`)
	c.response("next")
	require.Eventually(t, func() bool { r, _ := viaRPC.got(); return len(r) == 42 }, 30*time.Second, 10*time.Millisecond)
	rpcRequests, rpcSummaries := viaRPC.got()
	assert.Equal(t, len(runSummaries), len(rpcSummaries))
	assert.Equal(t, string(rpcRequests[41]), string(continued), "the continued run's request is the one a process that never stopped makes")
}

// A server that refuses the context once (OpenAI's context_length_exceeded,
// its window smaller than pi-remote was told) gets the turn again after a
// compaction, and the run succeeds; one that refuses every time ends the
// run with exit 1 and a message that says what to do.
func TestContextLengthErrorThroughTheCLI(t *testing.T) {
	t.Setenv("HOME", t.TempDir())
	t.Setenv("PI_REMOTE_MODEL", "")
	dir := t.TempDir()
	run := func(fake *compactingOpenAI) (int, string, string) {
		api := httptest.NewServer(fake)
		t.Cleanup(api.Close)
		return cli(t, "", "--cwd", dir, "--model", "openai/fake-1", "--base-url", api.URL+"/v1", "--tools", "read,bash", "run", "print twelve blocks")
	}
	// 12 × 3,000 characters outgrow 9,000 tokens; the model is unknown, so
	// pi-remote assumes 128,000 until the server refuses.
	fits := &compactingOpenAI{turns: 12, limit: 9000}
	code, out, stderr := run(fits)
	require.Equal(t, 0, code, stderr)
	assert.Equal(t, "done\n", out)
	assert.Contains(t, stderr, "compacting the context (the model refused its size)")
	fitsRequests, fitsSummaries := fits.got()
	assert.Len(t, fitsSummaries, 1)
	for _, body := range fitsRequests {
		checkPairs(t, body)
	}

	// The OpenAI-compatible servers' own wordings.
	for name, wording := range map[string]string{
		"vLLM":       "This model's maximum context length is 9000 tokens. However, you requested 9500 tokens in the messages, Please reduce the length of the messages.",
		"llama.cpp":  "the request exceeds the available context size, try increasing it",
		"OpenRouter": "This endpoint's maximum context length is 9000 tokens. However, you requested about 9500 tokens.",
	} {
		t.Run(name, func(t *testing.T) {
			fake := &compactingOpenAI{turns: 12, limit: 9000, refusal: wording}
			code, out, stderr := run(fake)
			require.Equal(t, 0, code, stderr)
			assert.Equal(t, "done\n", out)
			_, summaries := fake.got()
			assert.Len(t, summaries, 1, "compacted once, then the turn went through")
		})
	}

	never := &compactingOpenAI{turns: 12, limit: 1000}
	code, _, stderr = run(never)
	assert.Equal(t, 1, code, stderr)
	assert.Contains(t, stderr, "does not fit the model's context window even after compacting it")
	assert.Contains(t, stderr, "start a new session")
}

// compactingAnthropic is compactingOpenAI's Anthropic Messages API twin:
// turns tool_use blocks running bash that prints 3,000 characters, then
// "done"; a summary request gets a summary; past limit tokens it refuses
// as Anthropic does ("prompt is too long").
type compactingAnthropic struct {
	turns, limit int

	mu        sync.Mutex
	answered  int
	summaries int
	refused   int
}

func (s *compactingAnthropic) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	s.mu.Lock()
	defer s.mu.Unlock()
	tokens := len(body) / 4
	if tokens > s.limit {
		s.refused++
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(400)
		fmt.Fprintf(w, `{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: %d tokens > %d maximum"}}`, tokens, s.limit)
		return
	}
	event := func(name, data string) {
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", name, data)
	}
	w.Header().Set("Content-Type", "text/event-stream")
	event("message_start", fmt.Sprintf(`{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":"claude-fake","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":%d,"output_tokens":1}}}`, tokens))
	text := func(t string) {
		b, _ := json.Marshal(t)
		event("content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`)
		event("content_block_delta", fmt.Sprintf(`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":%s}}`, b))
		event("content_block_stop", `{"type":"content_block_stop","index":0}`)
		event("message_delta", `{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":20}}`)
	}
	switch {
	case strings.Contains(string(body), "working memory of a coding agent"):
		s.summaries++
		text(fmt.Sprintf("## Goal\nsummary %d", s.summaries))
	case s.answered < s.turns:
		s.answered++
		input, _ := json.Marshal(fmt.Sprintf(`{"command":"head -c 3000 /dev/zero | tr '\\0' x; echo %d"}`, s.answered))
		event("content_block_start", fmt.Sprintf(`{"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"toolu_%d","name":"bash","input":{}}}`, s.answered))
		event("content_block_delta", fmt.Sprintf(`{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":%s}}`, input))
		event("content_block_stop", `{"type":"content_block_stop","index":0}`)
		event("message_delta", `{"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"output_tokens":20}}`)
	default:
		text("done")
	}
	event("message_stop", `{"type":"message_stop"}`)
}

// Anthropic's wording of a context that does not fit: compaction, the turn
// again, success.
func TestAnthropicContextLengthErrorThroughTheCLI(t *testing.T) {
	t.Setenv("HOME", t.TempDir())
	t.Setenv("PI_REMOTE_MODEL", "")
	fake := &compactingAnthropic{turns: 12, limit: 9000}
	api := httptest.NewServer(fake)
	t.Cleanup(api.Close)
	code, out, stderr := cli(t, "", "--cwd", t.TempDir(), "--model", "anthropic/claude-fake", "--base-url", api.URL, "--tools", "read,bash", "run", "print twelve blocks")
	require.Equal(t, 0, code, stderr)
	assert.Equal(t, "done\n", out)
	assert.Contains(t, stderr, "compacting the context (the model refused its size)")
	fake.mu.Lock()
	defer fake.mu.Unlock()
	assert.Equal(t, 1, fake.refused)
	assert.Equal(t, 1, fake.summaries)
}

// rpc: compact on demand (with a focus), usage and context in get_state,
// and the session's events.
func TestRPCCompactAndUsage(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("PI_REMOTE_MODEL", "")
	require.NoError(t, os.MkdirAll(filepath.Join(home, ".pi-remote"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(home, ".pi-remote", "settings.json"),
		[]byte(`{"models":{"openai/fake-1":{"contextWindow":100000,"maxOutput":2000,"price":{"input":2,"output":8}}}}`), 0o644))
	fake := &compactingOpenAI{turns: 6, limit: 100000}
	api := httptest.NewServer(fake)
	t.Cleanup(api.Close)
	c := startRPC(t, "--cwd", t.TempDir(), "--model", "openai/fake-1", "--base-url", api.URL+"/v1", "--tools", "read,bash")
	c.send(`{"id":"p","type":"prompt","message":"print six blocks"}`)
	c.response("p")
	require.Eventually(t, func() bool {
		return c.find(func(l map[string]any) bool { return l["type"] == "agent_end" }) != nil
	}, 60*time.Second, 10*time.Millisecond)

	c.send(`{"id":"s1","type":"get_state"}`)
	state := c.response("s1")["data"].(map[string]any)
	usage := state["usage"].(map[string]any)
	assert.Equal(t, 7.0, usage["calls"], "six tool turns and the answer")
	assert.Positive(t, usage["cost"], "priced from the settings' table")
	assert.Equal(t, 100000.0, state["contextWindow"])
	before := state["contextTokens"].(float64)
	assert.Positive(t, before)
	usageEvent := c.find(func(l map[string]any) bool { return l["type"] == "usage" })
	require.NotNil(t, usageEvent, "a usage event after each call")

	c.send(`{"id":"c","type":"compact","focus":"the block numbers"}`)
	resp := c.responseWithin("c", 60*time.Second)
	require.Equal(t, true, resp["success"], "%v", resp)
	data := resp["data"].(map[string]any)
	assert.Less(t, data["tokensAfter"].(float64), data["tokensBefore"].(float64))
	_, summaries := fake.got()
	require.Len(t, summaries, 1)
	assert.Contains(t, summaries[0], "the block numbers", "the focus goes to the summary request")
	assert.NotNil(t, c.find(func(l map[string]any) bool { return l["type"] == "compaction_end" && l["reason"] == "manual" }))

	// The next prompt goes out from the summary.
	c.send(`{"id":"n","type":"prompt","message":"next"}`)
	c.response("n")
	require.Eventually(t, func() bool { r, _ := fake.got(); return len(r) == 8 }, 30*time.Second, 10*time.Millisecond)
	requests, _ := fake.got()
	assert.Contains(t, string(requests[7]), "summary 1")
}
