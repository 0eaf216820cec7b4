package tui

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/pi-remote/pi-remote/internal/termtext"
)

// The editor's completions: what is offered for the word at the end of
// its text, moved through with Up and Down, taken with Tab (or Enter, for
// a command).

// maxCompletions is how many completions are shown at once.
const maxCompletions = 8

// complete offers completions for what is being typed at the end of the
// editor: a slash command (commands lists them), or an @path on the host
// (asked in the background; a compMsg brings them).
func (e *editor) complete(commands func() []string) tea.Cmd {
	value := e.ta.Value()
	token := value[strings.LastIndexAny(value, " \n")+1:]
	if token == e.token {
		return nil
	}
	e.token, e.comps, e.compSel = token, nil, 0
	// A query for an earlier word is no longer wanted: it stops, rather
	// than go on searching the host.
	if e.stopQuery != nil {
		e.stopQuery()
		e.stopQuery = nil
	}
	switch {
	case strings.HasPrefix(token, "/") && token == value:
		for _, name := range commands() {
			if strings.HasPrefix("/"+name, token) {
				e.comps = append(e.comps, "/"+name)
			}
		}
		sort.Strings(e.comps)
	case strings.HasPrefix(token, "@") && e.completePath != nil:
		prefix := strings.TrimPrefix(token, "@")
		completePath := e.completePath
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		e.stopQuery = cancel
		return func() tea.Msg {
			defer cancel()
			items := completePath(ctx, prefix)
			for i, it := range items {
				items[i] = "@" + it
			}
			return compMsg{token: token, items: items}
		}
	}
	return nil
}

// offered takes the completions that came for token, if it is still the
// word being completed.
func (e *editor) offered(msg compMsg) {
	if msg.token == e.token {
		e.comps, e.compSel = msg.items, 0
	}
}

// accept puts a completion in place of the token it completes.
func (e *editor) accept(c string) {
	defer e.keep(e.snapshot())
	value := e.ta.Value()
	value = value[:len(value)-len(e.token)] + c
	if !strings.HasSuffix(c, "/") {
		value += " "
	}
	e.ta.SetValue(value)
	e.ta.CursorEnd()
}

// endCompletion closes the completions as the text is sent (Enter): a
// half-typed command becomes the one highlighted.
func (e *editor) endCompletion() {
	if len(e.comps) > 0 && strings.HasPrefix(e.token, "/") {
		e.accept(e.comps[e.compSel])
	}
	e.comps, e.token = nil, ""
	if e.stopQuery != nil {
		e.stopQuery()
		e.stopQuery = nil
	}
}

// completionView lists the completions offered, the highlighted one
// marked, each cut to width (nothing above the editor may wrap).
func (e *editor) completionView(th theme, width int) []string {
	lines := e.completionLines(th)
	for i, l := range lines {
		lines[i] = ansi.Truncate(l, width, "…")
	}
	return lines
}

func (e *editor) completionLines(th theme) []string {
	var lines []string
	for i, c := range e.comps {
		c = termtext.String(c) // a file name on the host
		if i == maxCompletions {
			lines = append(lines, th.dim.Render(fmt.Sprintf("  … %d more", len(e.comps)-i)))
			break
		}
		about := ""
		if e.describe != nil && strings.HasPrefix(c, "/") {
			if d := e.describe(c); d != "" {
				about = "  " + d
			}
		}
		if i == e.compSel {
			lines = append(lines, th.accent.Render("▸ "+c)+th.dim.Render(about+"  (Tab)"))
		} else {
			lines = append(lines, th.dim.Render("  "+c+about))
		}
	}
	return lines
}
