package tui

import (
	"fmt"

	tea "charm.land/bubbletea/v2"

	"github.com/pi-remote/pi-remote/loop"
)

// replayTurns is how many of a resumed session's last prompts (with what
// followed each) the terminal shows again; the earlier ones are counted.
const replayTurns = 20

// replay shows the conversation the agent already has (a resumed, forked
// or continued session) in the scrollback, as its runs showed it: the
// last replayTurns prompts and what followed them, the compaction's
// summary first when there is one, after a line counting what is left
// out. It goes through the transcript as the loop's events would.
func (m *model) replay() tea.Cmd {
	msgs := m.o.Agent.Messages()
	start, turns := 0, 0
	for i := len(msgs) - 1; i >= 0; i-- {
		if _, ok := msgs[i].(*loop.UserMessage); ok {
			turns++
			if turns == replayTurns {
				start = i
				break
			}
		}
	}
	if len(msgs) == 0 {
		return nil
	}
	f := m.frame()
	var cmds []tea.Cmd
	if start > 0 {
		cmds = append(cmds, f.print(m.th.dim.Render(fmt.Sprintf("(%d earlier messages of this session not shown)", start))))
	}
	t := &m.transcript
	for _, msg := range msgs[start:] {
		switch msg := msg.(type) {
		case *loop.UserMessage:
			cmds = append(cmds, t.event(loop.MessageEnd{Message: msg}, f))
		case *loop.AssistantMessage:
			cmds = append(cmds, t.event(loop.MessageStart{Message: msg}, f), t.event(loop.MessageEnd{Message: msg}, f))
			for _, c := range msg.Content {
				if call, ok := c.(*loop.ToolCall); ok {
					cmds = append(cmds, t.event(loop.ToolExecutionStart{ToolCallID: call.ID, ToolName: call.Name, Args: call.Arguments}, f))
				}
			}
		case *loop.ToolResultMessage:
			res := loop.Result{Content: msg.Content, Details: msg.Details, IsError: msg.IsError}
			cmds = append(cmds, t.event(loop.ToolExecutionEnd{ToolCallID: msg.ToolCallID, ToolName: msg.ToolName, Result: res, IsError: msg.IsError}, f))
		}
	}
	// (A call whose result the session does not have — the run was cut
	// short — is not running now.)
	t.boxes = nil
	t.thinking = false
	return tea.Sequence(cmds...)
}
