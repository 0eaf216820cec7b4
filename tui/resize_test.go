package tui

import (
	"fmt"
	"strings"
	"testing"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/stretchr/testify/assert"
)

// How many rows a narrower terminal adds above the cursor when it
// rewraps the live part: rows wider than the new width, and the cursor's
// own column; trailing blanks (erased, not written) wrap nothing.
func TestRewrappedRows(t *testing.T) {
	row := func(n int) string { return strings.Repeat("x", n) }
	for _, tc := range []struct {
		name        string
		frame       string
		x, y, width int
		want        int
	}{
		{"fits", row(60) + "\n" + row(30) + "\nfooter", 30, 1, 70, 0},
		{"one row wraps", row(96) + "\n" + row(30) + "\nfooter", 30, 1, 70, 1},
		{"three times as wide", row(150) + "\n" + row(10), 10, 1, 50, 2},
		{"rows below the cursor do not count", row(10) + "\n" + row(96), 5, 0, 70, 0},
		{"the cursor's column", row(10) + "\n" + row(96), 90, 1, 70, 1},
		{"trailing blanks", row(60) + strings.Repeat(" ", 39) + "\n" + row(5), 5, 1, 70, 0},
		{"styled", "\x1b[1m" + row(80) + "\x1b[m\n" + row(5), 5, 1, 70, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, rewrappedRows(tc.frame, tc.x, tc.y, tc.width))
		})
	}
}

// Made narrower, the model blanks the rows left above the live part once
// the renderer has repainted; made wider, or at the first size, nothing.
func TestResizeBlanksStaleRows(t *testing.T) {
	h := newHarness(t, Options{})
	_, cmd := h.m.Update(teaSize(100))
	assert.Nil(t, cmd, "the first size is the terminal's own: nothing was drawn at another")
	h.typeText(strings.Repeat("word ", 30))
	_, cmd = h.m.Update(teaSize(120))
	assert.Nil(t, cmd, "wider rewraps nothing")
	_, cmd = h.m.Update(teaSize(60))
	assert.NotNil(t, cmd, "narrower: the stale rows are blanked after the repaint")
	_, ask := h.m.Update(staleRowsMsg{rows: 2, resize: h.m.resizes})
	assert.NotNil(t, ask, "where is the cursor?")
	y := h.m.View().Cursor.Y
	_, erase := h.m.Update(tea.CursorPositionMsg{Y: y + 5})
	assert.Equal(t, "\x1b7"+ansi.CursorUp(y+1)+ansi.EraseEntireLine+ansi.CursorUp(1)+ansi.EraseEntireLine+"\x1b8", rawOf(erase))

	h.m.Update(staleRowsMsg{rows: 2, resize: h.m.resizes})
	_, erase = h.m.Update(tea.CursorPositionMsg{Y: y + 1})
	assert.Equal(t, "\x1b7"+ansi.CursorUp(y+1)+ansi.EraseEntireLine+"\x1b8", rawOf(erase), "one row above the live part: one to blank")
	h.m.Update(staleRowsMsg{rows: 2, resize: h.m.resizes})
	_, erase = h.m.Update(tea.CursorPositionMsg{Y: y})
	assert.Nil(t, erase, "the live part at the top of the screen: nothing above it to blank")

	_, cmd = h.m.Update(teaSize(50))
	assert.NotNil(t, cmd)
	_, ask = h.m.Update(staleRowsMsg{rows: 2, resize: h.m.resizes - 1})
	assert.Nil(t, ask, "a resize came since: its rows were counted from a frame maybe never drawn")
}

// rawOf is the text a tea.Raw command writes.
func rawOf(cmd tea.Cmd) string {
	if cmd == nil {
		return ""
	}
	raw, _ := cmd().(tea.RawMsg)
	return fmt.Sprint(raw.Msg)
}

func teaSize(w int) tea.WindowSizeMsg { return tea.WindowSizeMsg{Width: w, Height: 30} }

// A real terminal's first frame waits for its size: drawn at the defaults
// (80×24, an editor of the text area's default size) and redrawn at the
// terminal's, the first frame could stay in the scrollback.
func TestFirstFrameWaitsForTheSize(t *testing.T) {
	u := New(Options{Model: "m"})
	assert.Empty(t, u.m.View().Content, "no frame before the size is known")
	u.m.Update(tea.WindowSizeMsg{Width: 80, Height: 24})
	content := ansi.Strip(u.m.View().Content)
	assert.Contains(t, content, "Ask, or / for commands (Ctrl+D quits)", "the editor, one row at 80 columns")
	assert.Equal(t, 1, strings.Count(content, "›"), content)
}
