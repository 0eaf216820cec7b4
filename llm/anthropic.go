package llm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"strings"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"

	"github.com/pi-remote/pi-remote/loop"
)

// Anthropic streams the Messages API.
type Anthropic struct {
	client    anthropic.Client
	model     string
	maxTokens int
	budget    int // thinking tokens, 0: no extended thinking
}

// NewAnthropic returns a provider for o.Model.
func NewAnthropic(o Options) *Anthropic {
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
	maxTokens := o.MaxTokens
	if maxTokens == 0 {
		maxTokens = 16384
	}
	budget := ThinkingBudget[o.Thinking]
	if budget > 0 {
		// The answer comes after the thinking, within max_tokens.
		maxTokens = max(maxTokens, budget+4096)
	}
	return &Anthropic{client: anthropic.NewClient(opts...), model: o.Model, maxTokens: maxTokens, budget: budget}
}

// Stream implements loop.Model.
func (m *Anthropic) Stream(ctx context.Context, req loop.Request) iter.Seq[loop.StreamEvent] {
	return func(yield func(loop.StreamEvent) bool) {
		params, err := m.params(req)
		if err != nil {
			yield(&loop.StreamError{StopReason: loop.StopError, Message: err.Error()})
			return
		}
		stream := m.client.Messages.NewStreaming(ctx, params)
		defer stream.Close()
		var (
			usage   = &loop.Usage{}
			stop    = loop.StopEnd
			started bool
			stopped bool                 // message_stop seen: the answer is complete
			kinds   = map[int64]string{} // block index -> text|thinking|tool_use
		)
		for stream.Next() {
			ev := stream.Current()
			switch ev.Type {
			case "message_start":
				u := ev.Message.Usage
				usage.Input, usage.CacheRead, usage.CacheWrite = int(u.InputTokens), int(u.CacheReadInputTokens), int(u.CacheCreationInputTokens)
				usage.Output = int(u.OutputTokens)
				started = true
				if !yield(&loop.StreamStart{Model: ev.Message.Model}) {
					return
				}
			case "content_block_start":
				b := ev.ContentBlock
				kinds[ev.Index] = b.Type
				if b.Type == "tool_use" {
					if !yield(&loop.ToolCallDelta{Index: int(ev.Index), ID: b.ID, Name: b.Name}) {
						return
					}
				}
			case "content_block_delta":
				d := ev.Delta
				var out loop.StreamEvent
				switch d.Type {
				case "text_delta":
					out = &loop.TextDelta{Index: int(ev.Index), Delta: d.Text}
				case "thinking_delta":
					out = &loop.ThinkingDelta{Index: int(ev.Index), Delta: d.Thinking}
				case "signature_delta":
					out = &loop.ThinkingDelta{Index: int(ev.Index), Signature: d.Signature}
				case "input_json_delta":
					out = &loop.ToolCallDelta{Index: int(ev.Index), ArgumentsDelta: d.PartialJSON}
				}
				if out != nil && !yield(out) {
					return
				}
			case "message_stop":
				stopped = true
			case "message_delta":
				if ev.Usage.OutputTokens > 0 {
					usage.Output = int(ev.Usage.OutputTokens)
				}
				switch ev.Delta.StopReason {
				case "max_tokens":
					stop = loop.StopLength
				case "tool_use":
					stop = loop.StopToolUse
				case "refusal":
					stop = loop.StopError
				}
			}
		}
		if err := stream.Err(); err != nil {
			if ctx.Err() != nil {
				yield(&loop.StreamError{StopReason: loop.StopAborted, Message: "aborted", Usage: usage})
				return
			}
			yield(&loop.StreamError{StopReason: loop.StopError, Message: describeAnthropicError(err), Usage: usage})
			return
		}
		if !started && !yield(&loop.StreamStart{Model: m.model}) {
			return
		}
		if !stopped {
			yield(&loop.StreamError{StopReason: loop.StopError, Message: "the response stream ended before message_stop", Usage: usage})
			return
		}
		if stop == loop.StopError {
			yield(&loop.StreamError{StopReason: loop.StopError, Message: "the model refused to answer", Usage: usage})
			return
		}
		yield(&loop.StreamDone{StopReason: stop, Usage: usage})
	}
}

func describeAnthropicError(err error) string {
	var apiErr *anthropic.Error
	if errors.As(err, &apiErr) {
		return fmt.Sprintf("%s (HTTP %d)", strings.TrimSpace(apiErr.Error()), apiErr.StatusCode)
	}
	return err.Error()
}

// turn is one role's run of content blocks; the API wants roles to
// alternate, so consecutive user-side messages (tool results, then a
// steering message) share one.
type turn struct {
	user   bool
	blocks []anthropic.ContentBlockParamUnion
}

func (m *Anthropic) params(req loop.Request) (anthropic.MessageNewParams, error) {
	p := anthropic.MessageNewParams{Model: m.model, MaxTokens: int64(m.maxTokens)}
	if m.budget > 0 {
		p.Thinking = anthropic.ThinkingConfigParamOfEnabled(int64(m.budget))
	}
	if req.SystemPrompt != "" {
		p.System = []anthropic.TextBlockParam{{Text: req.SystemPrompt}}
	}
	var turns []turn
	add := func(user bool, blocks ...anthropic.ContentBlockParamUnion) {
		if len(blocks) == 0 {
			return
		}
		if n := len(turns); n > 0 && turns[n-1].user == user {
			turns[n-1].blocks = append(turns[n-1].blocks, blocks...)
			return
		}
		turns = append(turns, turn{user: user, blocks: blocks})
	}
	for _, msg := range prepare(req.Messages) {
		switch msg := msg.(type) {
		case *loop.UserMessage:
			add(true, userBlocks(msg.Content)...)
		case *loop.AssistantMessage:
			var blocks []anthropic.ContentBlockParamUnion
			for _, c := range msg.Content {
				switch c := c.(type) {
				case *loop.Thinking:
					if c.Signature != "" { // unsigned thinking (another provider's) cannot be sent back
						blocks = append(blocks, anthropic.NewThinkingBlock(c.Signature, c.Thinking))
					}
				case *loop.Text:
					if c.Text != "" {
						blocks = append(blocks, anthropic.NewTextBlock(c.Text))
					}
				case *loop.ToolCall:
					var input any = map[string]any{}
					if len(c.Arguments) > 0 {
						if err := json.Unmarshal(c.Arguments, &input); err != nil {
							input = map[string]any{}
						}
					}
					blocks = append(blocks, anthropic.NewToolUseBlock(normalizeID(c.ID), input, c.Name))
				}
			}
			add(false, blocks...)
		case *loop.ToolResultMessage:
			text := msg.Content.Text()
			if text == "" {
				text = "(no output)"
			}
			block := anthropic.NewToolResultBlock(normalizeID(msg.ToolCallID), text, msg.IsError)
			for _, c := range msg.Content {
				if img, ok := c.(*loop.Image); ok {
					block.OfToolResult.Content = append(block.OfToolResult.Content,
						anthropic.ToolResultBlockParamContentUnion{OfImage: anthropic.NewImageBlockBase64(img.MimeType, img.Data).OfImage})
				}
			}
			add(true, block)
		}
	}
	for _, t := range turns {
		if t.user {
			p.Messages = append(p.Messages, anthropic.NewUserMessage(t.blocks...))
		} else {
			p.Messages = append(p.Messages, anthropic.NewAssistantMessage(t.blocks...))
		}
	}
	for _, t := range req.Tools {
		var schema struct {
			Properties any      `json:"properties"`
			Required   []string `json:"required"`
		}
		var extra map[string]any
		if err := json.Unmarshal(t.Parameters, &schema); err != nil {
			return p, fmt.Errorf("tool %s: schema: %w", t.Name, err)
		}
		json.Unmarshal(t.Parameters, &extra)
		delete(extra, "properties")
		delete(extra, "required")
		delete(extra, "type")
		tool := anthropic.ToolParam{Name: t.Name, Description: anthropic.String(t.Description),
			InputSchema: anthropic.ToolInputSchemaParam{Properties: schema.Properties, Required: schema.Required, ExtraFields: extra}}
		p.Tools = append(p.Tools, anthropic.ToolUnionParam{OfTool: &tool})
	}
	return p, nil
}

func userBlocks(content loop.ContentList) []anthropic.ContentBlockParamUnion {
	var blocks []anthropic.ContentBlockParamUnion
	for _, c := range content {
		switch c := c.(type) {
		case *loop.Text:
			blocks = append(blocks, anthropic.NewTextBlock(c.Text))
		case *loop.Image:
			blocks = append(blocks, anthropic.NewImageBlockBase64(c.MimeType, c.Data))
		}
	}
	return blocks
}
