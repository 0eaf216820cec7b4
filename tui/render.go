package tui

import (
	"encoding/json"
	"regexp"
	"strings"

	"charm.land/glamour/v2"
	glamouransi "charm.land/glamour/v2/ansi"
	"charm.land/glamour/v2/styles"
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
	light                                  bool // a light background: Glamour's light style
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

	// folds are its output folded to a detail (renderToolBox), for the
	// state and output they were made from: the live part is drawn on
	// every keystroke, and the output can be long.
	folds struct {
		state  toolState
		output string
		bodies map[int]string
	}
}

// previewLines is how much of a tool's output a folded box shows.
const previewLines = 5

// detailFull is the detail of a box with all of its output, wrapped
// (Ctrl+O); other details are how many lines of it a box shows (below
// previewLines, with no line saying how many it leaves out).
const detailFull = -1

// renderToolBox draws a call: its state, the call as the tool renders it,
// and its output, within width columns: while it runs, the last lines;
// done, the first ones (a command's last ones: they tell how it went).
// detail is how many lines of output it shows (0: the call alone), or
// detailFull for all of it, wrapped. The call and the output are shown
// with their controls as text (termtext).
func renderToolBox(b *toolBox, def tools.Definition, width, detail int, spin string, th theme) string {
	return layoutToolBox(b, def, b.body(def, detail, th), width, detail, spin, th)
}

// body is b's output folded to detail (renderToolBox).
func (b *toolBox) body(def tools.Definition, detail int, th theme) string {
	if b.folds.bodies == nil || b.folds.state != b.state || b.folds.output != b.output {
		b.folds.state, b.folds.output, b.folds.bodies = b.state, b.output, map[int]string{}
	}
	if body, ok := b.folds.bodies[detail]; ok {
		return body
	}
	text, tail := boxOutput(b, def, th)
	body := strings.TrimRight(text, "\n")
	switch {
	case detail == detailFull:
	case detail == 0:
		body = ""
	case detail < previewLines:
		// (Shrunk to fit the screen, a box shows lines of output
		// rather than how many it leaves out.)
		lines := strings.Split(body, "\n")
		if len(lines) > detail && tail {
			lines = lines[len(lines)-detail:]
		} else if len(lines) > detail {
			lines = lines[:detail]
		}
		body = strings.Join(lines, "\n")
	case tail:
		body = tools.FoldTail(text, detail, th.tools)
	default:
		body = tools.Fold(text, detail, th.tools)
	}
	body = strings.TrimRight(body, "\n")
	b.folds.bodies[detail] = body
	return body
}

// boxOutput is a box's output as text, with controls as text, and
// whether it folds to its last lines (a running tool's, a command's).
func boxOutput(b *toolBox, def tools.Definition, th theme) (text string, tail bool) {
	switch {
	case b.state == toolRunning:
		return termtext.String(b.output), true
	case b.state == toolPending:
		return "", false
	case b.name == "bash":
		return termtext.String(b.result.Content.Text()), true
	case def.RenderResult == nil:
		return termtext.String(b.result.Content.Text()), false
	}
	return tools.RenderResult(def, b.result, th.tools), false
}

// layoutToolBox draws a box with its output folded to detail (body).
func layoutToolBox(b *toolBox, def tools.Definition, body string, width, detail int, spin string, th theme) string {
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
	if body != "" {
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
		if detail != detailFull || i == 0 {
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
	// A long message (a paste) shows its start: it went to the model
	// whole, and printing hundreds of rows a few at a time, as the
	// scrollback takes them, would keep the terminal busy for seconds.
	if len(out) > userFoldRows {
		more := len(out) - userShownRows
		out = append(out[:userShownRows], th.dim.Render("  … "+tools.Count(more, "more line", "more lines")+" (sent whole)"))
	}
	return strings.Join(out, "\n")
}

// A user message longer than userFoldRows rows shows its first
// userShownRows.
const (
	userFoldRows  = 40
	userShownRows = 30
)

// answerStyle and answerLightStyle are Glamour's dark and light styles
// with the body text in the terminal's own colour: the dark style's grey
// (252) cannot be read on a light background, nor the light one's (234)
// on a dark one, whichever the detection took.
var answerStyle, answerLightStyle = func() (glamouransi.StyleConfig, glamouransi.StyleConfig) {
	dark, light := styles.DarkStyleConfig, styles.LightStyleConfig
	dark.Document.Color, light.Document.Color = nil, nil
	return dark, light
}()

// markdown renders an answer's Markdown for the terminal (code
// highlighted when in colour), wrapped to width; the text as it is when
// rendering fails. Controls in the text are shown as text (termtext)
// before it is rendered.
func markdown(text string, width int, th theme) string {
	text = wrapCode(termtext.String(text), max(width-8, 20))
	parts, isTable := splitTables(text)
	var out []string
	for i, p := range parts {
		switch {
		case isTable[i]:
			out = append(out, renderTable(p, width, th))
		case strings.TrimSpace(p) != "":
			out = append(out, glamourRender(p, width, th))
		}
	}
	return strings.Join(out, "\n\n")
}

// glamourRender renders Markdown with Glamour, its padding taken off.
func glamourRender(text string, width int, th theme) string {
	style := glamour.WithStandardStyle("notty")
	switch {
	case th.color && th.light:
		style = glamour.WithStyles(answerLightStyle)
	case th.color:
		style = glamour.WithStyles(answerStyle)
	}
	r, err := glamour.NewTermRenderer(style, glamour.WithWordWrap(max(width-2, 20)), glamour.WithPreservedNewLines())
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

// wrapCode readies the code blocks of Markdown text for a terminal width
// columns wide: tabs become 4 spaces, and a line longer than width goes
// on under itself, indented as it was and 2 more, where Glamour would
// start its continuation at the block's left edge and lose the
// indentation that code reads by.
func wrapCode(text string, width int) string {
	lines := strings.Split(text, "\n")
	var out []string
	fence := ""
	for _, line := range lines {
		trimmed := strings.TrimLeft(line, " ")
		switch {
		case fence == "" && (strings.HasPrefix(trimmed, "```") || strings.HasPrefix(trimmed, "~~~")):
			fence = trimmed[:3]
			out = append(out, line)
			continue
		case fence != "" && strings.HasPrefix(trimmed, fence):
			fence = ""
			out = append(out, line)
			continue
		case fence == "":
			out = append(out, line)
			continue
		}
		line = strings.ReplaceAll(line, "\t", "    ")
		indent := line[:len(line)-len(strings.TrimLeft(line, " "))]
		for first := true; ansi.StringWidth(line) > width; first = false {
			cut := ansi.Truncate(line, width, "")
			if first || strings.TrimSpace(cut) != "" {
				out = append(out, cut)
			}
			rest := strings.TrimPrefix(line, cut)
			line = indent + "  " + rest
			if ansi.StringWidth(indent)+2 >= width {
				line = rest // (indented past the width: no room to keep it)
			}
		}
		out = append(out, line)
	}
	return strings.Join(out, "\n")
}
