package tui

import (
	"context"
	"encoding/json"
	"errors"
	"regexp"
	"strings"
	"testing"

	tea "charm.land/bubbletea/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pi-remote/pi-remote/agent"
	"github.com/pi-remote/pi-remote/internal/termtext/termtexttest"
	"github.com/pi-remote/pi-remote/loop"
	"github.com/pi-remote/pi-remote/tools"
)

// hostile is text that would take over the terminal: the clipboard (OSC
// 52), the title (OSC 0), the screen (CSI 2J, 8-bit CSI), a hyperlink
// (OSC 8), DCS, a bell, a CR that overwrites, a bidi override, DEL, a
// colour, and a byte that is not UTF-8.
const hostile = "clip\x1b]52;c;cm0gLXJmIH4=\a title\x1b]0;pwned\a clear\x1b[2J c1\u009b2J" +
	" link\x1b]8;;https://evil.example/\x1b\\here\x1b]8;;\x1b\\ dcs\x1bP+q544e\x1b\\ bell\a cr\rover" +
	" rlo\u202eevil\u202c del\x7f red\x1b[31mred\x1b[0m raw\x9b2J end"

// sgr is the only kind of sequence the terminal UI writes itself.
var sgr = regexp.MustCompile(`\x1b\[[0-9;:]*m`)

// Whatever the model, a tool or a host says reaches the view and the
// scrollback with its controls shown as text: the answer (streamed in
// pieces that split the sequences, and whole), thinking, the calls, their
// live output and results, a tool's name, an edit's diff, errors,
// notices, the footer (hosts, cwd, branch), completions (file names on
// the host), a picker (session titles) and the commands' output (jobs,
// hosts). With colour, the only sequences are the theme's.
func TestHostileTextIsShownAsText(t *testing.T) {
	for _, color := range []bool{false, true} {
		t.Run(map[bool]string{false: "plain", true: "colour"}[color], func(t *testing.T) {
			h := newHarness(t, Options{
				Tools: definitions(t), Hosts: []string{"dev" + hostile}, Cwd: "/srv/" + hostile, Model: "openai/x" + hostile,
				CompletePath: func(_ context.Context, prefix string) []string {
					return []string{prefix + "ain.go", prefix + hostile}
				},
				Commands: Commands{
					Sessions: func() []Choice { return []Choice{{Label: "11-30 10:00  aaaa  " + hostile, Value: "a"}} },
					Resume:   func(string) (Agent, string, error) { return nil, "", errors.New("resume: " + hostile) },
					Jobs:     func(int) string { return "ID  STATE  COMMAND\nj1  running  " + hostile },
					Hosts:    func() string { return "dev  down at start: " + hostile },
				},
			})
			h.m.th = newTheme(color)
			h.m.width = 2000 // the whole footer
			for _, host := range h.m.o.Hosts {
				h.m.footer.hosts = append(h.m.footer.hosts, hostState{name: host, up: true})
			}
			h.m.footer.cwd, h.m.footer.model = h.m.o.Cwd, h.m.o.Model
			var views []string
			show := func(msg tea.Msg) {
				h.do(msg)
				views = append(views, h.view())
			}
			call := func(id, name string, args any) *loop.ToolCall {
				b, err := json.Marshal(args)
				require.NoError(t, err)
				return &loop.ToolCall{ID: id, Name: name, Arguments: b}
			}
			calls := []*loop.ToolCall{
				call("c1", "bash", map[string]any{"command": "cat x # " + hostile}),
				call("c2", "bash"+hostile, map[string]any{}),
				call("c3", "edit", map[string]any{"path": "a" + hostile}),
				call("c4", "read", map[string]any{"path": "b" + hostile}),
			}
			answer := "Answer: " + hostile + "\n\n" + hostile + "\n\n```\n" + hostile + "\n```\n"

			show(branchMsg{"main" + hostile})
			show(eventMsg{loop.MessageEnd{Message: loop.NewUserText("prompt " + hostile)}})
			show(eventMsg{loop.MessageStart{Message: &loop.AssistantMessage{}}})
			show(eventMsg{loop.MessageUpdate{Message: &loop.AssistantMessage{}, Delta: &loop.ThinkingDelta{Delta: "hm " + hostile}}})
			for _, piece := range []string{answer[:13], answer[13:40], answer[40:90], answer[90:]} {
				show(eventMsg{loop.MessageUpdate{Message: &loop.AssistantMessage{}, Delta: &loop.TextDelta{Delta: piece}}})
			}
			content := loop.ContentList{&loop.Thinking{Thinking: "hm " + hostile}, &loop.Text{Text: answer}}
			for _, c := range calls {
				content = append(content, c)
			}
			show(eventMsg{loop.MessageEnd{Message: &loop.AssistantMessage{StopReason: loop.StopToolUse, Content: content, ErrorMessage: "oops " + hostile}}})
			for _, c := range calls {
				show(eventMsg{loop.ToolExecutionStart{ToolCallID: c.ID, ToolName: c.Name, Args: c.Arguments}})
			}
			show(eventMsg{loop.ToolExecutionUpdate{ToolCallID: "c1", ToolName: "bash", PartialResult: loop.TextResult("live " + hostile)}})
			show(eventMsg{loop.ToolExecutionEnd{ToolCallID: "c1", ToolName: "bash", Result: loop.TextResult("out " + hostile)}})
			show(eventMsg{loop.ToolExecutionEnd{ToolCallID: "c2", ToolName: calls[1].Name, Result: loop.TextResult("Tool not found " + hostile), IsError: true}})
			show(eventMsg{loop.ToolExecutionEnd{ToolCallID: "c3", ToolName: "edit", Result: loop.Result{
				Content: loop.ContentList{&loop.Text{Text: "Successfully replaced 1 block in a" + hostile}},
				Details: tools.EditDetails{Diff: "-old " + hostile + "\n+new " + hostile, Replacements: 1}}}})
			show(eventMsg{loop.ToolExecutionEnd{ToolCallID: "c4", ToolName: "read", Result: loop.TextResult("file " + hostile)}})
			show(eventMsg{agent.CompactionEnd{Error: "compaction " + hostile}})
			show(noticeMsg{text: "retry " + hostile, print: true})
			show(noticeMsg{text: "status " + hostile})
			h.m.footer.notice = ""
			show(doneMsg{err: errors.New("run " + hostile)})

			h.typeText("look at @m")
			h.do(tea.KeyPressMsg{Code: 'x', Text: "x"})
			h.completions()
			views = append(views, h.view())
			require.Len(t, h.m.editor.comps, 2, "the host's file names are offered")
			h.m.editor.ta.Reset()
			h.m.editor.comps, h.m.editor.token = nil, ""
			for _, command := range []string{"/jobs", "/hosts", "/resume"} {
				h.typeText(command)
				show(enter)
			}
			require.NotNil(t, h.m.picker)
			show(enter)

			require.NotEmpty(t, h.printed, "the scrollback was seen")
			all := strings.Join(append(views, h.printed...), "\n")
			if color {
				assert.Contains(t, all, "\x1b[", "in colour")
				all = sgr.ReplaceAllString(all, "")
			}
			assert.Empty(t, termtexttest.Controls(all))
			for _, want := range []string{
				"Answer: clip^[]52;c;cm0gLXJmIH4=^G", // the answer
				"$ cat x # clip^[]52;c;",             // a call
				"out clip^[]52;c;",                   // a result
				"live clip^[]52;c;",                  // live output
				"bash" + "clip^[]52;c;",              // a tool's name
				"old clip^[]52;c;",                   // a diff
				"main" + "clip^[]52;c;",              // the branch
				"@mx" + "clip^[]52;c;",               // a completion
				"aaaa  clip^[]52;c;",                 // a session's title
				"j1  running  clip^[]52;c;",          // a job
				"run clip^[]52;c;",                   // an error
				`raw\x9b2J`,                          // a raw byte
			} {
				assert.Contains(t, all, want)
			}
		})
	}
}
