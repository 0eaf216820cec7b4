package loop

import "encoding/json"

// Event is one thing that happened in a run. The set is closed: the
// concrete types below, each with a JSON "type" tag.
type Event interface {
	EventType() string
}

type (
	AgentStart struct{}
	AgentEnd   struct {
		Messages []Message `json:"messages"`
	}
	TurnStart struct{}
	TurnEnd   struct {
		Message     Message              `json:"message"`
		ToolResults []*ToolResultMessage `json:"toolResults"`
	}
	MessageStart struct {
		Message Message `json:"message"`
	}
	// MessageUpdate carries the partial assistant message and the stream
	// event that changed it.
	MessageUpdate struct {
		Message *AssistantMessage `json:"message"`
		Delta   StreamEvent       `json:"assistantMessageEvent"`
	}
	MessageEnd struct {
		Message Message `json:"message"`
	}
	ToolExecutionStart struct {
		ToolCallID string          `json:"toolCallId"`
		ToolName   string          `json:"toolName"`
		Args       json.RawMessage `json:"args"`
	}
	ToolExecutionUpdate struct {
		ToolCallID    string          `json:"toolCallId"`
		ToolName      string          `json:"toolName"`
		Args          json.RawMessage `json:"args"`
		PartialResult Result          `json:"partialResult"`
	}
	ToolExecutionEnd struct {
		ToolCallID string `json:"toolCallId"`
		ToolName   string `json:"toolName"`
		Result     Result `json:"result"`
		IsError    bool   `json:"isError"`
	}
)

func (AgentStart) EventType() string          { return "agent_start" }
func (AgentEnd) EventType() string            { return "agent_end" }
func (TurnStart) EventType() string           { return "turn_start" }
func (TurnEnd) EventType() string             { return "turn_end" }
func (MessageStart) EventType() string        { return "message_start" }
func (MessageUpdate) EventType() string       { return "message_update" }
func (MessageEnd) EventType() string          { return "message_end" }
func (ToolExecutionStart) EventType() string  { return "tool_execution_start" }
func (ToolExecutionUpdate) EventType() string { return "tool_execution_update" }
func (ToolExecutionEnd) EventType() string    { return "tool_execution_end" }

// MarshalEvent encodes an event as one JSON object with its "type" first.
func MarshalEvent(e Event) ([]byte, error) {
	return marshalTagged(e.EventType(), e)
}
