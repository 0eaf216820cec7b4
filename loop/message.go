package loop

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// Content is one block of a message: *Text, *Image, *Thinking or *ToolCall.
// The set is closed.
type Content interface {
	contentType() string
}

// Text is plain text.
type Text struct {
	Text string `json:"text"`
}

// Image is an image given inline.
type Image struct {
	Data     string `json:"data"` // base64
	MimeType string `json:"mimeType"`
}

// Thinking is a model's reasoning, shown to users but not acted on.
type Thinking struct {
	Thinking  string `json:"thinking"`
	Signature string `json:"signature,omitempty"` // provider's opaque proof, sent back verbatim
}

// ToolCall is a model's request to run a tool.
type ToolCall struct {
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
}

func (*Text) contentType() string     { return "text" }
func (*Image) contentType() string    { return "image" }
func (*Thinking) contentType() string { return "thinking" }
func (*ToolCall) contentType() string { return "toolCall" }

func marshalTagged(typ string, v any) ([]byte, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	// Prepend "type" so it is the first field a reader sees.
	if string(b) == "{}" {
		return fmt.Appendf(nil, `{"type":%q}`, typ), nil
	}
	return append(fmt.Appendf(nil, `{"type":%q,`, typ), b[1:]...), nil
}

func (c *Text) MarshalJSON() ([]byte, error) {
	type plain Text
	return marshalTagged("text", (*plain)(c))
}

func (c *Image) MarshalJSON() ([]byte, error) {
	type plain Image
	return marshalTagged("image", (*plain)(c))
}

func (c *Thinking) MarshalJSON() ([]byte, error) {
	type plain Thinking
	return marshalTagged("thinking", (*plain)(c))
}

func (c *ToolCall) MarshalJSON() ([]byte, error) {
	type plain ToolCall
	p := *(*plain)(c)
	if len(p.Arguments) == 0 {
		p.Arguments = json.RawMessage("{}")
	}
	return marshalTagged("toolCall", &p)
}

// ContentList is a list of content blocks that knows how to decode itself.
type ContentList []Content

// UnmarshalJSON decodes blocks by their "type" field.
func (l *ContentList) UnmarshalJSON(b []byte) error {
	var raws []json.RawMessage
	if err := json.Unmarshal(b, &raws); err != nil {
		return err
	}
	out := make(ContentList, 0, len(raws))
	for _, raw := range raws {
		var head struct {
			Type string `json:"type"`
		}
		if err := json.Unmarshal(raw, &head); err != nil {
			return err
		}
		var c Content
		switch head.Type {
		case "text":
			c = &Text{}
		case "image":
			c = &Image{}
		case "thinking":
			c = &Thinking{}
		case "toolCall":
			c = &ToolCall{}
		default:
			return fmt.Errorf("unknown content type %q", head.Type)
		}
		if err := json.Unmarshal(raw, c); err != nil {
			return err
		}
		out = append(out, c)
	}
	*l = out
	return nil
}

// Usage counts tokens. Input is the prompt tokens read from no cache
// (CacheRead counts those that were, CacheWrite those written to one): the
// prompt is their sum.
type Usage struct {
	Input      int `json:"input"`
	Output     int `json:"output"`
	CacheRead  int `json:"cacheRead,omitempty"`
	CacheWrite int `json:"cacheWrite,omitempty"`
}

// StopReason says why a model stopped.
type StopReason string

const (
	StopEnd     StopReason = "stop"    // finished its answer
	StopLength  StopReason = "length"  // hit the output-token limit
	StopToolUse StopReason = "toolUse" // wants tool results
	StopError   StopReason = "error"   // the provider failed
	StopAborted StopReason = "aborted" // the caller cancelled
)

// Message is one entry of a conversation: *UserMessage, *AssistantMessage or
// *ToolResultMessage. The set is closed.
type Message interface {
	Role() string
}

// UserMessage is what the person (or a harness) said.
type UserMessage struct {
	Content   ContentList `json:"content"`
	Timestamp int64       `json:"timestamp"` // Unix milliseconds
}

// AssistantMessage is one model response.
type AssistantMessage struct {
	Content      ContentList `json:"content"`
	StopReason   StopReason  `json:"stopReason"`
	Usage        *Usage      `json:"usage,omitempty"`
	Model        string      `json:"model,omitempty"`
	ErrorMessage string      `json:"errorMessage,omitempty"`
	Timestamp    int64       `json:"timestamp"`
}

// ToolResultMessage records one finished tool call.
type ToolResultMessage struct {
	ToolCallID     string      `json:"toolCallId"`
	ToolName       string      `json:"toolName"`
	Content        ContentList `json:"content"`
	Details        any         `json:"details,omitempty"`
	Usage          *Usage      `json:"usage,omitempty"`
	AddedToolNames []string    `json:"addedToolNames,omitempty"`
	IsError        bool        `json:"isError"`
	Timestamp      int64       `json:"timestamp"`
}

func (*UserMessage) Role() string       { return "user" }
func (*AssistantMessage) Role() string  { return "assistant" }
func (*ToolResultMessage) Role() string { return "toolResult" }

func marshalRole(role string, v any) ([]byte, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return append(fmt.Appendf(nil, `{"role":%q,`, role), b[1:]...), nil
}

func (m *UserMessage) MarshalJSON() ([]byte, error) {
	type plain UserMessage
	p := *(*plain)(m)
	if p.Content == nil {
		p.Content = ContentList{}
	}
	return marshalRole("user", &p)
}

func (m *AssistantMessage) MarshalJSON() ([]byte, error) {
	type plain AssistantMessage
	p := *(*plain)(m)
	if p.Content == nil {
		p.Content = ContentList{}
	}
	return marshalRole("assistant", &p)
}

func (m *ToolResultMessage) MarshalJSON() ([]byte, error) {
	type plain ToolResultMessage
	p := *(*plain)(m)
	if p.Content == nil {
		p.Content = ContentList{}
	}
	return marshalRole("toolResult", &p)
}

// UnmarshalMessage decodes a message by its "role" field.
func UnmarshalMessage(b []byte) (Message, error) {
	var head struct {
		Role string `json:"role"`
	}
	if err := json.Unmarshal(b, &head); err != nil {
		return nil, err
	}
	var m Message
	switch head.Role {
	case "user":
		m = &UserMessage{}
	case "assistant":
		m = &AssistantMessage{}
	case "toolResult":
		m = &ToolResultMessage{}
	default:
		return nil, fmt.Errorf("unknown message role %q", head.Role)
	}
	if err := json.Unmarshal(b, m); err != nil {
		return nil, err
	}
	return m, nil
}

// ToolCalls returns the tool calls of an assistant message in order.
func (m *AssistantMessage) ToolCalls() []*ToolCall {
	var calls []*ToolCall
	for _, c := range m.Content {
		if tc, ok := c.(*ToolCall); ok {
			calls = append(calls, tc)
		}
	}
	return calls
}

// Text joins the message's text blocks.
func (m *AssistantMessage) Text() string {
	var s string
	for _, c := range m.Content {
		if t, ok := c.(*Text); ok {
			s += t.Text
		}
	}
	return s
}

// NewUserText is a user message holding one text block.
func NewUserText(text string) *UserMessage {
	return &UserMessage{Content: ContentList{&Text{Text: text}}, Timestamp: time.Now().UnixMilli()}
}

// Text renders the blocks as the plain text a model reads: text blocks as
// they are, images as a short placeholder, one block per line.
func (l ContentList) Text() string {
	var parts []string
	for _, c := range l {
		switch c := c.(type) {
		case *Text:
			parts = append(parts, c.Text)
		case *Image:
			parts = append(parts, fmt.Sprintf("[image %s, %d bytes base64]", c.MimeType, len(c.Data)))
		}
	}
	return strings.Join(parts, "\n")
}

// LastAssistant is the last assistant message of msgs, nil when none.
func LastAssistant(msgs []Message) *AssistantMessage {
	for i := len(msgs) - 1; i >= 0; i-- {
		if a, ok := msgs[i].(*AssistantMessage); ok {
			return a
		}
	}
	return nil
}
