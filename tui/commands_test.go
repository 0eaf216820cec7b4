package tui

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// /hotkeys is one table: every description starts in the same column,
// however long a key or a command's usage ("/thinking off|low|medium|high").
func TestHotkeysAligned(t *testing.T) {
	h := newHarness(t, Options{Commands: Commands{SetModel: func(string) error { return nil }, SetThinking: func(string) error { return nil }}})
	h.typeText("/hotkeys")
	h.do(enter)
	out := strings.Join(h.printed, "\n")
	require.Contains(t, out, "/thinking off|low|medium|high")
	column := -1
	for _, line := range strings.Split(out, "\n") {
		if line == "" || !strings.Contains(line, "  ") {
			continue // a heading
		}
		key := strings.Index(line, "  ")
		at := key + len(line[key:]) - len(strings.TrimLeft(line[key:], " "))
		if column < 0 {
			column = at
		}
		assert.Equal(t, column, at, "%q", line)
	}
	assert.Positive(t, column)
}
