// Package llm holds the model providers behind loop.Model: OpenAI-compatible
// Chat Completions (OpenAI, vLLM, llama.cpp server, Ollama, OpenRouter...)
// through the official openai-go SDK, the Anthropic Messages API, and a
// scripted model that replays assistant turns from a JSON file for tests
// and reproducible demos. New builds one from a "provider/id" spec, so
// that every front end names models the same way.
//
// What every provider shares lives here: the conversation is cleaned before
// each request (tool calls left without a result get a synthetic error
// result, failed assistant turns are dropped) and tool-call ids are made
// acceptable to the target API.
package llm

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"regexp"
	"strconv"
	"sync"

	"github.com/pi-remote/pi-remote/loop"
)

// Options configure a provider.
type Options struct {
	// Model is the provider's model ID (New sets it from the spec).
	Model string
	// APIKey is the provider's key; New takes it from OPENAI_API_KEY or
	// ANTHROPIC_API_KEY when empty.
	APIKey  string
	BaseURL string // "" is the provider's own API
	// MaxRetries bounds retries of a request that failed before any output
	// (429, 5xx, Anthropic's 529 overloaded, connection errors), with the
	// SDK's backoff. Default 3.
	MaxRetries int
	// MaxTokens bounds one response where the API requires it (Anthropic;
	// default 16384).
	MaxTokens int
	// Thinking is the reasoning level: "" or "off" (the model's default,
	// nothing sent), "low", "medium" or "high": OpenAI's reasoning_effort,
	// Anthropic's extended thinking with a budget of ThinkingBudget tokens.
	Thinking string
	// HTTPClient sends the requests (nil: the SDK's default client).
	HTTPClient *http.Client
	// OnRetry, when set, is told each time a request is sent again after a
	// failure the SDK retries (429, 5xx, overloaded, connection errors):
	// the attempt (1 for the first retry) and why the one before failed.
	OnRetry func(attempt int, why string)
}

// ThinkingBudget is the Anthropic thinking budget of each level.
var ThinkingBudget = map[string]int{"low": 2048, "medium": 8192, "high": 16384}

func (o Options) retries() int {
	if o.MaxRetries == 0 {
		return 3
	}
	return o.MaxRetries
}

// retryNotes is an SDK middleware (OpenAI's and Anthropic's have this
// shape) that calls onRetry when an attempt is a retry, saying how the
// attempt before it ended. The SDKs number attempts in the
// X-Stainless-Retry-Count header.
func retryNotes(onRetry func(int, string)) func(*http.Request, func(*http.Request) (*http.Response, error)) (*http.Response, error) {
	var mu sync.Mutex
	last := ""
	return func(req *http.Request, next func(*http.Request) (*http.Response, error)) (*http.Response, error) {
		if n, err := strconv.Atoi(req.Header.Get("X-Stainless-Retry-Count")); err == nil && n > 0 {
			mu.Lock()
			why := last
			mu.Unlock()
			onRetry(n, why)
		}
		res, err := next(req)
		why := ""
		switch {
		case err != nil:
			why = err.Error()
		case res.StatusCode == http.StatusTooManyRequests:
			why = "rate limited (HTTP 429)"
		case res.StatusCode == 529:
			why = "overloaded (HTTP 529)"
		case res.StatusCode >= 500:
			why = fmt.Sprintf("server error (HTTP %d)", res.StatusCode)
		case res.StatusCode >= 400:
			why = fmt.Sprintf("HTTP %d", res.StatusCode)
		}
		mu.Lock()
		last = why
		mu.Unlock()
		return res, err
	}
}

// interruptedResult is the text of the synthetic result for a tool call
// whose result never came (the run was aborted or crashed in between).
const interruptedResult = "No result: the tool call was interrupted before it finished."

// prepare returns the messages to send: assistant turns that failed without
// content are dropped, and every tool call gets a result before the next
// user or assistant message.
func prepare(msgs []loop.Message) []loop.Message {
	var out []loop.Message
	var pending []*loop.ToolCall // calls of the last assistant message without results yet
	flush := func() {
		for _, c := range pending {
			out = append(out, &loop.ToolResultMessage{ToolCallID: c.ID, ToolName: c.Name, IsError: true,
				Content: loop.ContentList{&loop.Text{Text: interruptedResult}}})
		}
		pending = nil
	}
	for _, m := range msgs {
		switch m := m.(type) {
		case *loop.AssistantMessage:
			flush()
			if (m.StopReason == loop.StopError || m.StopReason == loop.StopAborted) && len(m.Content) == 0 {
				continue
			}
			out = append(out, m)
			for _, c := range m.Content {
				if tc, ok := c.(*loop.ToolCall); ok {
					pending = append(pending, tc)
				}
			}
		case *loop.ToolResultMessage:
			for i, c := range pending {
				if c.ID == m.ToolCallID {
					pending = append(pending[:i], pending[i+1:]...)
					break
				}
			}
			out = append(out, m)
		default:
			flush()
			out = append(out, m)
		}
	}
	flush()
	return out
}

var safeID = regexp.MustCompile(`^[A-Za-z0-9_-]{1,40}$`)

// normalizeID maps a tool-call id from any provider to one that OpenAI and
// Anthropic both accept (letters, digits, _ and -, at most 40 long). The
// mapping is a pure function, so a call and its result stay paired.
func normalizeID(id string) string {
	if safeID.MatchString(id) {
		return id
	}
	sum := sha256.Sum256([]byte(id))
	return "call_" + hex.EncodeToString(sum[:12])
}
