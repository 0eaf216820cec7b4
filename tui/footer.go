package tui

import (
	"fmt"
	"strings"

	"charm.land/lipgloss/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/pi-remote/pi-remote/agent"
	"github.com/pi-remote/pi-remote/internal/termtext"
)

// footer is the live part's frame around the editor: below it, the info
// line (hosts and their connection, the working directory, the model,
// tokens, cost, how full the context is); above it, the status line (a
// notice, or what the agent is doing).
type footer struct {
	hosts    []hostState // the default first
	cwd      string
	branch   string
	model    string
	thinking string
	usage    agent.Totals
	context  int // tokens
	window   int
	auto     bool // automatic compaction on

	notice string // "" when there is none
}

type hostState struct {
	name string
	up   bool
}

// setUsage shows the session's tokens and cost, and how full the context
// is.
func (f *footer) setUsage(usage agent.Totals, context, window int) {
	f.usage, f.context, f.window = usage, context, window
}

// setLink shows a host's connection lost (up false) or back.
func (f *footer) setLink(host string, up bool) {
	for i := range f.hosts {
		if f.hosts[i].name == host {
			f.hosts[i].up = up
		}
	}
}

// setDefaultHost puts the host named first, where the default is shown.
func (f *footer) setDefaultHost(name string) {
	for i, h := range f.hosts {
		if h.name == name {
			f.hosts = append([]hostState{h}, append(f.hosts[:i:i], f.hosts[i+1:]...)...)
			break
		}
	}
}

// status draws the status line above the editor: the notice, or while a
// run goes on what the keys do then; "" for neither.
func (f *footer) status(running bool, frame string, th theme) string {
	switch {
	case f.notice != "":
		return th.warn.Render(termtext.String(f.notice))
	case running:
		return th.dim.Render(frame + " working — Esc aborts, Enter steers, Alt+Enter queues a follow-up")
	}
	return ""
}

// view draws the info line: hosts and their connection, the working
// directory, model and thinking level, tokens, cost, and how full the
// context is (warning colour past 70 %, error past 90 %). On a narrow
// terminal it leaves out what matters least. Names and paths (a host's)
// are shown with their controls as text.
func (f *footer) view(width int, th theme) string {
	var hosts []string
	for _, h := range f.hosts {
		dot := th.ok.Render("●")
		if !h.up {
			dot = th.warn.Render("◌ reconnecting")
		}
		hosts = append(hosts, termtext.String(h.name)+" "+dot)
	}
	pct := 0
	if f.window > 0 {
		pct = f.context * 100 / f.window
	}
	ctx := fmt.Sprintf("ctx %d%% of %s", pct, short(f.window))
	switch {
	case pct > 90:
		ctx = th.bad.Render(ctx)
	case pct > 70:
		ctx = th.warn.Render(ctx)
	}
	model := termtext.String(f.model)
	if f.thinking != "" && f.thinking != "off" {
		model += " · think " + f.thinking
	}
	tokens := fmt.Sprintf("↑%s ↓%s", short(f.usage.Input+f.usage.CacheRead+f.usage.CacheWrite), short(f.usage.Output))
	if f.usage.CacheRead > 0 {
		tokens += fmt.Sprintf(" (cache %s)", short(f.usage.CacheRead))
	}
	cost := fmt.Sprintf("$%.3f", f.usage.Cost)
	auto := ""
	if f.auto {
		auto = "auto-compact"
	}
	// By importance: what does not fit is left out from the end.
	cwd := f.cwd
	if f.branch != "" {
		cwd += " (" + f.branch + ")"
	}
	cwd = termtext.String(cwd)
	parts := []string{strings.Join(hosts, " "), ctx, model, cost, tokens, cwd, auto}
	sep := th.dim.Render(" · ")
	for n := len(parts); n > 0; n-- {
		line := strings.Join(inDisplayOrder(parts[:n]), sep)
		if lipgloss.Width(line) <= width || n == 1 {
			return ansi.Truncate(line, width, "…")
		}
	}
	return ""
}

// inDisplayOrder puts the footer's parts (by importance) in the order
// they are shown: hosts, cwd, model, tokens, cost, context, auto-compact;
// empty ones go.
func inDisplayOrder(parts []string) []string {
	var out []string
	for _, i := range []int{0, 5, 2, 4, 3, 1, 6} {
		if i < len(parts) && parts[i] != "" {
			out = append(out, parts[i])
		}
	}
	return out
}

// short writes a token count compactly: 950, 12.3k, 1.2M.
func short(n int) string {
	switch {
	case n >= 1_000_000:
		return strings.TrimSuffix(fmt.Sprintf("%.1f", float64(n)/1e6), ".0") + "M"
	case n >= 1000:
		return strings.TrimSuffix(fmt.Sprintf("%.1f", float64(n)/1e3), ".0") + "k"
	}
	return fmt.Sprint(n)
}
