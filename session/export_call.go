package session

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/pi-remote/pi-remote/loop"
)

// foldLines is the length past which an export folds a tool's output.
const foldLines = 20

// exportedCall is a tool call as an export shows it: an edit as the diff
// of its replacements, a write as its content, any other as its
// arguments, indented, with no HTML escapes (the model wrote "&&", not
// "\u0026\u0026").
type exportedCall struct {
	path    string
	diff    string // edit
	content string // write
	args    string
}

func readCall(c *loop.ToolCall) exportedCall {
	out := exportedCall{args: prettyJSON(c.Arguments)}
	var in struct {
		Path    string  `json:"path"`
		Content *string `json:"content"`
		Edits   []struct {
			OldText string `json:"oldText"`
			NewText string `json:"newText"`
		} `json:"edits"`
		OldText *string `json:"oldText"`
		NewText *string `json:"newText"`
	}
	if json.Unmarshal(c.Arguments, &in) != nil || in.Path == "" {
		return out
	}
	switch c.Name {
	case "edit":
		if in.OldText != nil && in.NewText != nil {
			in.Edits = append(in.Edits, struct {
				OldText string `json:"oldText"`
				NewText string `json:"newText"`
			}{*in.OldText, *in.NewText})
		}
		var d strings.Builder
		for i, e := range in.Edits {
			if i > 0 {
				d.WriteString("@@\n")
			}
			for _, l := range splitLines(e.OldText) {
				d.WriteString("-" + l + "\n")
			}
			for _, l := range splitLines(e.NewText) {
				d.WriteString("+" + l + "\n")
			}
		}
		out.path, out.diff = in.Path, d.String()
	case "write":
		if in.Content != nil {
			out.path, out.content = in.Path, *in.Content
			if out.content == "" {
				out.content = "\n" // (an empty file, shown as one)
			}
		}
	}
	return out
}

// prettyJSON is raw indented, with "<", ">" and "&" as written.
func prettyJSON(raw json.RawMessage) string {
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	var v any
	if d.Decode(&v) != nil {
		return string(raw)
	}
	var b bytes.Buffer
	e := json.NewEncoder(&b)
	e.SetEscapeHTML(false)
	e.SetIndent("", "  ")
	if e.Encode(v) != nil {
		return string(raw)
	}
	return b.String()
}

func splitLines(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(strings.TrimSuffix(s, "\n"), "\n")
}

func lines(s string) int { return len(splitLines(s)) }

// countLines is "1 line", "N lines".
func countLines(s string) string {
	if n := lines(s); n != 1 {
		return fmt.Sprintf("%d lines", n)
	}
	return "1 line"
}
