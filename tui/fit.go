package tui

import (
	"fmt"
	"strings"
)

// fit lays out the live part of the transcript in at most room lines:
// the answer being written (its lines), the boxes, the queued messages,
// as parts to join with newlines. When all of it does not fit, the boxes
// show fewer lines of output, then their calls alone; then the answer
// keeps its last lines, the queued messages become one line, and the
// first boxes are shown with how many more there are. (A live part
// taller than the terminal would go to the scrollback on every redraw.)
func (t *transcript) fit(answer, queued []string, f frame, room int) []string {
	if room <= 0 {
		return nil
	}
	details := []int{previewLines, 3, 2, 1, 0}
	if t.expanded {
		details = append([]int{detailFull}, details...)
	}
	var boxes []string
	for _, d := range details {
		// (Folded, a box takes a line for its call and one for each line
		// of its body; in full, at least as many.)
		n := len(answer) + len(queued)
		for _, b := range t.boxes {
			n++
			if body := b.body(t.tools[b.name], d, f.th); body != "" {
				n += lineCount(body)
			}
		}
		if n > room {
			continue
		}
		boxes = boxes[:0]
		n = len(answer) + len(queued)
		for _, b := range t.boxes {
			s := layoutToolBox(b, t.tools[b.name], b.body(t.tools[b.name], d, f.th), f.cols, d, f.spin, f.th)
			boxes = append(boxes, s)
			n += lineCount(s)
		}
		if n <= room {
			return liveParts(answer, boxes, queued)
		}
	}
	// A line a box is still too many.
	boxes = boxes[:0]
	for _, b := range t.boxes {
		boxes = append(boxes, layoutToolBox(b, t.tools[b.name], "", f.cols, 0, f.spin, f.th))
	}
	if len(queued) > 1 {
		queued = []string{f.th.dim.Render("queued: " + plural(len(queued), "message"))}
	}
	need := len(queued)
	if len(boxes) > 0 {
		need++
	}
	if keep := max(room-need, 1); len(answer) > keep {
		answer = answer[len(answer)-keep:]
	}
	if free := room - len(answer) - len(queued); len(boxes) > free {
		shown := max(free-1, 0)
		boxes = append(boxes[:shown], f.th.dim.Render(moreTools(t.boxes[shown:])))
	}
	return liveParts(answer, boxes, queued)
}

func liveParts(answer, boxes, queued []string) []string {
	var parts []string
	if len(answer) > 0 {
		parts = append(parts, strings.Join(answer, "\n"))
	}
	return append(append(parts, boxes...), queued...)
}

// moreTools stands for the boxes that do not fit: "… 3 more running".
func moreTools(boxes []*toolBox) string {
	running := 0
	for _, b := range boxes {
		if b.state == toolRunning {
			running++
		}
	}
	if running == len(boxes) {
		return fmt.Sprintf("… %d more running", running)
	}
	return fmt.Sprintf("… %d more (%d running)", len(boxes), running)
}

func (t *transcript) findBox(id string) *toolBox {
	for _, b := range t.boxes {
		if b.id == id {
			return b
		}
	}
	return nil
}
