package tui

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/pi-remote/pi-remote/loop"
)

func conversation(turns int) []loop.Message {
	var msgs []loop.Message
	for i := range turns {
		msgs = append(msgs, loop.NewUserText(fmt.Sprintf("prompt %d", i)),
			&loop.AssistantMessage{Content: loop.ContentList{&loop.Text{Text: fmt.Sprintf("answer **%d**", i)},
				&loop.ToolCall{ID: fmt.Sprintf("c%d", i), Name: "bash", Arguments: []byte(fmt.Sprintf(`{"command":"echo %d"}`, i))}}},
			&loop.ToolResultMessage{ToolCallID: fmt.Sprintf("c%d", i), ToolName: "bash", Content: loop.ContentList{&loop.Text{Text: fmt.Sprintf("out %d", i)}}},
			&loop.AssistantMessage{Content: loop.ContentList{&loop.Text{Text: fmt.Sprintf("done %d", i)}}})
	}
	return msgs
}

// A resumed session's conversation is shown again, as its runs showed it:
// prompts, answers, tool boxes with their output; nothing is left
// running. A long one shows its last 20 prompts and says how many
// messages came before.
func TestReplayShowsTheConversation(t *testing.T) {
	h := newHarness(t, Options{})
	h.a.msgs = conversation(2)
	h.run(h.m.replay())
	out := strings.Join(h.printed, "\n")
	for _, want := range []string{"› prompt 0", "answer **0**", "✓ bash", "out 0", "done 0", "prompt 1", "out 1", "done 1"} {
		assert.Contains(t, out, want)
	}
	assert.Less(t, strings.Index(out, "prompt 0"), strings.Index(out, "prompt 1"))
	assert.NotContains(t, out, "earlier messages")
	assert.Empty(t, h.m.transcript.boxes, "nothing left running")
	assert.Equal(t, "done 1", h.m.transcript.lastAnswer)

	h = newHarness(t, Options{})
	h.a.msgs = conversation(25)
	h.run(h.m.replay())
	out = strings.Join(h.printed, "\n")
	assert.Contains(t, out, "(20 earlier messages of this session not shown)")
	assert.NotContains(t, out, "prompt 4\n")
	assert.Contains(t, out, "prompt 5")
	assert.Contains(t, out, "done 24")
}
