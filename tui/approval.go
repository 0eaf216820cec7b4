package tui

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/pi-remote/pi-remote/agent/permission"
	"github.com/pi-remote/pi-remote/internal/termtext"
	"github.com/pi-remote/pi-remote/tools"
)

// approval is a tool call waiting for the person's decision (a
// permission.Request). While one waits, it takes the editor's place in
// the live area: the host, the tool, why it asks, and the command or the
// change the call would make; y allows it once, a always (for this
// session), n denies it after the person typed a reason for the model
// (Enter sends it, perhaps empty), Esc denies it at once, Ctrl+C denies
// it and aborts the run. Several wait in turn, the oldest shown.
type approval struct {
	req   permission.Request
	reply chan permission.Answer // buffered: answering never blocks
	// current is the content a write would replace, when replaces
	// (Options.Current): the prompt shows the change, not the content.
	current  string
	replaces bool
	// typing: n was pressed, the reason is being typed.
	typing bool
	reason string
	// body is the command or change as shown, wrapped to bodyWidth.
	body      []string
	bodyWidth int
}

// Messages from an Asker to the program.
type (
	askMsg      struct{ a *approval }
	withdrawMsg struct{ a *approval } // the call was abandoned (its run ended)
)

// errClosed is an Asker's error when the terminal has ended.
var errClosed = errors.New("the terminal has closed")

func newApproval(r permission.Request) *approval {
	return &approval{req: r, reply: make(chan permission.Answer, 1)}
}

// prepare is r ready to be shown: for a write, with the content it
// would replace (read by current, Options.Current, when not nil), read
// now, in the asking goroutine.
func prepare(ctx context.Context, r permission.Request, current func(ctx context.Context, host, path string) (string, bool)) *approval {
	a := newApproval(r)
	if current != nil && strings.EqualFold(r.Tool, "write") && r.Path != "" {
		a.current, a.replaces = current(ctx, r.Host, r.Path)
	}
	return a
}

// ask shows a through send and waits for the person's answer; when ctx
// ends first, the prompt is withdrawn and ctx's error returned; when
// closed is closed (the program ended), errClosed.
func ask(ctx context.Context, send func(tea.Msg), closed <-chan struct{}, a *approval) (permission.Answer, error) {
	send(askMsg{a})
	select {
	case ans := <-a.reply:
		return ans, nil
	case <-ctx.Done():
		send(withdrawMsg{a})
		return permission.Answer{}, ctx.Err()
	case <-closed:
		return permission.Answer{}, errClosed
	}
}

// withdraw takes a away, answered or abandoned.
func (m *model) withdraw(a *approval) {
	for i, w := range m.approvals {
		if w == a {
			m.approvals = append(m.approvals[:i:i], m.approvals[i+1:]...)
			return
		}
	}
}

// answer gives the shown approval ans.
func (m *model) answer(ans permission.Answer) tea.Cmd {
	a := m.approvals[0]
	m.withdraw(a)
	a.reply <- ans
	if ans.Decision == permission.Session {
		return m.print(m.th.dim.Render("allowed for the rest of this session: " + termtext.String(a.req.Tool) + " " +
			termtext.String(firstLine(a.subject())) + " on " + termtext.String(a.req.Host) + " (/session lists the rules)"))
	}
	return nil
}

// approvalKey handles a key while an approval is shown.
func (m *model) approvalKey(k tea.KeyPressMsg) tea.Cmd {
	a := m.approvals[0]
	switch k.String() {
	case "esc", "alt+esc": // (Alt+Esc: two Esc read as one key)
		return m.answer(permission.Answer{Decision: permission.Deny})
	case "ctrl+c":
		cmd := m.answer(permission.Answer{Decision: permission.Deny})
		if m.cancel != nil {
			m.cancel()
			m.footer.notice = "aborting…"
		}
		return cmd
	}
	if a.typing {
		switch k.String() {
		case "enter":
			return m.answer(permission.Answer{Decision: permission.Deny, Reason: strings.TrimSpace(a.reason)})
		case "backspace":
			_, size := utf8.DecodeLastRuneInString(a.reason)
			a.reason = a.reason[:len(a.reason)-size]
		case "ctrl+u":
			a.reason = ""
		default:
			a.reason += k.Text
		}
		return nil
	}
	switch strings.ToLower(k.Text) {
	case "y":
		return m.answer(permission.Answer{Decision: permission.Once})
	case "a":
		return m.answer(permission.Answer{Decision: permission.Session})
	case "n":
		a.typing = true
	}
	return nil
}

// pasteReason adds pasted text to the reason being typed (on one line).
func (a *approval) pasteReason(text string) {
	if a.typing {
		a.reason += strings.NewReplacer("\r\n", " ", "\n", " ", "\r", " ", "\t", " ").Replace(text)
	}
}

// subject is what the call acts on: bash's command, a path tool's path
// (the canonical one, the file the call would change), or else its
// arguments. Not cleaned.
func (a *approval) subject() string {
	var in struct {
		Command string `json:"command"`
		Path    string `json:"path"`
	}
	if err := json.Unmarshal(a.req.Args, &in); err != nil {
		return string(a.req.Args) // (validated before the gate: not seen)
	}
	switch {
	case a.req.Command != "":
		return a.req.Command
	case in.Command != "":
		return in.Command
	case a.req.Path != "":
		return a.req.Path
	case in.Path != "":
		return in.Path
	}
	return string(a.req.Args)
}

// lines is the call's command or change as shown, width columns wide:
// bash's command; a write's new content ("+" lines), or its change to
// the file it replaces (a diff, as an edit's); an edit's
// replacements, each its old text diffed with its new (tools.TextDiff);
// another tool's path or arguments. Every piece is the model's, and
// shown with its controls as text.
func (a *approval) lines(width int, th theme) []string {
	if a.body != nil && a.bodyWidth == width {
		return a.body
	}
	var out []string
	add := func(mark string, style func(...string) string, text string) {
		text = strings.ReplaceAll(termtext.String(text), "\t", "    ")
		for _, l := range strings.Split(text, "\n") {
			m := mark
			for _, w := range strings.Split(ansi.Hardwrap(l, max(width-4, 10), true), "\n") {
				out = append(out, "  "+style(m+w))
				m = strings.Repeat(" ", len(mark)) // a wrapped line goes on
			}
		}
	}
	plain := th.bold.Render
	var in struct {
		Content *string `json:"content"`
		Edits   []struct {
			OldText string `json:"oldText"`
			NewText string `json:"newText"`
		} `json:"edits"`
	}
	if err := json.Unmarshal(a.req.Args, &in); err != nil {
		in.Content, in.Edits = nil, nil // shown as its arguments
	}
	switch tool := strings.ToLower(a.req.Tool); {
	case tool == "bash":
		add("$ ", plain, a.subject())
	case tool == "write" && in.Content != nil && a.replaces:
		add("", plain, a.subject())
		if a.current == *in.Content {
			out = append(out, "  "+th.dim.Render("replaced by the same content: no change"))
			break
		}
		out = append(out, "  "+th.dim.Render("the file's content would change:"))
		a.diff(tools.TextDiff(a.current, *in.Content), add, th)
	case tool == "write" && in.Content != nil:
		add("", plain, a.subject())
		if *in.Content == "" {
			out = append(out, "  "+th.dim.Render("new content: empty"))
			break
		}
		n := strings.Count(strings.TrimSuffix(*in.Content, "\n"), "\n") + 1
		out = append(out, "  "+th.dim.Render(fmt.Sprintf("new content, %s, %d bytes:", plural(n, "line"), len(*in.Content))))
		add("+ ", th.ok.Render, strings.TrimSuffix(*in.Content, "\n"))
	case tool == "edit" && len(in.Edits) > 0:
		add("", plain, a.subject())
		for i, e := range in.Edits {
			if len(in.Edits) > 1 {
				out = append(out, "  "+th.dim.Render(fmt.Sprintf("replacement %d of %d:", i+1, len(in.Edits))))
			}
			a.diff(tools.TextDiff(e.OldText, e.NewText), add, th)
		}
	default:
		add("", plain, a.subject())
	}
	a.body, a.bodyWidth = out, width
	return out
}

// diff adds a tools.TextDiff's lines with add: kept ones dim, removed
// ones red, added ones green; of a run of kept lines, only the
// diffContext next to a change, the rest counted.
func (a *approval) diff(d string, add func(mark string, style func(...string) string, text string), th theme) {
	lines := strings.Split(d, "\n")
	near := func(i int) bool {
		for j := max(i-diffContext, 0); j <= min(i+diffContext, len(lines)-1); j++ {
			if lines[j] != "" && lines[j][0] != ' ' {
				return true
			}
		}
		return false
	}
	skipped := 0
	for i, l := range lines {
		if len(l) < 2 { // (both texts empty)
			continue
		}
		if !near(i) {
			skipped++
			continue
		}
		if skipped > 0 {
			add("", th.dim.Render, "⋯ "+plural(skipped, "unchanged line"))
			skipped = 0
		}
		style := th.dim.Render
		switch l[0] {
		case '-':
			style = th.bad.Render
		case '+':
			style = th.ok.Render
		}
		add(l[:2], style, l[2:])
	}
	if skipped > 0 {
		add("", th.dim.Render, "⋯ "+plural(skipped, "unchanged line"))
	}
}

// diffContext is how many kept lines a change shows on either side.
const diffContext = 3

// approvalView draws the shown approval in at most room lines (at
// least five): a header, why it asks, the command or change (cut with
// "… N more lines" where it does not fit), and the keys or the reason
// being typed. cursor is the column of the reason's end on the last line
// (-1 when none is typed).
func (m *model) approvalView(room int) (lines []string, cursor int) {
	a := m.approvals[0]
	th := m.th
	head := th.warn.Render("⚠ ") + th.bold.Render("approve "+termtext.String(a.req.Tool)+" on "+termtext.String(a.req.Host)+"?")
	if n := len(m.approvals); n > 1 {
		head += th.dim.Render(fmt.Sprintf("  (1 of %d waiting)", n))
	}
	lines = []string{head, "  " + th.dim.Render(termtext.String(firstLine(a.req.Reason)))}
	var foot []string
	cursor = -1
	if a.typing {
		foot = []string{"  " + th.dim.Render("a reason for the model? Enter denies with it, Esc without")}
		prompt := "  reason › "
		// (The end of a long reason: where it is being typed.)
		shown := termtext.String(a.reason)
		if over := ansi.StringWidth(prompt) + ansi.StringWidth(shown) + 1 - m.cols(); over > 0 {
			shown = ansi.TruncateLeft(shown, over+1, "…")
		}
		foot = append(foot, th.accent.Render(prompt)+shown)
		cursor = ansi.StringWidth(prompt) + ansi.StringWidth(shown)
	} else {
		// (On as many lines as it takes: every key stays in view.)
		line := ""
		for _, k := range [][2]string{{"y", "allow once"}, {"a", "always (this session)"}, {"n", "deny…"}, {"Esc", "deny"}, {"Ctrl+C", "deny, abort the run"}} {
			item := th.accent.Render(k[0]) + " " + k[1]
			switch {
			case line == "":
				line = "  " + item
			case ansi.StringWidth(line+" · "+item) > m.cols():
				foot = append(foot, line)
				line = "  " + item
			default:
				line += " · " + item
			}
		}
		foot = append(foot, line)
	}
	body := a.lines(m.cols(), th)
	if fit := room - len(lines) - len(foot); len(body) > max(fit, 1) {
		keep := max(fit-1, 0)
		body = append(body[:keep:keep], "  "+th.dim.Render("… "+plural(len(body)-keep, "more line")))
	}
	lines = append(lines, body...)
	return append(lines, foot...), cursor
}

// approvalScreen is the live part while an approval waits: the approval
// in the editor's place, the footer below it, and above it the latest
// parts of the transcript's live part (live: the tool boxes) that fit
// whole. It is never taller than the
// screen, so the choices are always in view.
func (m *model) approvalScreen(f frame) tea.View {
	prompt, cursor := m.approvalView(max(m.height-2, 5)) // (the footer, and a spare line)
	// The latest of the transcript's parts (tool boxes), whole, that fit.
	var lines []string
	room := m.height - 2 - len(prompt)
	live := m.transcript.view(m.running, f, room)
	for i := len(live) - 1; i >= 0; i-- {
		part := strings.Split(live[i], "\n")
		if len(lines)+len(part) > room {
			break
		}
		lines = append(part, lines...)
	}
	lines = append(lines, prompt...)
	for i, l := range lines {
		lines[i] = ansi.Truncate(l, m.cols(), "…")
	}
	v := tea.NewView(strings.Join(lines, "\n") + "\n" + m.footer.view(m.cols(), m.th))
	if cursor >= 0 {
		v.Cursor = tea.NewCursor(cursor, len(lines)-1)
	}
	return v
}

// plural is "1 line", "2 lines".
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
