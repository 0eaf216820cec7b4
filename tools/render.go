package tools

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/pi-remote/pi-remote/loop"
)

// renderPathCall renders "name path" for tools whose main argument is a
// path, adding the other arguments compactly.
func renderPathCall(name string, args json.RawMessage) string {
	var m map[string]any
	if err := json.Unmarshal(args, &m); err != nil {
		return name
	}
	var b strings.Builder
	b.WriteString(name)
	if p, ok := m["path"].(string); ok {
		b.WriteString(" " + p)
	}
	for _, k := range []string{"pattern", "offset", "limit", "glob", "context"} {
		if v, ok := m[k]; ok {
			fmt.Fprintf(&b, " %s=%v", k, v)
		}
	}
	return b.String()
}

// RenderCall renders a call for a terminal with the definition's renderer,
// or generically.
func RenderCall(d Definition, args json.RawMessage) string {
	if d.RenderCall != nil {
		return d.RenderCall(args)
	}
	return d.Name + " " + string(args)
}

// RenderResult renders a result for a terminal with the definition's
// renderer, or as its text.
func RenderResult(d Definition, res loop.Result) string {
	if d.RenderResult != nil {
		return d.RenderResult(res)
	}
	return res.Content.Text()
}
