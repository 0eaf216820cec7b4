package tools

import (
	"bytes"
	"context"
	"encoding/json"

	"github.com/pi-remote/pi-remote/loop"
)

// Call runs one call of the tool name outside a model turn, through the
// loop's whole pipeline (lookup among cfg.Tools and cfg.Active, argument
// preparation and validation, the host's mutation queue, execution,
// finalize), its tool_execution events sent to emit (nil: none). Empty
// args are {}. The tool command, the MCP server, the front ends' helpers
// and the tool tests all call a tool this way.
func Call(ctx context.Context, cfg loop.Config, name string, args json.RawMessage, emit func(loop.Event)) *loop.ToolResultMessage {
	if len(bytes.TrimSpace(args)) == 0 {
		args = json.RawMessage("{}")
	}
	return loop.ExecuteTool(ctx, cfg, &loop.ToolCall{ID: name, Name: name, Arguments: args}, emit)
}
