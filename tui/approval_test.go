package tui

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pi-remote/pi-remote/agent/permission"
	"github.com/pi-remote/pi-remote/loop"
)

// request is a call on host "devbox" that asks, with args marshalled.
func request(t *testing.T, tool string, args any) permission.Request {
	t.Helper()
	b, err := json.Marshal(args)
	require.NoError(t, err)
	r := permission.Request{ID: "approval-1", Host: "devbox", Tool: tool, Args: b, Reason: "host devbox asks before " + tool}
	var in struct {
		Command, Path string
	}
	require.NoError(t, json.Unmarshal(b, &in))
	r.Command = in.Command
	if in.Path != "" {
		r.Path = "/srv/app/" + in.Path
	}
	return r
}

// waiting shows r as the Asker would and returns its approval.
func (h *harness) waiting(r permission.Request) *approval {
	a := newApproval(r)
	h.do(askMsg{a})
	return a
}

// answered is a's answer, which must have come.
func answered(t *testing.T, a *approval) permission.Answer {
	t.Helper()
	select {
	case ans := <-a.reply:
		return ans
	default:
		t.Fatal("no answer")
		return permission.Answer{}
	}
}

// Each key's answer: y once, a always for this session, n then a reason
// and Enter a denial with that reason, Esc a denial (also while typing
// the reason, which is then dropped), Ctrl+C a denial that aborts the
// run; other keys do nothing.
func TestApprovalKeys(t *testing.T) {
	key := func(r rune) tea.KeyPressMsg { return tea.KeyPressMsg{Code: r, Text: string(r)} }
	backspace := tea.KeyPressMsg{Code: tea.KeyBackspace}
	for _, tc := range []struct {
		name    string
		keys    []tea.Msg
		typed   string
		want    permission.Answer
		aborted bool
	}{
		{name: "y", keys: []tea.Msg{key('y')}, want: permission.Answer{Decision: permission.Once}},
		{name: "Y", keys: []tea.Msg{tea.KeyPressMsg{Code: 'y', Text: "Y", Mod: tea.ModShift}}, want: permission.Answer{Decision: permission.Once}},
		{name: "a", keys: []tea.Msg{key('a')}, want: permission.Answer{Decision: permission.Session}},
		{name: "n and a reason", keys: []tea.Msg{key('x'), key('n')}, typed: "use the stagingxx", want: permission.Answer{Decision: permission.Deny, Reason: "use the staging copy"}},
		{name: "n and no reason", keys: []tea.Msg{key('n'), enter}, want: permission.Answer{Decision: permission.Deny}},
		{name: "esc", keys: []tea.Msg{esc}, want: permission.Answer{Decision: permission.Deny}},
		{name: "esc while typing", keys: []tea.Msg{key('n'), key('w'), esc}, want: permission.Answer{Decision: permission.Deny}},
		// (Esc Esc typed fast, or over ssh, reaches the program in one
		// read: one key, Alt+Esc.)
		{name: "esc esc", keys: []tea.Msg{altEsc}, want: permission.Answer{Decision: permission.Deny}},
		{name: "esc esc while typing", keys: []tea.Msg{key('n'), key('w'), altEsc}, want: permission.Answer{Decision: permission.Deny}},
		{name: "ctrl+c", keys: []tea.Msg{ctrlC}, want: permission.Answer{Decision: permission.Deny}, aborted: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, Options{})
			h.typeText("go")
			h.do(enter)
			require.True(t, h.m.running)
			a := h.waiting(request(t, "write", map[string]any{"path": "notes.txt", "content": "hi\n"}))
			for _, k := range tc.keys {
				h.do(k)
			}
			if tc.typed != "" {
				h.typeText(tc.typed)
				h.do(backspace)
				h.do(backspace)
				h.do(tea.PasteMsg{Content: " copy"})
				assert.Contains(t, h.view(), "reason › use the staging copy")
				h.do(enter)
			}
			assert.Equal(t, tc.want, answered(t, a))
			assert.Empty(t, h.m.approvals, "the prompt is gone")
			assert.NotContains(t, h.view(), "approve write")
			if tc.want.Decision == permission.Session {
				require.NotEmpty(t, h.printed)
				assert.Contains(t, h.printed[len(h.printed)-1], "allowed for the rest of this session: write /srv/app/notes.txt on devbox")
			}
			if tc.aborted {
				h.settle()
				assert.False(t, h.m.running, "Ctrl+C aborted the run")
			} else {
				assert.True(t, h.m.running, "the run goes on")
				close(h.a.release)
				h.settle()
			}
			assert.Equal(t, "", h.m.editor.value(), "no key reached the editor")
		})
	}
}

// Calls that ask together wait in turn, the oldest shown; one withdrawn
// (its run ended) leaves the queue, and the editor is back when none
// waits.
func TestApprovalsWaitInTurn(t *testing.T) {
	h := newHarness(t, Options{})
	h.typeText("draft")
	first := h.waiting(request(t, "bash", map[string]any{"command": "make deploy"}))
	second := h.waiting(request(t, "edit", map[string]any{"path": "a.go", "edits": []any{map[string]string{"oldText": "x", "newText": "y"}}}))
	third := h.waiting(request(t, "bash", map[string]any{"command": "rm -rf build"}))
	v := h.view()
	assert.Contains(t, v, "approve bash on devbox?  (1 of 3 waiting)")
	assert.Contains(t, v, "$ make deploy")
	assert.NotContains(t, v, "› draft", "the prompt takes the editor's place")
	h.do(tea.KeyPressMsg{Code: 'y', Text: "y"})
	assert.Equal(t, permission.Once, answered(t, first).Decision)
	assert.Contains(t, h.view(), "approve edit on devbox?  (1 of 2 waiting)")
	h.do(withdrawMsg{third})
	h.do(withdrawMsg{third}) // (twice: nothing more happens)
	assert.Contains(t, h.view(), "approve edit on devbox?")
	assert.NotContains(t, h.view(), "waiting)")
	h.do(esc)
	assert.Equal(t, permission.Deny, answered(t, second).Decision)
	assert.Contains(t, h.view(), "› draft", "the editor is back, as it was")
}

// The Asker: its request shows up, the answer comes back; when the call's
// context ends first the prompt goes away and the Asker returns the
// context's error; when the terminal has ended, an error.
func TestAskWaitsForTheAnswerOrTheContext(t *testing.T) {
	h := newHarness(t, Options{})
	sent := make(chan tea.Msg, 4)
	send := func(msg tea.Msg) { sent <- msg }
	type result struct {
		ans permission.Answer
		err error
	}
	start := func(ctx context.Context, closed chan struct{}) chan result {
		out := make(chan result, 1)
		go func() {
			ans, err := ask(ctx, send, closed, newApproval(request(t, "bash", map[string]any{"command": "make"})))
			out <- result{ans, err}
		}()
		return out
	}
	next := func() tea.Msg {
		select {
		case msg := <-sent:
			return msg
		case <-time.After(5 * time.Second):
			t.Fatal("the Asker sent nothing")
			return nil
		}
	}

	got := start(t.Context(), make(chan struct{}))
	h.do(next())
	assert.Contains(t, h.view(), "$ make")
	h.do(tea.KeyPressMsg{Code: 'a', Text: "a"})
	r := <-got
	require.NoError(t, r.err)
	assert.Equal(t, permission.Session, r.ans.Decision)

	ctx, cancel := context.WithCancel(t.Context())
	got = start(ctx, make(chan struct{}))
	h.do(next())
	assert.Contains(t, h.view(), "$ make")
	cancel()
	r = <-got
	assert.ErrorIs(t, r.err, context.Canceled)
	h.do(next())
	assert.NotContains(t, h.view(), "$ make", "the prompt went away")
	assert.Empty(t, h.m.approvals)

	closed := make(chan struct{})
	got = start(t.Context(), closed)
	next()
	close(closed)
	r = <-got
	assert.ErrorIs(t, r.err, errClosed)
}

// However long the command or the change, the prompt and the footer fit
// on the screen: the change is cut ("… N more lines"), the keys stay in
// view, and the transcript's live part gives way; a long command wraps
// (none of it is hidden past the edge) while it fits.
func TestApprovalFitsTheScreen(t *testing.T) {
	var content []string
	for i := 1; i <= 200; i++ {
		content = append(content, fmt.Sprintf("line %d", i))
	}
	h := newHarness(t, Options{Tools: definitions(t)})
	h.m.height = 24
	h.m.running = true
	for i := range 6 {
		h.do(eventMsg{loop.ToolExecutionStart{ToolCallID: fmt.Sprintf("c%d", i), ToolName: "bash", Args: []byte(fmt.Sprintf(`{"command":"echo %d"}`, i))}})
	}
	h.waiting(request(t, "write", map[string]any{"path": "big.txt", "content": strings.Join(content, "\n") + "\n"}))
	v := h.view()
	lines := strings.Split(v, "\n")
	assert.LessOrEqual(t, len(lines), 23, "fits in 24 rows with a spare one:\n%s", v)
	assert.Contains(t, v, "new content, 200 lines, 1692 bytes:")
	assert.Contains(t, v, "+ line 1\n")
	assert.Regexp(t, `… 1\d\d more lines`, v)
	assert.Contains(t, lines[len(lines)-3], "y allow once · a always (this session) · n deny… · Esc deny")
	assert.Contains(t, lines[len(lines)-2], "Ctrl+C deny, abort the run")
	h.do(esc)
	h.waiting(request(t, "write", map[string]any{"path": "small.txt", "content": "one line\n"}))
	v = h.view()
	assert.Contains(t, v, "$ echo 5\n⚠ approve write", "the latest tool boxes, above the prompt")
	assert.LessOrEqual(t, strings.Count(v, "\n"), 22)
	h.do(esc)

	h.m.width = 60
	long := "echo " + strings.Repeat("word ", 40) + "&& rm -rf /important"
	h.waiting(request(t, "bash", map[string]any{"command": long}))
	v = h.view()
	for _, l := range strings.Split(v, "\n") {
		assert.LessOrEqual(t, ansi.StringWidth(l), 59, "fits in 60 columns: %q", l)
	}
	assert.Contains(t, strings.ReplaceAll(v, "\n    ", ""), "&& rm -rf /important", "the end of a long command is shown")
	assert.Contains(t, v, "Esc deny · Ctrl+C deny, abort the run", "the keys on a second line")

	h.m.height = 3
	v = h.view()
	assert.Contains(t, v, "y allow once", "a tiny screen still shows the keys")
}

// Every piece of the prompt that comes from the model (arguments, paths,
// commands, old and new text) or a host is shown with its controls as
// text: no sequence but the theme's colours reaches the terminal.
func TestApprovalShowsControlsAsText(t *testing.T) {
	const clear = "\x1b[2J"
	for _, color := range []bool{false, true} {
		h := newHarness(t, Options{})
		h.m.th = newTheme(color)
		h.m.width = 2000
		for _, r := range []permission.Request{
			request(t, "write", map[string]any{"path": "a" + clear + ".txt", "content": "x" + clear + "\n" + hostile}),
			request(t, "edit", map[string]any{"path": "b" + clear, "edits": []any{map[string]string{"oldText": "old" + clear, "newText": "new" + hostile}}}),
			request(t, "bash", map[string]any{"command": "echo " + clear + hostile}),
			request(t, "read"+clear, map[string]any{"pattern": clear}),
			request(t, "edit", map[string]any{"path": "empty", "edits": []any{map[string]string{"oldText": "", "newText": ""}}}),
			request(t, "write", map[string]any{"path": "empty", "content": ""}),
		} {
			r.Host += clear
			r.Reason += clear
			h.waiting(r)
			h.do(tea.KeyPressMsg{Code: 'n', Text: "n"})
			h.do(tea.PasteMsg{Content: "because " + clear})
			v := h.view()
			assert.Contains(t, v, "^[[2J")
			assert.NotContains(t, sgr.ReplaceAllString(v, ""), "\x1b", "only colours: %q", v)
			assert.NotContains(t, v, "\u009b")
			h.do(esc)
		}
	}
}

// A write over a file shows its change, the unchanged lines far from it
// counted, when the file's content can be read (Options.Current); a
// write of the same content says so.
func TestApprovalShowsAWriteAsAChange(t *testing.T) {
	var lines []string
	for i := 1; i <= 30; i++ {
		lines = append(lines, fmt.Sprintf("line %d", i))
	}
	old := strings.Join(lines, "\n") + "\n"
	lines[14] = "line fifteen"
	var asked []string
	h := newHarness(t, Options{Current: func(_ context.Context, host, path string) (string, bool) {
		asked = append(asked, host+":"+path)
		return old, path == "/srv/app/notes.txt"
	}})
	r := request(t, "write", map[string]any{"path": "notes.txt", "content": strings.Join(lines, "\n") + "\n"})
	h.do(askMsg{prepare(t.Context(), r, h.m.o.Current)})
	assert.Equal(t, []string{"devbox:/srv/app/notes.txt"}, asked)
	v := h.view()
	assert.Contains(t, v, "the file's content would change:\n  ⋯ 11 unchanged lines\n    line 12\n    line 13\n    line 14\n  - line 15\n  + line fifteen\n    line 16\n    line 17\n    line 18\n  ⋯ 12 unchanged lines\n")
	h.do(esc)

	r = request(t, "write", map[string]any{"path": "notes.txt", "content": old})
	h.do(askMsg{prepare(t.Context(), r, h.m.o.Current)})
	assert.Contains(t, h.view(), "replaced by the same content: no change")
	h.do(esc)

	r = request(t, "write", map[string]any{"path": "new.txt", "content": "fresh\n"})
	h.do(askMsg{prepare(t.Context(), r, h.m.o.Current)})
	assert.Contains(t, h.view(), "new content, 1 line, 6 bytes:\n  + fresh", "no file to replace")
	h.do(esc)

	h.do(askMsg{prepare(t.Context(), request(t, "bash", map[string]any{"command": "ls"}), h.m.o.Current)})
	assert.Len(t, asked, 3, "only a write reads the file")
}

// The prompt at each width: an edit with two replacements, a bash line,
// and the reason being typed.
func TestApprovalGolden(t *testing.T) {
	for _, w := range widths {
		h := newHarness(t, Options{Hosts: []string{"devbox"}, Model: "openai/gpt-4o"})
		h.m.width = w
		h.m.footer.hosts = []hostState{{"devbox", true}}
		h.m.footer.model = "openai/gpt-4o"
		h.waiting(request(t, "edit", map[string]any{"path": "cmd/main.go", "edits": []any{
			map[string]string{"oldText": "func main() {\n\tfmt.Println(\"hi\")\n}", "newText": "func main() {\n\tfmt.Println(\"hello, world\")\n}"},
			map[string]string{"oldText": "import \"fmt\"", "newText": "import (\n\t\"fmt\"\n\t\"os\"\n)"},
		}}))
		h.waiting(request(t, "bash", map[string]any{"command": "git push --force origin main && kubectl rollout restart deployment/api --namespace production"}))
		edit := h.view()
		h.do(tea.KeyPressMsg{Code: 'y', Text: "y"})
		bash := h.view()
		h.do(tea.KeyPressMsg{Code: 'n', Text: "n"})
		h.typeText("not on a Friday")
		typing := h.view()
		golden(t, fmt.Sprintf("approval-%d.golden", w), edit+"\n\n"+bash+"\n\n"+typing+"\n")
		c := h.m.View().Cursor
		require.NotNil(t, c, "the cursor is where the reason is typed")
		assert.Equal(t, ansi.StringWidth("  reason › not on a Friday"), c.X)
		assert.Equal(t, strings.Count(typing, "\n")-1, c.Y)
	}
}
