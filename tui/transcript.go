package tui

import (
	"strings"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/pi-remote/pi-remote/agent"
	"github.com/pi-remote/pi-remote/internal/termtext"
	"github.com/pi-remote/pi-remote/loop"
	"github.com/pi-remote/pi-remote/tools"
)

// transcript is the conversation as the terminal shows it. What is
// finished goes to the scrollback through print; what can still change is
// live: the answer being written (its thinking folded), the tools that
// run (and finished ones waiting for the calls before them), and the
// messages queued for the agent. The live part is fitted to the rows it
// is given (fit).
type transcript struct {
	tools map[string]tools.Definition // render calls and results

	stream       string // the answer being written
	streamed     int    // how much of stream is in the scrollback
	thought      int    // lines of thinking in the answer being written
	thoughtText  string // that thinking
	thoughtShown bool
	thinking     bool // the model is thinking (no text yet)
	showThinking bool // Ctrl+T: thinking shown, not folded
	// boxes are the calls not in the scrollback yet, in call order:
	// pending, running, and finished ones that wait for those before them.
	boxes    []*toolBox
	queued   []string // steering and follow-up messages not delivered yet
	expanded bool     // Ctrl+O: tool output in full

	lastAnswer string // for /copy
}

// printer puts text in the scrollback, above the live part (model.print).
type printer func(text string) tea.Cmd

// frame is how the transcript is drawn at one moment: the width, the
// theme, the spinner's frame, and where finished text goes.
type frame struct {
	cols  int
	th    theme
	spin  string
	print printer
}

// event shows one of the loop's events: a message or a tool call.
func (t *transcript) event(e loop.Event, f frame) tea.Cmd {
	switch e := e.(type) {
	case loop.MessageStart:
		if _, ok := e.Message.(*loop.AssistantMessage); ok {
			t.thinking = true
			t.stream, t.streamed, t.thought, t.thoughtText, t.thoughtShown = "", 0, 0, "", false
		}
	case loop.MessageUpdate:
		return t.delta(e.Delta, f)
	case loop.MessageEnd:
		switch msg := e.Message.(type) {
		case *loop.UserMessage:
			return t.userMessage(msg, f)
		case *loop.AssistantMessage:
			return t.answer(msg, f)
		}
	case loop.ToolExecutionStart:
		if b := t.findBox(e.ToolCallID); b != nil {
			b.state, b.args = toolRunning, e.Args
		} else {
			t.boxes = append(t.boxes, &toolBox{id: e.ToolCallID, name: e.ToolName, args: e.Args, state: toolRunning})
		}
	case loop.ToolExecutionUpdate:
		if b := t.findBox(e.ToolCallID); b != nil {
			b.output = e.PartialResult.Content.Text()
		}
	case loop.ToolExecutionEnd:
		if b := t.findBox(e.ToolCallID); b != nil {
			b.result, b.state = e.Result, toolDone
			if e.IsError {
				b.state = toolFailed
			}
			return t.flush(f)
		}
	}
	return nil
}

// delta adds a piece of the answer being written. Blocks that can no
// longer change go to the scrollback rendered; the live part is only the
// one being written.
func (t *transcript) delta(d loop.StreamEvent, f frame) tea.Cmd {
	switch d := d.(type) {
	case *loop.ThinkingDelta:
		t.thoughtText += d.Delta
		if s := strings.TrimSpace(t.thoughtText); s != "" {
			t.thought = strings.Count(s, "\n") + 1
		}
	case *loop.TextDelta:
		t.thinking = false
		var cmds []tea.Cmd
		if t.thought > 0 && !t.thoughtShown {
			cmds = append(cmds, f.print(t.thinkingNote(f)))
			t.thoughtShown = true
		}
		t.stream += d.Delta
		if cut := stableCut(t.stream[t.streamed:]); cut > 0 {
			cmds = append(cmds, f.print(markdown(t.stream[t.streamed:t.streamed+cut], f.cols, f.th)))
			t.streamed += cut
		}
		return tea.Sequence(cmds...)
	}
	return nil
}

// userMessage prints a user message delivered; a queued one leaves the
// queue.
func (t *transcript) userMessage(msg *loop.UserMessage, f frame) tea.Cmd {
	text := msg.Content.Text()
	for i, q := range t.queued {
		if q == text {
			t.queued = append(t.queued[:i], t.queued[i+1:]...)
			break
		}
	}
	return f.print(renderUser(text, f.cols, f.th))
}

// answer ends the answer being written: what is left of it (all of it
// when it was not streamed) goes to the scrollback, with the folded
// thinking and an error; the calls it asks for wait live until they
// start.
func (t *transcript) answer(msg *loop.AssistantMessage, f frame) tea.Cmd {
	t.thinking = false
	var out, texts []string
	for _, c := range msg.Content {
		switch c := c.(type) {
		case *loop.Text:
			texts = append(texts, c.Text)
		case *loop.Thinking:
			if t.thought == 0 && strings.TrimSpace(c.Thinking) != "" {
				t.thought = strings.Count(strings.TrimSpace(c.Thinking), "\n") + 1
				t.thoughtText = c.Thinking
			}
		}
	}
	if t.thought > 0 && !t.thoughtShown {
		out = append(out, t.thinkingNote(f))
	}
	for _, c := range msg.ToolCalls() {
		if t.findBox(c.ID) == nil && msg.StopReason != loop.StopLength {
			t.boxes = append(t.boxes, &toolBox{id: c.ID, name: c.Name, args: c.Arguments, state: toolPending})
		}
	}
	rest := t.stream[t.streamed:]
	if t.stream == "" {
		rest = strings.Join(texts, "") // not streamed
	}
	if strings.TrimSpace(rest) != "" {
		out = append(out, markdown(rest, f.cols, f.th))
	}
	// (/copy copies the answer as it was shown: controls as text, so that
	// pasting it cannot end a bracketed paste.)
	if all := strings.Join(texts, ""); strings.TrimSpace(all) != "" {
		t.lastAnswer = termtext.String(all)
	}
	t.stream, t.streamed = "", 0
	switch {
	case agent.IsOverflowRefusal(msg):
		// The session compacts and tries again: not (yet) the run's error.
		out = append(out, f.th.dim.Render("the context did not fit: "+termtext.String(msg.ErrorMessage)))
	case msg.ErrorMessage != "" && msg.StopReason != loop.StopAborted:
		out = append(out, f.th.bad.Render("error: "+termtext.String(msg.ErrorMessage)))
	}
	if len(out) > 0 {
		return f.print(strings.Join(out, "\n"))
	}
	return nil
}

// endRun sends what is still live to the scrollback when a run ends: the
// tools (after an abort, as they are), the rest of the answer, and the
// queued messages, which were not delivered.
func (t *transcript) endRun(f frame) []tea.Cmd {
	var cmds []tea.Cmd
	for _, b := range t.boxes {
		if b.state == toolRunning || b.state == toolPending {
			b.state = toolFailed
			b.result = loop.TextResult("interrupted")
		}
		cmds = append(cmds, f.print(t.box(b, f)))
	}
	t.boxes = nil
	if rest := t.stream[t.streamed:]; strings.TrimSpace(rest) != "" {
		cmds = append(cmds, f.print(markdown(rest, f.cols, f.th)))
	}
	t.stream, t.streamed = "", 0
	for _, q := range t.queued {
		cmds = append(cmds, f.print(f.th.dim.Render("(not delivered) ")+renderUser(q, f.cols, f.th)))
	}
	t.queued = nil
	return cmds
}

// flush sends the finished boxes at the head of the calls to the
// scrollback: a box goes there once those asked for before it have, so
// that the scrollback keeps the order of the calls.
func (t *transcript) flush(f frame) tea.Cmd {
	var cmds []tea.Cmd
	for len(t.boxes) > 0 && (t.boxes[0].state == toolDone || t.boxes[0].state == toolFailed) {
		cmds = append(cmds, f.print(t.box(t.boxes[0], f)))
		t.boxes = t.boxes[1:]
	}
	return tea.Sequence(cmds...)
}

// toggleExpanded shows tool output in full or folded (Ctrl+O): the boxes
// in the live part change in place, and boxes go to the scrollback so
// from then on. (What is in the scrollback already stays as it was: a
// terminal cannot change it.)
func (t *transcript) toggleExpanded() {
	t.expanded = !t.expanded
}

// view draws the live part of the transcript in at most room lines: the
// answer being written (or, while the model only thinks, a spinner), the
// tools not in the scrollback yet and the queued messages (fit).
func (t *transcript) view(running bool, f frame, room int) []string {
	var answer []string
	if live := t.stream[t.streamed:]; strings.TrimSpace(live) != "" {
		// (Wrapped at the width, words kept whole where they fit: the
		// paragraph being written shows whole, its last 12 rows.)
		wrapped := ansi.Wrap(termtext.String(strings.TrimRight(live, "\n")), f.cols, "")
		answer = strings.Split(termtext.LastLines(wrapped, 12), "\n")
	} else if t.thinking && running {
		answer = []string{f.th.dim.Render(f.spin + " thinking…")}
		if t.showThinking && strings.TrimSpace(t.thoughtText) != "" {
			thought := ansi.Wrap(termtext.String(strings.TrimSpace(t.thoughtText)), f.cols, "")
			for _, l := range strings.Split(termtext.LastLines(thought, 6), "\n") {
				answer = append(answer, f.th.dim.Render(l))
			}
		}
	}
	var queued []string
	for _, q := range t.queued {
		queued = append(queued, f.th.dim.Render("queued: ")+termtext.String(firstLine(q)))
	}
	return t.fit(answer, queued, f, room)
}

// box draws b as it goes to the scrollback.
func (t *transcript) box(b *toolBox, f frame) string {
	detail := previewLines
	if t.expanded {
		detail = detailFull
	}
	return renderToolBox(b, t.tools[b.name], f.cols, detail, f.spin, f.th)
}

// thinkingNote stands for the model's thinking: folded, or with Ctrl+T
// the thinking itself, dim.
func (t *transcript) thinkingNote(f frame) string {
	if t.showThinking && strings.TrimSpace(t.thoughtText) != "" {
		return f.th.dim.Render(ansi.Wrap(termtext.String(strings.TrimSpace(t.thoughtText)), f.cols, ""))
	}
	return f.th.dim.Render("(thought for " + tools.Count(t.thought, "line", "lines") + " — folded)")
}

// stableCut is how much of streamed Markdown can no longer change: up to
// the last blank line outside a code fence (0: none yet).
func stableCut(s string) int {
	cut, fences, start := 0, 0, 0
	for i := 0; i < len(s); i++ {
		if s[i] != '\n' {
			continue
		}
		line := strings.TrimSpace(s[start:i])
		if strings.HasPrefix(line, "```") || strings.HasPrefix(line, "~~~") {
			fences++
		}
		if line == "" && fences%2 == 0 && i > 0 {
			cut = i + 1
		}
		start = i + 1
	}
	return cut
}
