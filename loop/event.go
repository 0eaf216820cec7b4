package loop

import "encoding/json"

// Event is one thing that happened in a run. The set is closed: the
// concrete types below, each with a JSON "type" tag.
type Event interface {
	EventType() string
}

type (
	// AgentStart opens a run.
	AgentStart struct{}
	// AgentEnd closes a run, with the messages it added (the prompts,
	// the assistant's answers, the tool results).
	AgentEnd struct {
		Messages []Message `json:"messages"`
	}
	// TurnStart opens a turn: one model response and the tool calls it
	// made.
	TurnStart struct{}
	// TurnEnd closes a turn, with its assistant message and the results
	// of its tool calls in call order.
	TurnEnd struct {
		Message     Message              `json:"message"`
		ToolResults []*ToolResultMessage `json:"toolResults"`
	}
	// MessageStart opens a message: a prompt, an assistant response as it
	// starts streaming, or a tool result.
	MessageStart struct {
		Message Message `json:"message"`
	}
	// MessageUpdate carries the partial assistant message and the stream
	// event that changed it.
	MessageUpdate struct {
		Message *AssistantMessage `json:"message"`
		Delta   StreamEvent       `json:"assistantMessageEvent"`
	}
	// MessageEnd closes a message, complete; it is the one to keep.
	MessageEnd struct {
		Message Message `json:"message"`
	}
	// ToolExecutionStart says a tool call was taken up, in call order,
	// before it is prepared; every call that starts ends
	// (ToolExecutionEnd), one refused or not run too.
	ToolExecutionStart struct {
		ToolCallID string          `json:"toolCallId"`
		ToolName   string          `json:"toolName"`
		Args       json.RawMessage `json:"args"`
	}
	// ToolExecutionUpdate is a running call's partial result (bash's
	// output so far).
	ToolExecutionUpdate struct {
		ToolCallID    string          `json:"toolCallId"`
		ToolName      string          `json:"toolName"`
		Args          json.RawMessage `json:"args"`
		PartialResult Result          `json:"partialResult"`
	}
	// ToolExecutionEnd is a call's final result, in the order the calls
	// finish.
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
