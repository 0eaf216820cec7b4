package tui

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pi-remote/pi-remote/agent"
	"github.com/pi-remote/pi-remote/loop"
)

// fakeAgent records what the terminal asks of it; a prompt runs until
// release is closed or its context ends.
type fakeAgent struct {
	mu        sync.Mutex
	prompts   []string
	steered   []string
	followUps []string
	focus     []string
	release   chan struct{}
	msgs      []loop.Message // what Messages says (a resumed session's)
}

func (f *fakeAgent) Messages() []loop.Message { return f.msgs }

func (f *fakeAgent) Prompt(ctx context.Context, prompts ...loop.Message) (agent.Totals, error) {
	f.mu.Lock()
	for _, p := range prompts {
		f.prompts = append(f.prompts, p.(*loop.UserMessage).Content.Text())
	}
	release := f.release
	f.mu.Unlock()
	select {
	case <-release:
		return agent.Totals{}, nil
	case <-ctx.Done():
		return agent.Totals{}, ctx.Err()
	}
}

func (f *fakeAgent) Steer(m ...loop.Message) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.steered = append(f.steered, m[0].(*loop.UserMessage).Content.Text())
}

func (f *fakeAgent) FollowUp(m ...loop.Message) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.followUps = append(f.followUps, m[0].(*loop.UserMessage).Content.Text())
}

func (f *fakeAgent) Compact(_ context.Context, focus string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.focus = append(f.focus, focus)
	return nil
}

func (f *fakeAgent) Usage() agent.Totals    { return agent.Totals{} }
func (f *fakeAgent) ContextTokens() int     { return 0 }
func (f *fakeAgent) Model() agent.ModelInfo { return agent.ModelInfo{Window: 1000} }

// harness drives a model as the program would: keys in, commands run
// (in the background, their messages fed back).
type harness struct {
	t       *testing.T
	m       *model
	a       *fakeAgent
	msgs    chan tea.Msg
	printed []string // what went to the scrollback
}

func newHarness(t *testing.T, o Options) *harness {
	a := &fakeAgent{release: make(chan struct{})}
	m := newModel(o, newTheme(false))
	m.o.Agent = a
	m.width = 80
	return &harness{t: t, m: m, a: a, msgs: make(chan tea.Msg, 16)}
}

// do sends msg and runs what it asks for; a command that blocks (a run)
// reports when it ends, through h.msgs. It returns whether the program
// would quit.
func (h *harness) do(msg tea.Msg) (quit bool) {
	_, cmd := h.m.Update(msg)
	return h.run(cmd)
}

func (h *harness) run(cmd tea.Cmd) (quit bool) {
	if cmd == nil {
		return false
	}
	done := make(chan tea.Msg, 1)
	go func() { done <- cmd() }()
	select {
	case msg := <-done:
		return h.handle(msg)
	case <-time.After(50 * time.Millisecond):
		// A run, a completion slow to come (a loaded machine), or a
		// timer, which is dropped.
		go func() {
			switch msg := (<-done).(type) {
			case doneMsg, compMsg:
				h.msgs <- msg
			}
		}()
		return false
	}
}

func (h *harness) handle(msg tea.Msg) bool {
	switch msg := msg.(type) {
	case tea.QuitMsg:
		return true
	case tea.BatchMsg:
		quit := false
		for _, c := range msg {
			quit = h.run(c) || quit
		}
		return quit
	case doneMsg, eventMsg, compMsg, branchMsg, printedMsg:
		return h.do(msg)
	}
	// (Bubble Tea's print and sequence messages are its own types.)
	v := reflect.ValueOf(msg)
	switch {
	case v.Kind() == reflect.Struct && v.Type().Name() == "printLineMessage":
		h.printed = append(h.printed, v.FieldByName("messageBody").String())
	case v.Kind() == reflect.Slice && v.Type().Elem() == reflect.TypeFor[tea.Cmd]():
		quit := false
		for i := range v.Len() {
			quit = h.run(v.Index(i).Interface().(tea.Cmd)) || quit
		}
		return quit
	}
	return false // a clipboard write: the program's business
}

// settle waits for the run (or compaction) to end, feeding back its
// message.
func (h *harness) settle() {
	for h.m.running {
		select {
		case msg := <-h.msgs:
			h.handle(msg)
		case <-time.After(5 * time.Second):
			h.t.Fatal("the run did not end")
		}
	}
}

// completions waits for the completions asked for in the background, when
// they have not come yet.
func (h *harness) completions() {
	if len(h.m.editor.comps) > 0 {
		return
	}
	select {
	case msg := <-h.msgs:
		h.handle(msg)
	case <-time.After(5 * time.Second):
		h.t.Fatal("no completions came")
	}
}

// typeText types s (the editor's cursor-blink timers are not run).
func (h *harness) typeText(s string) {
	for _, r := range s {
		h.m.Update(tea.KeyPressMsg{Code: r, Text: string(r)})
	}
}

var (
	enter    = tea.KeyPressMsg{Code: tea.KeyEnter}
	altEnter = tea.KeyPressMsg{Code: tea.KeyEnter, Mod: tea.ModAlt}
	ctrlJ    = tea.KeyPressMsg{Code: 'j', Mod: tea.ModCtrl}
	esc      = tea.KeyPressMsg{Code: tea.KeyEscape}
	altEsc   = tea.KeyPressMsg{Code: tea.KeyEscape, Mod: tea.ModAlt}
	ctrlC    = tea.KeyPressMsg{Code: 'c', Mod: tea.ModCtrl}
	ctrlD    = tea.KeyPressMsg{Code: 'd', Mod: tea.ModCtrl}
	up       = tea.KeyPressMsg{Code: tea.KeyUp}
	down     = tea.KeyPressMsg{Code: tea.KeyDown}
)

func (h *harness) view() string { return h.m.View().Content }

// Enter sends; while the agent works Enter steers and Alt+Enter queues a
// follow-up; Esc aborts.
func TestPromptSteerFollowUpAbort(t *testing.T) {
	h := newHarness(t, Options{})
	h.typeText("fix the test")
	h.do(enter)
	require.Eventually(t, func() bool { h.a.mu.Lock(); defer h.a.mu.Unlock(); return len(h.a.prompts) == 1 }, time.Second, time.Millisecond)
	assert.Equal(t, []string{"fix the test"}, h.a.prompts)
	assert.True(t, h.m.running)
	assert.Equal(t, "", h.m.editor.value(), "the editor is cleared")
	assert.Contains(t, h.view(), "Esc aborts")

	h.typeText("use the other file")
	h.do(enter)
	h.typeText("then run the suite")
	h.do(altEnter)
	assert.Equal(t, []string{"use the other file"}, h.a.steered)
	assert.Equal(t, []string{"then run the suite"}, h.a.followUps)
	assert.Contains(t, h.view(), "queued: use the other file")
	assert.Contains(t, h.view(), "queued: then run the suite")

	// A steering message delivered leaves the queue.
	h.do(eventMsg{loop.MessageEnd{Message: loop.NewUserText("use the other file")}})
	assert.NotContains(t, h.view(), "queued: use the other file")

	h.do(esc)
	h.settle()
	assert.False(t, h.m.running, "aborted")
	assert.Empty(t, h.m.transcript.queued, "what was not delivered is shown, then dropped")
}

// Alt+Enter and Ctrl+J make new lines when idle; Ctrl+C clears, twice
// quits; Ctrl+D on an empty editor quits.
func TestEditingAndQuitting(t *testing.T) {
	h := newHarness(t, Options{})
	h.typeText("one")
	h.do(altEnter)
	h.typeText("two")
	h.do(ctrlJ)
	h.typeText("three")
	assert.Equal(t, "one\ntwo\nthree", h.m.editor.value())
	assert.Equal(t, 3, h.m.editor.ta.Height(), "the editor grows with its text")
	assert.Contains(t, h.view(), "› one")

	assert.False(t, h.do(ctrlC))
	assert.Equal(t, "", h.m.editor.value(), "Ctrl+C clears the editor")
	assert.False(t, h.do(ctrlC), "the first Ctrl+C on an empty editor only warns")
	assert.Contains(t, h.view(), "Ctrl+C again to quit")
	assert.True(t, h.do(ctrlC), "the second quits")

	h = newHarness(t, Options{})
	h.typeText("x")
	assert.False(t, h.do(ctrlD), "Ctrl+D with text does not quit")
	h.do(ctrlC)
	assert.True(t, h.do(ctrlD))
}

// Slash commands: /compact with a focus; an unknown one is an error; a
// command that changes the session waits for the run to end.
func TestSlashCommands(t *testing.T) {
	var model string
	h := newHarness(t, Options{Commands: Commands{SetModel: func(name string) error { model = name; return nil }}})
	h.typeText("/compact keep the API decisions")
	h.do(enter)
	h.settle()
	assert.Equal(t, []string{"keep the API decisions"}, h.a.focus)
	h.typeText("/model openai/gpt-4o")
	h.do(enter)
	assert.Equal(t, "openai/gpt-4o", model)
	assert.Equal(t, "openai/gpt-4o", h.m.footer.model)
	h.typeText("/teleport")
	h.do(enter)
	assert.Empty(t, h.a.prompts, "a slash command is not a prompt")

	h.typeText("go")
	h.do(enter)
	require.Eventually(t, func() bool { h.a.mu.Lock(); defer h.a.mu.Unlock(); return len(h.a.prompts) == 1 }, time.Second, time.Millisecond)
	h.typeText("/model openai/o3")
	h.do(enter)
	assert.Equal(t, "openai/gpt-4o", model, "not while a run goes on")
	close(h.a.release)
	h.settle()
}

// /resume, /fork and /model open a picker (typing filters it, Enter
// picks, Esc closes); the session picked is the one the terminal drives
// from then on.
func TestPickersSwitchSessions(t *testing.T) {
	var resumed, forked string
	other := &fakeAgent{release: make(chan struct{}), msgs: conversation(1)}
	close(other.release)
	h := newHarness(t, Options{Commands: Commands{
		Sessions: func() []Choice {
			return []Choice{{Label: "11-30 10:00  aaaa  fix the parser", Value: "aaaa"}, {Label: "11-30 11:00  bbbb  write docs", Value: "bbbb"}}
		},
		Resume: func(id string) (Agent, string, error) { resumed = id; return other, "session bbbb", nil },
		ForkPoints: func() []Choice {
			return []Choice{{Label: "second prompt", Value: "e2", Text: "second prompt"}, {Label: "first prompt", Value: "e1", Text: "first prompt\nwith a second line"}}
		},
		Fork:     func(entry string) (Agent, string, error) { forked = entry; return other, "forked", nil },
		SetModel: func(string) error { return nil },
		Models: func() []Choice {
			return []Choice{{Label: "openai/gpt-4o", Value: "openai/gpt-4o"}, {Label: "openai/gpt-4o-mini", Value: "openai/gpt-4o-mini"},
				{Label: "anthropic/claude-sonnet-4-5 — needs ANTHROPIC_API_KEY", Value: "anthropic/claude-sonnet-4-5"}}
		},
	}})
	h.typeText("/resume")
	h.do(enter)
	require.NotNil(t, h.m.picker)
	assert.Contains(t, h.view(), "▸ 11-30 10:00  aaaa  fix the parser")
	h.typeText("docs")
	assert.NotContains(t, h.view(), "fix the parser", "typing filters")
	h.do(enter)
	assert.Nil(t, h.m.picker)
	assert.Equal(t, "bbbb", resumed)
	assert.Same(t, other, h.m.o.Agent.(*fakeAgent), "prompts go to the resumed session")
	assert.Contains(t, strings.Join(h.printed, "\n"), "› prompt 0", "its conversation shown again")

	h.typeText("/fork")
	h.do(enter)
	h.do(down)
	h.do(enter)
	assert.Equal(t, "e1", forked)
	assert.Equal(t, "first prompt\nwith a second line", h.m.editor.value(), "the message forked from, back in the editor")
	h.m.editor.clear()

	h.typeText("/model")
	h.do(enter)
	h.typeText("mini")
	h.do(enter)
	assert.Equal(t, "openai/gpt-4o-mini", h.m.footer.model)

	h.typeText("/resume")
	h.do(enter)
	h.do(esc)
	assert.Nil(t, h.m.picker, "Esc closes")
	assert.Equal(t, "bbbb", resumed, "nothing picked")

	h.typeText("go")
	h.do(enter)
	h.settle()
	assert.Equal(t, []string{"go"}, other.prompts)
	assert.Empty(t, h.a.prompts)
}

// The whole live part at each width: a running tool, a queued message,
// the completions offered, the editor with two lines, the footer; and a
// picker.
func TestViewGolden(t *testing.T) {
	for _, w := range widths {
		h := newHarness(t, Options{Tools: definitions(t), Hosts: []string{"devbox"}, Cwd: "/srv/app", Model: "openai/gpt-4o", AutoCompact: true,
			Commands: Commands{Sessions: func() []Choice {
				return []Choice{{Label: "11-30 10:00  3f9a01  devbox  fix the flaky parser test", Value: "a"}, {Label: "11-29 17:20  77c2aa  devbox  write the release notes", Value: "b"}}
			}, Resume: func(string) (Agent, string, error) { return nil, "", nil }}})
		h.m.width = w
		h.m.footer.hosts = []hostState{{"devbox", true}}
		h.m.editor.setWidth(h.m.cols())
		h.m.running = true
		h.do(eventMsg{loop.ToolExecutionStart{ToolCallID: "c1", ToolName: "bash", Args: []byte(`{"command":"go test ./..."}`)}})
		h.do(eventMsg{loop.ToolExecutionUpdate{ToolCallID: "c1", ToolName: "bash", PartialResult: loop.TextResult("ok  pkg/a\nok  pkg/b")}})
		h.m.transcript.queued = []string{"also run the linter"}
		h.typeText("first line")
		h.do(ctrlJ)
		h.typeText("/co")
		running := h.view()
		h.m.running = false
		h.m.editor.ta.Reset()
		h.m.editor.comps, h.m.editor.token = nil, ""
		h.typeText("/resume")
		h.do(enter)
		picker := h.view()
		for _, v := range []string{running, picker} {
			for _, l := range strings.Split(v, "\n") {
				assert.LessOrEqual(t, ansi.StringWidth(l), w, "fits in %d columns: %q", w, l)
			}
		}
		golden(t, fmt.Sprintf("view-%d.golden", w), running+"\n\n"+picker+"\n")
	}
}

// The messages and keys the model routes that reach a component only
// through Update: a link's state and usage to the footer's info line,
// compaction and Ctrl+G's trouble to the status line, an external
// editor's text to the editor, and the keys the model passes on when it
// has nothing to do with them (Ctrl+D with text, Esc when idle, Tab with
// nothing offered).
func TestUpdateRoutesToComponents(t *testing.T) {
	h := newHarness(t, Options{Hosts: []string{"devbox"}})
	h.m.footer.hosts = []hostState{{"devbox", true}}

	h.do(linkMsg{host: "devbox", up: false})
	assert.Contains(t, h.view(), "devbox ◌ reconnecting")
	h.do(linkMsg{host: "devbox", up: true})
	assert.NotContains(t, h.view(), "reconnecting")

	h.do(eventMsg{agent.UsageUpdate{Session: agent.Totals{Usage: loop.Usage{Input: 1200, Output: 34}}, ContextTokens: 800, ContextWindow: 1000}})
	assert.Contains(t, h.view(), "↑1.2k ↓34")
	assert.Contains(t, h.view(), "ctx 80% of 1k")
	h.do(eventMsg{agent.CompactionStart{}})
	assert.Contains(t, h.view(), "compacting the context…", "the status line")
	h.do(eventMsg{agent.CompactionEnd{TokensBefore: 800, TokensAfter: 100}})
	assert.NotContains(t, h.view(), "compacting")
	require.NotEmpty(t, h.printed)
	assert.Contains(t, h.printed[len(h.printed)-1], "context compacted: 800 → 100 tokens")

	t.Setenv("VISUAL", "")
	t.Setenv("EDITOR", "")
	h.do(tea.KeyPressMsg{Code: 'g', Mod: tea.ModCtrl})
	assert.Contains(t, h.view(), "set $VISUAL or $EDITOR", "Ctrl+G says why it cannot")
	h.do(editedMsg{text: "from\nthe editor"})
	assert.Equal(t, "from\nthe editor", h.m.editor.value())
	assert.Equal(t, 2, h.m.editor.ta.Height(), "the editor fits the text it got")

	h.m.editor.ta.Reset()
	h.typeText("ab")
	h.do(tea.KeyPressMsg{Code: tea.KeyLeft})
	assert.False(t, h.do(ctrlD), "Ctrl+D with text is the editor's")
	assert.Equal(t, "a", h.m.editor.value(), "it deletes forward")
	assert.False(t, h.do(esc))
	h.do(tea.KeyPressMsg{Code: tea.KeyTab})
	assert.Equal(t, "a", h.m.editor.value(), "Esc when idle and Tab with nothing offered change nothing")

	h.do(ctrlC)
	h.do(ctrlC)
	assert.Contains(t, h.view(), "Ctrl+C again to quit")
	h.typeText("x")
	assert.NotContains(t, h.view(), "Ctrl+C again", "another key takes the warning back")
	h.do(ctrlC)
	assert.False(t, h.do(ctrlC), "and the count starts again: the first Ctrl+C on an empty editor only warns")
}

// Prints reach the scrollback in the order they were made, though Bubble
// Tea runs each update's command on a goroutine of its own: while one
// flush is on its way the next print waits in the outbox, and a quit waits
// for the outbox to be empty.
func TestPrintsKeepTheirOrder(t *testing.T) {
	h := newHarness(t, Options{})
	first := h.m.print("first")
	require.NotNil(t, first)
	assert.Nil(t, h.m.print("second"), "the second print waits for the first")
	assert.Nil(t, h.m.print("third"))
	assert.False(t, h.run(first))
	assert.Equal(t, []string{"first", "second", "third"}, h.printed)
	assert.False(t, h.m.printing)

	h.printed = nil
	pending := h.m.print("last words")
	assert.Nil(t, h.m.quit(), "the quit waits for the print on its way")
	assert.True(t, h.run(pending), "then quits")
	assert.Equal(t, []string{"last words"}, h.printed)
}
