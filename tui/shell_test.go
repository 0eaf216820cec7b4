package tui

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// !cmd runs the person's command on the default host and its output goes
// with the next prompt; !!cmd keeps it out; Esc kills a command that runs
// on; a prompt typed meanwhile waits in the editor.
func TestShellCommands(t *testing.T) {
	var ran []string
	block := make(chan struct{})
	h := newHarness(t, Options{Commands: Commands{Shell: func(ctx context.Context, command string) (string, bool) {
		ran = append(ran, command)
		if command == "sleep 100" {
			select {
			case <-ctx.Done():
			case <-block:
			}
			return "", true
		}
		return "out of " + command + "\n", command == "false"
	}}})
	close(h.a.release)
	h.typeText("!git status")
	h.do(enter)
	h.settle()
	assert.Equal(t, []string{"git status"}, ran)
	assert.Contains(t, h.view(), "1 command's output goes with your next prompt")
	h.typeText("!!ls")
	h.do(enter)
	h.settle()
	h.typeText("what changed?")
	h.do(enter)
	h.settle()
	require.Len(t, h.a.prompts, 1)
	prompt := h.a.prompts[0]
	assert.Contains(t, prompt, "I ran this command:\n\n```sh\ngit status\n```\n\nIts output:\n\n```\nout of git status\n```")
	assert.True(t, strings.HasSuffix(prompt, "\n\nwhat changed?"), prompt)
	assert.NotContains(t, prompt, "out of ls", "!! keeps the output out")

	h.typeText("!sleep 100")
	h.do(enter)
	require.True(t, h.m.running)
	h.typeText("a prompt")
	h.do(enter)
	assert.Equal(t, "a prompt", h.m.editor.value(), "kept in the editor while the command runs")
	h.do(esc)
	h.settle()
	assert.Len(t, h.a.prompts, 1, "nothing was sent")
	h.m.editor.clear()
	h.typeText("next")
	h.do(enter)
	h.settle()
	require.Len(t, h.a.prompts, 2)
	assert.Equal(t, "next", h.a.prompts[1], "a killed command's output goes nowhere")
}
