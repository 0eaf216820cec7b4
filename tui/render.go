package tui

import (
	"encoding/json"
	"regexp"
	"strings"

	"charm.land/glamour/v2"
	"charm.land/lipgloss/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/pi-remote/pi-remote/internal/termtext"
	"github.com/pi-remote/pi-remote/loop"
	"github.com/pi-remote/pi-remote/tools"
)

// theme holds the styles of one terminal: colourless for NO_COLOR, dumb
// terminals and tests.
type theme struct {
	color                                  bool
	dim, bold, accent, ok, warn, bad, user lipgloss.Style
	tools                                  tools.Theme
}

func newTheme(color bool) theme {
	t := theme{color: color, tools: tools.Theme{Color: color}}
	plain := lipgloss.NewStyle()
	t.dim, t.bold, t.accent, t.ok, t.warn, t.bad, t.user = plain, plain, plain, plain, plain, plain, plain
	if color {
		t.bold = plain.Bold(true)
		t.dim = plain.Faint(true)
		t.accent = plain.Foreground(lipgloss.Color("6"))
		t.ok = plain.Foreground(lipgloss.Color("2"))
		t.warn = plain.Foreground(lipgloss.Color("3"))
		t.bad = plain.Foreground(lipgloss.Color("1"))
		t.user = plain.Bold(true).Foreground(lipgloss.Color("4"))
	}
	return t
}

// toolState is where a tool call is.
type toolState int

const (
	toolPending toolState = iota // asked for, not started
	toolRunning
	toolDone
	toolFailed
)

// toolBox is one tool call as the terminal shows it.
type toolBox struct {
	id, name string
	args     json.RawMessage
	state    toolState
	output   string      // the partial result while running
	result   loop.Result // once done
}

// previewLines is how much of a tool's output a folded box shows.
const previewLines = 5

// renderToolBox draws a call: its state, the call as the tool renders it,
// and its output (the last previewLines lines while it runs; the first
// ones when done, or all of it when expanded), within width columns. The
// call and the output are shown with their controls as text (termtext).
func renderToolBox(b *toolBox, def tools.Definition, width int, expanded bool, spin string, th theme) string {
	var mark string
	switch b.state {
	case toolPending:
		mark = th.dim.Render("○")
	case toolRunning:
		mark = th.accent.Render(spin)
	case toolDone:
		mark = th.ok.Render("✓")
	case toolFailed:
		mark = th.bad.Render("✗")
	}
	call := termtext.String(b.name)
	if def.Name != "" {
		call = tools.RenderCall(def, b.args)
	}
	lines := []string{mark + " " + th.bold.Render(firstLine(call))}
	var body string
	switch b.state {
	case toolRunning:
		body = tools.FoldTail(termtext.String(b.output), previewLines, th.tools)
	case toolDone, toolFailed:
		switch {
		case b.name == "bash" && !expanded:
			// A command's last lines tell how it went.
			body = tools.FoldTail(termtext.String(b.result.Content.Text()), previewLines, th.tools)
		case b.name == "bash" || def.RenderResult == nil:
			body = termtext.String(b.result.Content.Text())
		default:
			body = tools.RenderResult(def, b.result, th.tools)
		}
		if !expanded && b.name != "bash" {
			body = tools.Fold(body, previewLines, th.tools)
		}
	}
	if body = strings.TrimRight(body, "\n"); body != "" {
		for _, l := range strings.Split(body, "\n") {
			lines = append(lines, "  "+l)
		}
	}
	bar := th.dim
	if b.state == toolFailed {
		bar = th.bad
	}
	// Folded, a long line is cut; in full, it wraps.
	var out []string
	for i, l := range lines {
		if !expanded || i == 0 {
			out = append(out, bar.Render("│")+" "+ansi.Truncate(l, max(width-2, 10), "…"))
			continue
		}
		for _, w := range strings.Split(ansi.Hardwrap(l, max(width-4, 10), true), "\n") {
			if !strings.HasPrefix(w, "  ") {
				w = "  " + w
			}
			out = append(out, bar.Render("│")+" "+w)
		}
	}
	return strings.Join(out, "\n")
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i] + " …"
	}
	return s
}

// renderUser draws a user message as it goes to scrollback.
func renderUser(text string, width int, th theme) string {
	text = termtext.String(text)
	var out []string
	for _, l := range strings.Split(strings.TrimRight(text, "\n"), "\n") {
		for _, w := range strings.Split(ansi.Wrap(l, max(width-2, 10), ""), "\n") {
			prefix := "  "
			if len(out) == 0 {
				prefix = "› "
			}
			out = append(out, th.user.Render(prefix)+w)
		}
	}
	return strings.Join(out, "\n")
}

// markdown renders an answer's Markdown for the terminal (code
// highlighted when in colour), wrapped to width; the text as it is when
// rendering fails. Controls in the text are shown as text (termtext)
// before it is rendered.
func markdown(text string, width int, th theme) string {
	text = termtext.String(text)
	style := "notty"
	if th.color {
		style = "dark"
	}
	r, err := glamour.NewTermRenderer(glamour.WithStandardStyle(style), glamour.WithWordWrap(max(width-2, 20)), glamour.WithPreservedNewLines())
	if err != nil {
		return text
	}
	out, err := r.Render(text)
	if err != nil {
		return text
	}
	// (Glamour pads every line to the width: trailing spaces would wrap
	// or be copied with the text.)
	lines := strings.Split(strings.Trim(out, "\n"), "\n")
	for i, l := range lines {
		lines[i] = trailingBlank.ReplaceAllStringFunc(l, func(tail string) string {
			if strings.Contains(tail, "\x1b") {
				return "\x1b[m"
			}
			return ""
		})
	}
	return strings.Join(lines, "\n")
}

// trailingBlank is the padding at the end of a rendered line: spaces,
// each perhaps in its own colour.
var trailingBlank = regexp.MustCompile(`(\x1b\[[0-9;]*m| )+$`)
