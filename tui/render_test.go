package tui

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/charmbracelet/x/ansi"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pi-remote/pi-remote/agent"
	"github.com/pi-remote/pi-remote/env"
	"github.com/pi-remote/pi-remote/loop"
	"github.com/pi-remote/pi-remote/ops/local"
	"github.com/pi-remote/pi-remote/tools"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// golden compares got with testdata/name, or writes it with -update.
func golden(t *testing.T, name, got string) {
	t.Helper()
	p := filepath.Join("testdata", name)
	if *update {
		require.NoError(t, os.WriteFile(p, []byte(got), 0o644))
	}
	want, err := os.ReadFile(p)
	require.NoError(t, err, "run with -update to create %s", p)
	assert.Equal(t, string(want), got)
}

func definitions(t *testing.T) map[string]tools.Definition {
	e := env.New(local.New(), env.Options{Cwd: t.TempDir(), Home: "/"})
	out := map[string]tools.Definition{}
	for _, d := range tools.Definitions(e, tools.Options{}) {
		out[d.Name] = d
	}
	return out
}

var widths = []int{60, 80, 120}

// Every state of a tool box, at each width, without colour.
func TestToolBoxGolden(t *testing.T) {
	defs := definitions(t)
	long := strings.Repeat("a fairly long line of output that goes on and on ", 3)
	var output []string
	for i := 1; i <= 12; i++ {
		output = append(output, fmt.Sprintf("line %d", i))
	}
	boxes := []*toolBox{
		{name: "read", args: json.RawMessage(`{"path":"src/main.go"}`), state: toolPending},
		{name: "bash", args: json.RawMessage(`{"command":"go test ./..."}`), state: toolRunning, output: strings.Join(output, "\n")},
		{name: "bash", args: json.RawMessage(`{"command":"make"}`), state: toolDone, result: loop.TextResult(strings.Join(output, "\n") + "\n" + long)},
		{name: "edit", args: json.RawMessage(`{"path":"a.go"}`), state: toolDone, result: loop.Result{
			Content: loop.ContentList{&loop.Text{Text: "Successfully replaced 1 block in a.go."}},
			Details: tools.EditDetails{Diff: "-old line\n+new line", Replacements: 1}}},
		{name: "read", args: json.RawMessage(`{"path":"missing.txt"}`), state: toolFailed, result: loop.TextResult("File not found: missing.txt")},
	}
	th := newTheme(false)
	for _, w := range widths {
		var out []string
		for _, b := range boxes {
			out = append(out, renderToolBox(b, defs[b.name], w, false, "⠋", th))
			for _, l := range strings.Split(out[len(out)-1], "\n") {
				assert.LessOrEqual(t, ansi.StringWidth(l), w, "fits in %d columns: %q", w, l)
			}
		}
		out = append(out, "expanded:", renderToolBox(boxes[2], defs["bash"], w, true, "⠋", th))
		golden(t, fmt.Sprintf("toolbox-%d.golden", w), strings.Join(out, "\n\n")+"\n")
	}
}

// The footer at each width: what matters most stays when it is narrow.
func TestFooterGolden(t *testing.T) {
	states := []footer{
		{hosts: []hostState{{"devbox", true}}, cwd: "/home/alice/src/project", branch: "main", model: "anthropic/claude-sonnet-4-5", thinking: "low",
			usage: agent.Totals{Usage: loop.Usage{Input: 12_300, Output: 1_250, CacheRead: 40_000}, Cost: 0.0421}, context: 52_000, window: 200_000, auto: true},
		{hosts: []hostState{{"devbox", true}, {"gpu", false}}, cwd: "/srv", model: "openai/gpt-4o-mini",
			usage: agent.Totals{Usage: loop.Usage{Input: 900, Output: 80}}, context: 100_000, window: 128_000},
		{hosts: []hostState{{"local", true}}, cwd: "/tmp", model: "openai/qwen3", context: 7_800, window: 8_000, auto: true},
	}
	th := newTheme(false)
	for _, w := range widths {
		var out []string
		for _, f := range states {
			line := f.view(w, th)
			assert.LessOrEqual(t, ansi.StringWidth(line), w)
			out = append(out, line)
		}
		golden(t, fmt.Sprintf("footer-%d.golden", w), strings.Join(out, "\n")+"\n")
	}
	// Colour marks a context past 70 % and past 90 %.
	color := newTheme(true)
	assert.Contains(t, states[1].view(120, color), "\x1b[", "78 %: the warning colour")
	assert.NotEqual(t, states[1].view(120, color), states[2].view(120, color))
	assert.NotContains(t, states[0].view(120, th), "\x1b[", "no colour without it")
}

// A user message and an answer's Markdown, wrapped to the width.
func TestMessagesGolden(t *testing.T) {
	th := newTheme(false)
	answer := "Here is the plan:\n\n1. read `main.go`\n2. fix the **bug**\n\n```go\nfunc main() { fmt.Println(\"hi\") }\n```\n"
	for _, w := range widths {
		out := renderUser("please look at main.go and fix the failing test, then run the whole suite again", w, th) + "\n" + markdown(answer, w, th)
		for _, l := range strings.Split(out, "\n") {
			assert.LessOrEqual(t, ansi.StringWidth(l), w)
		}
		golden(t, fmt.Sprintf("messages-%d.golden", w), out+"\n")
	}
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
