package tui

import (
	"strings"
	"testing"

	tea "charm.land/bubbletea/v2"

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
	_, erase := h.m.Update(staleRowsMsg{rows: 2, resize: h.m.resizes})
	assert.NotNil(t, erase)
	_, cmd = h.m.Update(teaSize(50))
	assert.NotNil(t, cmd)
	_, erase = h.m.Update(staleRowsMsg{rows: 2, resize: h.m.resizes - 1})
	assert.Nil(t, erase, "a resize came since: its rows were counted from a frame maybe never drawn")
}

func teaSize(w int) tea.WindowSizeMsg { return tea.WindowSizeMsg{Width: w, Height: 30} }
