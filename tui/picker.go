package tui

import (
	"fmt"
	"strings"
	"unicode/utf8"

	tea "charm.land/bubbletea/v2"

	"github.com/pi-remote/pi-remote/internal/termtext"
)

// Choice is one item of a picker: what it shows and what it stands for.
type Choice struct {
	Label string
	Value string
	// Text, for /fork, is the message forked from, whole: it goes back in
	// the editor.
	Text string
}

// picker is a list to choose from, shown above the editor: typing
// filters it, Up/Down (PgUp/PgDn: a screenful) move, Enter picks, Esc
// closes.
type picker struct {
	title  string
	all    []Choice
	filter string
	sel    int
	top    int // the first of the choices shown (a long list scrolls)
	pick   func(m *model, c Choice) tea.Cmd
}

// window is the first of n choices to show so that the selection is
// among them: top, unless that leaves the selection out.
func (p *picker) window(n int) int {
	top := p.top
	if p.sel < top {
		top = p.sel
	}
	if p.sel >= top+maxPicker {
		top = p.sel - maxPicker + 1
	}
	return max(0, min(top, n-maxPicker))
}

// maxPicker is how many choices a picker shows at once.
const maxPicker = 10

func (p *picker) shown() []Choice {
	if p.filter == "" {
		return p.all
	}
	var out []Choice
	f := strings.ToLower(p.filter)
	for _, c := range p.all {
		if strings.Contains(strings.ToLower(c.Label), f) {
			out = append(out, c)
		}
	}
	return out
}

// key handles a key while the picker is open.
func (m *model) pickerKey(k tea.KeyPressMsg) tea.Cmd {
	p := m.picker
	shown := p.shown()
	p.top = p.window(len(shown)) // (the rows on the screen now)
	switch k.String() {
	case "esc", "alt+esc", "ctrl+c": // (Alt+Esc: two Esc read as one key)
		m.picker = nil
	case "up":
		if len(shown) > 0 {
			p.sel = (p.sel + len(shown) - 1) % len(shown)
		}
	case "down", "tab":
		if len(shown) > 0 {
			p.sel = (p.sel + 1) % len(shown)
		}
	case "pgup":
		p.sel = max(p.sel-maxPicker, 0)
	case "pgdown":
		p.sel = max(min(p.sel+maxPicker, len(shown)-1), 0)
	case "enter":
		m.picker = nil
		if len(shown) == 0 {
			return nil
		}
		return p.pick(m, shown[min(p.sel, len(shown)-1)])
	case "backspace":
		if p.filter != "" {
			_, size := utf8.DecodeLastRuneInString(p.filter)
			p.filter = p.filter[:len(p.filter)-size]
			p.sel = 0
		}
	default:
		if k.Text != "" {
			p.filter += k.Text
			p.sel = 0
		}
	}
	p.top = p.window(len(p.shown()))
	return nil
}

func (m *model) pickerView() []string {
	p := m.picker
	shown := p.shown()
	lines := []string{m.th.bold.Render(termtext.String(p.title)) + m.th.dim.Render("  (type to filter, Enter picks, Esc closes)")}
	if p.filter != "" {
		lines = append(lines, m.th.dim.Render("filter: ")+termtext.String(p.filter))
	}
	start := p.window(len(shown))
	if start > 0 {
		lines = append(lines, m.th.dim.Render(fmt.Sprintf("  … %d more above", start)))
	}
	for i := start; i < len(shown) && i < start+maxPicker; i++ {
		// (A label may be a session's first prompt.)
		label := termtext.String(firstLine(shown[i].Label))
		if i == p.sel {
			lines = append(lines, m.th.accent.Render("▸ "+label))
		} else {
			lines = append(lines, "  "+label)
		}
	}
	if len(shown) == 0 {
		lines = append(lines, m.th.dim.Render("  nothing matches"))
	} else if len(shown) > start+maxPicker {
		lines = append(lines, m.th.dim.Render(fmt.Sprintf("  … %d more", len(shown)-start-maxPicker)))
	}
	return lines
}
