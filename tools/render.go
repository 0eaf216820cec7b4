package tools

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/pi-remote/pi-remote/internal/termtext"
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
// or generically; the model's arguments may hold controls, which are
// shown as text (termtext).
func RenderCall(d Definition, args json.RawMessage) string {
	if d.RenderCall != nil {
		return termtext.String(d.RenderCall(args))
	}
	return termtext.String(d.Name + " " + string(args))
}

// Printable is s with its terminal controls shown as text (ESC as ^[):
// what a RenderResult does to text from outside (a model's argument, a
// file's or a host's text) that it takes from a result's Details. The
// result's Content reaches a renderer cleaned already; its Details do not,
// and a renderer's output is not cleaned after it, since it may style
// text with a Theme.
func Printable(s string) string { return termtext.String(s) }

// RenderResult renders a result for a terminal with the definition's
// renderer, or as its text folded to FoldLines lines. Controls in the
// result (a file's or a command's) are shown as text (termtext) before the
// theme styles it.
func RenderResult(d Definition, res loop.Result, th Theme) string {
	res = shownResult(res)
	if d.RenderResult != nil {
		return d.RenderResult(res, th)
	}
	return Fold(res.Content.Text(), FoldLines, th)
}

// Theme styles terminal output for a renderer; the zero value is plain
// text (pipes, NO_COLOR). Its methods return s unchanged without colour.
type Theme struct {
	Color bool
}

func (t Theme) paint(code, s string) string {
	if !t.Color || s == "" {
		return s
	}
	return "\x1b[" + code + "m" + s + "\x1b[0m"
}

// Red styles s red when the theme has colour (removed lines, errors).
func (t Theme) Red(s string) string { return t.paint("31", s) }

// Green styles s green when the theme has colour (added lines).
func (t Theme) Green(s string) string { return t.paint("32", s) }

// Dim styles s faint when the theme has colour (notices, context).
func (t Theme) Dim(s string) string { return t.paint("2", s) }

// Bold styles s bold when the theme has colour.
func (t Theme) Bold(s string) string { return t.paint("1", s) }

// Cyan styles s cyan when the theme has colour.
func (t Theme) Cyan(s string) string { return t.paint("36", s) }

// Yellow styles s yellow when the theme has colour (warnings).
func (t Theme) Yellow(s string) string { return t.paint("33", s) }

// FoldLines is how many lines of a result a terminal shows.
const FoldLines = 12

// Fold keeps the first max lines of text and says how many were left out.
func Fold(text string, max int, th Theme) string {
	lines := strings.Split(strings.TrimRight(text, "\n"), "\n")
	if len(lines) <= max {
		return strings.Join(lines, "\n")
	}
	return strings.Join(lines[:max], "\n") + "\n" + th.Dim("… "+Count(len(lines)-max, "more line", "more lines"))
}

// FoldTail keeps the last max lines of text and says how many came before.
func FoldTail(text string, max int, th Theme) string {
	lines := strings.Split(strings.TrimRight(text, "\n"), "\n")
	if len(lines) <= max {
		return strings.Join(lines, "\n")
	}
	return th.Dim("… "+Count(len(lines)-max, "earlier line", "earlier lines")) + "\n" + strings.Join(lines[len(lines)-max:], "\n")
}

// Count is "1 line", "2 lines": n and the word for it.
func Count(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

// colorDiff colours a diff's added and removed lines.
func colorDiff(diff string, th Theme) string {
	if !th.Color {
		return diff
	}
	lines := strings.Split(diff, "\n")
	for i, l := range lines {
		switch {
		case strings.HasPrefix(l, "+"):
			lines[i] = th.Green(l)
		case strings.HasPrefix(l, "-"):
			lines[i] = th.Red(l)
		default:
			lines[i] = th.Dim(l)
		}
	}
	return strings.Join(lines, "\n")
}

// shownResult is res with the text a renderer shows (its text content, an
// edit's diff) cleaned of controls for a terminal; res itself is kept as
// it is (the model and the session have it).
func shownResult(res loop.Result) loop.Result {
	content := make(loop.ContentList, len(res.Content))
	for i, c := range res.Content {
		if t, ok := c.(*loop.Text); ok {
			c = &loop.Text{Text: termtext.String(t.Text)}
		}
		content[i] = c
	}
	res.Content = content
	if d, ok := res.Details.(EditDetails); ok {
		d.Diff = termtext.String(d.Diff)
		res.Details = d
	}
	return res
}
