package tui

import (
	"strings"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"
)

// A terminal made narrower rewraps the rows already on it: a row of the
// live part wider than the new width takes two rows or more. The renderer
// finds the live part's top by counting up from the cursor, so when rows
// above the cursor grew it repaints that many rows too low, and the top of
// the old frame (the first rows of a prompt being written) stays above
// the new one, to scroll into the scrollback as if it had been sent.
// resized counts those rows; once the renderer has repainted, eraseStale
// and blankStale blank those still on the screen.

// staleRowsMsg asks to blank the rows a narrowed terminal left above the
// live part, after the resize numbered resize.
type staleRowsMsg struct{ rows, resize int }

// staleDelay is how long after a resize the stale rows are blanked: the
// renderer repaints within a frame (1/60 s), and the rows are found from
// where it put the live part.
const staleDelay = 100 * time.Millisecond

// resized takes the terminal's new size.
func (m *model) resized(msg tea.WindowSizeMsg) tea.Cmd {
	var cmd tea.Cmd
	m.resizes++
	if m.sized && msg.Width < m.width {
		if old := m.View(); old.Cursor != nil {
			if k := rewrappedRows(old.Content, old.Cursor.X, old.Cursor.Y, msg.Width); k > 0 {
				n := m.resizes
				cmd = tea.Tick(staleDelay, func(time.Time) tea.Msg { return staleRowsMsg{rows: k, resize: n} })
			}
		}
	}
	m.sized, m.waitSize = true, false
	m.width, m.height = msg.Width, msg.Height
	m.editor.setWidth(m.cols())
	return cmd
}

// rewrappedRows is how many rows more than before a terminal width
// columns wide puts between the top of frame (as drawn) and the cursor,
// at column x of row y, once it has rewrapped the frame's rows.
func rewrappedRows(frame string, x, y, width int) int {
	lines := strings.Split(frame, "\n")
	k := 0
	for i := 0; i < y && i < len(lines); i++ {
		// (Trailing blanks are erased, not written: they do not wrap.)
		if w := ansi.StringWidth(strings.TrimRight(ansi.Strip(lines[i]), " ")); w > width {
			k += (w - 1) / width
		}
	}
	return k + x/width
}

// eraseStale asks the terminal where its cursor is (blankStale goes on):
// only rows on the screen can be blanked, and a live part at the top of
// the screen has none above it (the terminal moved them to its own
// scrollback). Only for the last resize: while the terminal is dragged
// narrower the frames in between may never have been drawn, and rows
// counted from them could be the scrollback's own.
func (m *model) eraseStale(msg staleRowsMsg) tea.Cmd {
	if msg.rows <= 0 || msg.resize != m.resizes {
		return nil
	}
	m.staleRows = msg.rows
	return tea.RequestCursorPosition
}

// blankStale blanks the stale rows above the live part that are on the
// screen, now that the terminal said where its cursor is (the cursor is
// saved and put back, so the renderer's idea of it holds).
func (m *model) blankStale(at tea.CursorPositionMsg) tea.Cmd {
	rows := m.staleRows
	m.staleRows = 0
	v := m.View()
	if v.Cursor == nil || rows <= 0 {
		return nil
	}
	// The live part's top is at.Y-v.Cursor.Y: no more rows above it.
	rows = min(rows, at.Y-v.Cursor.Y)
	if rows <= 0 {
		return nil
	}
	var b strings.Builder
	b.WriteString(ansi.SaveCursor + ansi.CursorUp(v.Cursor.Y+1) + ansi.EraseEntireLine)
	for range rows - 1 {
		b.WriteString(ansi.CursorUp(1) + ansi.EraseEntireLine)
	}
	b.WriteString(ansi.RestoreCursor)
	return tea.Raw(b.String())
}
