package session

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/pi-remote/pi-remote/loop"
)

func TestForkPoints(t *testing.T) {
	answer := func(text string) loop.Message {
		return &loop.AssistantMessage{StopReason: loop.StopEnd, Content: loop.ContentList{&loop.Text{Text: text}}}
	}
	entries := []Entry{
		{ID: "e1", Message: loop.NewUserText("first")},
		{ID: "e2", Message: answer("one")},
		{ID: "e3", Summary: "compacted"},
		{ID: "e4", Message: loop.NewUserText("second")},
		{ID: "e5", Message: answer("two")},
		{ID: "e6", Message: loop.NewUserText("third")},
	}
	assert.Equal(t, []ForkPoint{{Entry: "e5", Prompt: "third"}, {Entry: "e3", Prompt: "second"}}, ForkPoints(entries),
		"the latest first; from the entry before each prompt; none for the opening prompt")
	assert.Empty(t, ForkPoints(entries[:1]))
	assert.Empty(t, ForkPoints(nil))
}

func TestOfHost(t *testing.T) {
	all := []Info{
		{Path: "/s/a.jsonl", Host: "local"},
		{Path: "/s/b.jsonl", Host: "alice@devbox:22"},
		{Path: "/s/c.jsonl", Host: "local"},
	}
	assert.Equal(t, []Info{all[2]}, OfHost(all, "local", "/s/a.jsonl"))
	assert.Equal(t, []Info{all[1]}, OfHost(all, "alice@devbox:22", ""))
	assert.Empty(t, OfHost(all, "bob@elsewhere:22", ""))
}
