package tui

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/pi-remote/pi-remote/loop"
	"github.com/pi-remote/pi-remote/tools"
)

// A program's own tool is drawn in its box by its own renderers, as the
// built-in tools are: nothing in the terminal UI knows it.
func TestToolBoxUsesAProgramsRenderers(t *testing.T) {
	def := tools.Definition{
		Name:       "changelog",
		RenderCall: func(args json.RawMessage) string { return "changelog called with " + string(args) },
		RenderResult: func(res loop.Result, th tools.Theme) string {
			return "rendered: " + res.Content.Text()
		},
	}
	b := &toolBox{name: "changelog", args: json.RawMessage(`{"entry":"x"}`), state: toolDone, result: loop.TextResult("added")}
	got := renderToolBox(b, def, 80, previewLines, "⠋", newTheme(false))
	assert.Contains(t, got, `changelog called with {"entry":"x"}`)
	assert.Contains(t, got, "rendered: added")
}
