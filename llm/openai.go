package llm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"strings"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/respjson"
	"github.com/openai/openai-go/v3/shared"

	"github.com/pi-remote/pi-remote/loop"
)

// OpenAI streams Chat Completions from any server that speaks the API.
type OpenAI struct {
	client   openai.Client
	model    string
	thinking string
}

// NewOpenAI returns a provider for o.Model.
func NewOpenAI(o Options) *OpenAI {
	opts := []option.RequestOption{option.WithAPIKey(o.APIKey), option.WithMaxRetries(o.retries())}
	if o.BaseURL != "" {
		opts = append(opts, option.WithBaseURL(o.BaseURL))
	}
	if o.HTTPClient != nil {
		opts = append(opts, option.WithHTTPClient(o.HTTPClient))
	}
	if o.OnRetry != nil {
		opts = append(opts, option.WithMiddleware(retryNotes(o.OnRetry)))
	}
	return &OpenAI{client: openai.NewClient(opts...), model: o.Model, thinking: o.Thinking}
}

// Stream implements loop.Model.
func (m *OpenAI) Stream(ctx context.Context, req loop.Request) iter.Seq[loop.StreamEvent] {
	return func(yield func(loop.StreamEvent) bool) {
		params, err := m.params(req)
		if err != nil {
			yield(&loop.StreamError{StopReason: loop.StopError, Message: err.Error()})
			return
		}
		stream := m.client.Chat.Completions.NewStreaming(ctx, params)
		defer stream.Close()

		var (
			started bool
			next    int             // index of the next content block
			text    = -1            // index of the open text block
			think   = -1            // index of the open thinking block
			calls   = map[int]int{} // provider's tool-call index -> block index
			usage   *loop.Usage
			stop    = loop.StopEnd
			ended   bool // a finish_reason arrived: the answer is complete
		)
		start := func(model string) bool {
			if started {
				return true
			}
			started = true
			return yield(&loop.StreamStart{Model: model})
		}
		for stream.Next() {
			chunk := stream.Current()
			if !start(chunk.Model) {
				return
			}
			if chunk.JSON.Usage.Valid() && chunk.Usage.TotalTokens > 0 {
				// Input counts the uncached prompt tokens, as Anthropic's
				// does: each kind is priced on its own.
				cached := int(chunk.Usage.PromptTokensDetails.CachedTokens)
				usage = &loop.Usage{Input: int(chunk.Usage.PromptTokens) - cached, Output: int(chunk.Usage.CompletionTokens), CacheRead: cached}
			}
			for _, ch := range chunk.Choices {
				d := ch.Delta
				if r := reasoning(d.JSON.ExtraFields); r != "" {
					if think < 0 {
						think, text = next, -1
						next++
					}
					if !yield(&loop.ThinkingDelta{Index: think, Delta: r}) {
						return
					}
				}
				if d.Content != "" {
					if text < 0 {
						text, think = next, -1
						next++
					}
					if !yield(&loop.TextDelta{Index: text, Delta: d.Content}) {
						return
					}
				}
				for _, tc := range d.ToolCalls {
					idx, seen := calls[int(tc.Index)]
					ev := &loop.ToolCallDelta{ArgumentsDelta: tc.Function.Arguments}
					if !seen {
						idx = next
						next++
						calls[int(tc.Index)] = idx
						text, think = -1, -1
						ev.ID, ev.Name = tc.ID, tc.Function.Name
						if ev.ID == "" {
							ev.ID = fmt.Sprintf("call_%d", idx)
						}
					}
					ev.Index = idx
					if !yield(ev) {
						return
					}
				}
				if ch.FinishReason != "" {
					ended = true
				}
				switch ch.FinishReason {
				case "length":
					stop = loop.StopLength
				case "tool_calls", "function_call":
					stop = loop.StopToolUse
				case "content_filter":
					stop = loop.StopError
				}
			}
		}
		if err := stream.Err(); err != nil {
			if ctx.Err() != nil {
				yield(&loop.StreamError{StopReason: loop.StopAborted, Message: "aborted", Usage: usage})
				return
			}
			yield(&loop.StreamError{StopReason: loop.StopError, Message: describeError(err), Usage: usage})
			return
		}
		if !start(m.model) {
			return
		}
		if !ended {
			yield(&loop.StreamError{StopReason: loop.StopError, Message: "the response stream ended without a finish reason", Usage: usage})
			return
		}
		if stop == loop.StopEnd && len(calls) > 0 {
			stop = loop.StopToolUse
		}
		yield(&loop.StreamDone{StopReason: stop, Usage: usage})
	}
}

// reasoning is the thinking text some OpenAI-compatible servers stream in
// a non-standard field (vLLM and DeepSeek: reasoning_content; OpenRouter
// and Ollama: reasoning).
func reasoning(extra map[string]respjson.Field) string {
	for _, k := range []string{"reasoning_content", "reasoning"} {
		if f, ok := extra[k]; ok {
			var s string
			if json.Unmarshal([]byte(f.Raw()), &s) == nil {
				return s
			}
		}
	}
	return ""
}

func describeError(err error) string {
	var apiErr *openai.Error
	if errors.As(err, &apiErr) {
		return fmt.Sprintf("%s (HTTP %d)", strings.TrimSpace(apiErr.Message), apiErr.StatusCode)
	}
	return err.Error()
}

func (m *OpenAI) params(req loop.Request) (openai.ChatCompletionNewParams, error) {
	p := openai.ChatCompletionNewParams{
		Model:         m.model,
		StreamOptions: openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)},
	}
	if _, ok := ThinkingBudget[m.thinking]; ok {
		p.ReasoningEffort = shared.ReasoningEffort(m.thinking)
	}
	if req.SystemPrompt != "" {
		p.Messages = append(p.Messages, openai.SystemMessage(req.SystemPrompt))
	}
	for _, msg := range prepare(req.Messages) {
		switch msg := msg.(type) {
		case *loop.UserMessage:
			p.Messages = append(p.Messages, openai.UserMessage(userParts(msg.Content)))
		case *loop.AssistantMessage:
			var a openai.ChatCompletionAssistantMessageParam
			var texts []string
			for _, c := range msg.Content {
				switch c := c.(type) {
				case *loop.Text:
					texts = append(texts, c.Text)
				case *loop.ToolCall:
					args := string(c.Arguments)
					if args == "" {
						args = "{}"
					}
					a.ToolCalls = append(a.ToolCalls, openai.ChatCompletionMessageToolCallUnionParam{
						OfFunction: &openai.ChatCompletionMessageFunctionToolCallParam{
							ID:       normalizeID(c.ID),
							Function: openai.ChatCompletionMessageFunctionToolCallFunctionParam{Name: c.Name, Arguments: args},
						},
					})
				}
			}
			if len(texts) > 0 {
				a.Content.OfString = openai.String(strings.Join(texts, "\n"))
			}
			if len(texts) == 0 && len(a.ToolCalls) == 0 {
				continue
			}
			p.Messages = append(p.Messages, openai.ChatCompletionMessageParamUnion{OfAssistant: &a})
		case *loop.ToolResultMessage:
			text := msg.Content.Text()
			if msg.IsError && text == "" {
				text = "error"
			}
			p.Messages = append(p.Messages, openai.ToolMessage(text, normalizeID(msg.ToolCallID)))
			// Tool messages carry text only: images follow as a user message.
			var images []openai.ChatCompletionContentPartUnionParam
			for _, c := range msg.Content {
				if img, ok := c.(*loop.Image); ok {
					images = append(images, imagePart(img))
				}
			}
			if len(images) > 0 {
				parts := append([]openai.ChatCompletionContentPartUnionParam{openai.TextContentPart("Image(s) returned by " + msg.ToolName + ":")}, images...)
				p.Messages = append(p.Messages, openai.UserMessage(parts))
			}
		}
	}
	for _, t := range req.Tools {
		var schema map[string]any
		if err := json.Unmarshal(t.Parameters, &schema); err != nil {
			return p, fmt.Errorf("tool %s: schema: %w", t.Name, err)
		}
		def := shared.FunctionDefinitionParam{Name: t.Name, Description: openai.String(t.Description), Parameters: schema}
		if t.Strict {
			def.Strict = openai.Bool(true)
		}
		p.Tools = append(p.Tools, openai.ChatCompletionFunctionTool(def))
	}
	return p, nil
}

func userParts(content loop.ContentList) []openai.ChatCompletionContentPartUnionParam {
	var parts []openai.ChatCompletionContentPartUnionParam
	for _, c := range content {
		switch c := c.(type) {
		case *loop.Text:
			parts = append(parts, openai.TextContentPart(c.Text))
		case *loop.Image:
			parts = append(parts, imagePart(c))
		}
	}
	return parts
}

func imagePart(img *loop.Image) openai.ChatCompletionContentPartUnionParam {
	return openai.ImageContentPart(openai.ChatCompletionContentPartImageImageURLParam{URL: "data:" + img.MimeType + ";base64," + img.Data})
}
