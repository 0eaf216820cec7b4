package tui

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/pi-remote/pi-remote/loop"
)

// runningBoxes is a transcript with n tools running, each with 12 lines
// of output.
func runningBoxes(t testing.TB, n int) *transcript {
	tr := &transcript{tools: definitions(t)}
	var output []string
	for i := 1; i <= 12; i++ {
		output = append(output, fmt.Sprintf("out %d", i))
	}
	for i := range n {
		id := fmt.Sprintf("c%d", i)
		tr.event(loop.ToolExecutionStart{ToolCallID: id, ToolName: "bash", Args: []byte(`{"command":"loop ` + id + `"}`)}, frame{})
		tr.event(loop.ToolExecutionUpdate{ToolCallID: id, ToolName: "bash", PartialResult: loop.TextResult(strings.Join(output, "\n"))}, frame{})
	}
	return tr
}

// The live part never takes more lines than it is given: the boxes show
// fewer lines of output, then their calls alone, then the first of them
// and how many more run.
func TestFitLivePart(t *testing.T) {
	f := frame{cols: 79, th: newTheme(false), spin: "⠋"}
	for _, tc := range []struct {
		name        string
		boxes, room int
		want        []string // in the view
		notWant     []string
	}{
		{"all of it fits", 3, 30, []string{"… 7 earlier lines", "out 8", "out 12"}, nil},
		{"fewer lines of output", 3, 12, []string{"out 10", "out 12"}, []string{"out 9", "earlier lines"}},
		{"the last line each", 8, 16, []string{"$ loop c7", "out 12"}, []string{"out 11", "earlier lines"}},
		{"the calls alone", 4, 5, []string{"$ loop c0", "$ loop c3"}, []string{"out"}},
		{"and how many more run", 8, 4, []string{"$ loop c0", "$ loop c2", "… 5 more running"}, []string{"$ loop c3", "out"}},
		{"one line", 8, 1, []string{"… 8 more running"}, []string{"$ loop"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr := runningBoxes(t, tc.boxes)
			view := strings.Join(tr.view(true, f, tc.room), "\n")
			assert.LessOrEqual(t, lineCount(view), tc.room, "fits:\n%s", view)
			for _, w := range tc.want {
				assert.Contains(t, view, w)
			}
			for _, w := range tc.notWant {
				assert.NotContains(t, view, w)
			}
		})
	}
}

// However many tools run, the whole view fits on the screen, editor and
// footer included, with the rows print needs to spare: a taller one
// would go to the scrollback on every redraw.
func TestViewFitsTheScreen(t *testing.T) {
	for _, n := range []int{1, 3, 4, 8, 30} {
		for _, height := range []int{10, 24, 30} {
			h := newHarness(t, Options{Tools: definitions(t)})
			h.m.height = height
			h.m.transcript = *runningBoxes(t, n)
			h.m.transcript.tools = h.m.o.Tools
			h.m.running = true
			view := h.view()
			assert.LessOrEqual(t, lineCount(view), height-h.m.printRows(), "%d tools in %d rows:\n%s", n, height, view)
			assert.Contains(t, view, "Esc aborts", "the status line stays")
			h.m.transcript.toggleExpanded()
			view = h.view()
			assert.LessOrEqual(t, lineCount(view), height-h.m.printRows(), "%d tools in %d rows, in full:\n%s", n, height, view)
		}
	}
}

// The view is drawn on every keystroke: with 8 tools running, each with
// a long output, at 80x24.
func BenchmarkViewRunningTools(b *testing.B) {
	m := newModel(Options{}, newTheme(false))
	m.transcript = *runningBoxes(b, 8)
	long := strings.Repeat("a line of output from a busy build step\n", 2000)
	for _, box := range m.transcript.boxes {
		box.output = long
	}
	m.running = true
	for b.Loop() {
		m.View()
	}
}

// Text printed above a full live part goes out in pieces short enough
// that the terminal, scrolling each in, keeps the live part on screen.
func TestPrintPiecesFit(t *testing.T) {
	h := newHarness(t, Options{Tools: definitions(t)})
	h.m.height = 24
	h.m.transcript = *runningBoxes(t, 8)
	h.m.transcript.tools = h.m.o.Tools
	h.m.running = true
	lines := make([]string, 10)
	for i := range lines {
		lines[i] = fmt.Sprintf("printed %d", i)
	}
	h.run(h.m.print(strings.Join(lines, "\n")))
	assert.Equal(t, strings.Join(lines, "\n"), strings.Join(h.printed, "\n"), "all of it, in order")
	for _, p := range h.printed {
		assert.LessOrEqual(t, lineCount(p)+lineCount(h.view()), 24, "a piece and the live part fit: %q", p)
	}
}
