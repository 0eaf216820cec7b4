package tui

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"

	tea "charm.land/bubbletea/v2"

	"github.com/pi-remote/pi-remote/internal/termtext"
)

// command is a slash command: what it does and a line for /hotkeys. A
// prompt template's or a skill's (Commands.Prompts) has no run: its
// message is sent.
type command struct {
	usage, help string
	run         func(m *model, arg string) tea.Cmd
}

// BuiltinCommands are the names of the terminal's own slash commands,
// whatever the options offer: no prompt template may take one.
func BuiltinCommands() []string {
	return []string{"compact", "copy", "exit", "export", "fork", "hosts", "hotkeys", "jobs", "mcp", "model", "new", "quit", "resume", "session", "thinking", "tree"}
}

// commands are the slash commands offered with these options.
func (m *model) commands() map[string]command {
	c := m.o.Commands
	all := map[string]command{
		"quit":    {"/quit", "leave (also /exit)", func(m *model, _ string) tea.Cmd { return m.quit() }},
		"exit":    {"", "", func(m *model, _ string) tea.Cmd { return m.quit() }},
		"compact": {"/compact [focus]", "summarize the older conversation now", (*model).compact},
		"hotkeys": {"/hotkeys", "keys and commands", (*model).hotkeys},
		"copy":    {"/copy", "copy the last answer (OSC 52: over ssh, in tmux)", (*model).copyAnswer},
	}
	if c.SetModel != nil {
		set := (*model).setModel
		all["model"] = command{"/model [PROVIDER/ID]", "switch the model (a picker without one)", func(m *model, arg string) tea.Cmd {
			if arg != "" {
				return set(m, arg)
			}
			var choices []Choice
			if c.Models != nil {
				choices = c.Models()
			}
			m.picker = &picker{title: "model (now " + m.footer.model + ")", all: choices, pick: func(m *model, ch Choice) tea.Cmd { return set(m, ch.Value) }}
			return nil
		}}
	}
	switchTo := func(m *model, open func() (Agent, string, error)) tea.Cmd {
		a, about, err := open()
		if err != nil {
			return m.fail(err)
		}
		m.o.Agent = a
		m.refreshUsage()
		// (What was said, then which session it is: the line nearest
		// the editor.)
		return tea.Sequence(m.replay(), m.print(m.th.dim.Render(termtext.String(about))))
	}
	if c.Resume != nil && c.Sessions != nil {
		all["resume"] = command{"/resume", "continue another session (a picker)", func(m *model, _ string) tea.Cmd {
			m.picker = &picker{title: "resume a session", all: c.Sessions(), pick: func(m *model, ch Choice) tea.Cmd {
				return switchTo(m, func() (Agent, string, error) { return c.Resume(ch.Value) })
			}}
			return nil
		}}
	}
	if c.Fork != nil && c.ForkPoints != nil {
		all["fork"] = command{"/fork", "a new session from one of your messages (a picker)", func(m *model, _ string) tea.Cmd {
			m.picker = &picker{title: "fork from", all: c.ForkPoints(), pick: func(m *model, ch Choice) tea.Cmd {
				forked := false
				cmd := switchTo(m, func() (Agent, string, error) {
					a, about, err := c.Fork(ch.Value)
					forked = err == nil
					return a, about, err
				})
				// The message forked from, back in the editor to change
				// and send.
				if forked && ch.Text != "" && m.editor.value() == "" {
					m.editor.setText(ch.Text)
				}
				return cmd
			}}
			return nil
		}}
	}
	if c.Tree != nil && c.Navigate != nil {
		all["tree"] = command{"/tree", "the session as a tree: go on from any message (Esc Esc: your last one)", treeCommand}
	}
	if c.New != nil {
		all["new"] = command{"/new", "start a new session", func(m *model, _ string) tea.Cmd { return switchTo(m, c.New) }}
	}
	if c.Jobs != nil {
		all["jobs"] = command{"/jobs", "remote commands that outlive their connection", func(m *model, _ string) tea.Cmd { return m.print(termtext.String(c.Jobs(m.cols()))) }}
	}
	if c.MCP != nil {
		all["mcp"] = command{"/mcp", "the MCP servers, their state and their tools", func(m *model, _ string) tea.Cmd { return m.print(termtext.String(c.MCP())) }}
	}
	if c.SetThinking != nil {
		all["thinking"] = command{"/thinking off|low|medium|high", "the model's reasoning level", func(m *model, arg string) tea.Cmd {
			if arg == "" {
				return m.print("thinking: " + termtext.String(m.footer.thinking))
			}
			if err := c.SetThinking(arg); err != nil {
				return m.fail(err)
			}
			m.footer.thinking = arg
			return m.print(m.th.dim.Render("thinking: " + termtext.String(arg)))
		}}
	}
	if c.Session != nil {
		all["session"] = command{"/session", "the session's file, size, cost, and the permissions in force", func(m *model, _ string) tea.Cmd { return m.print(termtext.String(c.Session())) }}
	}
	if c.Export != nil {
		all["export"] = command{"/export [file]", "write the transcript as Markdown (or .html)", func(m *model, arg string) tea.Cmd {
			where, err := c.Export(arg)
			if err != nil {
				return m.fail(err)
			}
			return m.print(m.th.dim.Render("exported to " + termtext.String(where)))
		}}
	}
	if c.Hosts != nil {
		all["hosts"] = command{"/hosts [NAME]", "every host's connection; NAME becomes the default", func(m *model, arg string) tea.Cmd {
			if arg == "" || c.SetDefaultHost == nil {
				return m.print(termtext.String(c.Hosts()))
			}
			if err := c.SetDefaultHost(arg); err != nil {
				return m.fail(err)
			}
			m.footer.setDefaultHost(arg)
			return m.print(m.th.dim.Render("default host: " + termtext.String(arg)))
		}}
	}
	if c.Prompts != nil && c.Expand != nil {
		for _, p := range c.Prompts() {
			if _, taken := all[p.Name]; taken || slices.Contains(BuiltinCommands(), p.Name) {
				continue
			}
			// (Words from a template's or a repository's file: controls
			// shown as text.)
			all[p.Name] = command{usage: "/" + termtext.String(p.Name) + " [args]", help: termtext.String(p.Description)}
		}
	}
	return all
}

// setModel switches the model (/model, the picker, Ctrl+P) and says so.
func (m *model) setModel(name string) tea.Cmd {
	if err := m.o.Commands.SetModel(name); err != nil {
		return m.fail(err)
	}
	m.footer.model = name
	m.refreshUsage()
	return m.print(m.th.dim.Render("model: " + termtext.String(name)))
}

// describeCommand is what a completion of /name says of the command: its
// arguments and what it does ("[focus] — summarize …").
func (m *model) describeCommand(name string) string {
	c, ok := m.commands()[strings.TrimPrefix(name, "/")]
	if !ok {
		return ""
	}
	args := strings.TrimSpace(strings.TrimPrefix(c.usage, name))
	if args != "" {
		args += " "
	}
	return args + "— " + c.help
}

// commandNames are the slash commands offered for completion.
func (m *model) commandNames() []string {
	var names []string
	for name, c := range m.commands() {
		if c.usage != "" {
			names = append(names, name)
		}
	}
	return names
}

// command runs a slash command; a prompt template's or a skill's sends
// its message as the editor's text would be (followUp: as a follow-up
// while a run goes on).
func (m *model) command(text string, followUp bool) tea.Cmd {
	name, arg := strings.TrimPrefix(text, "/"), ""
	if i := strings.IndexAny(name, " \n"); i >= 0 {
		name, arg = name[:i], name[i+1:]
	}
	cmd, ok := m.commands()[name]
	if !ok {
		return m.fail(fmt.Errorf("unknown command /%s: nothing was sent (/hotkeys lists the commands, prompt templates and skills; a message that begins with // is sent as it is)", name))
	}
	if cmd.run == nil {
		msg, ok := m.o.Commands.Expand(name, strings.TrimSpace(arg))
		if !ok {
			return m.fail(fmt.Errorf("/%s is gone", name))
		}
		return m.send(msg, followUp)
	}
	if m.running && name != "quit" && name != "exit" && name != "hotkeys" && name != "copy" {
		return m.fail(fmt.Errorf("/%s waits until the run ends (Esc aborts it)", name))
	}
	return cmd.run(m, strings.TrimSpace(arg))
}

// fail shows err (it may carry a host's text: controls shown as text).
func (m *model) fail(err error) tea.Cmd {
	return m.print(m.th.bad.Render(termtext.String(err.Error())))
}

func (m *model) compact(focus string) tea.Cmd {
	return m.start(func(ctx context.Context) doneMsg {
		return doneMsg{err: m.o.Agent.Compact(ctx, focus), compact: true}
	})
}

// hotkeyHelp lists the keys, then (after a line of its own) the keys of
// an approval prompt.
var hotkeyHelp = [][2]string{
	{"Enter", "send; while the agent works: steer it"},
	{"Alt+Enter", "new line; while the agent works: queue a follow-up"},
	{"Shift+Enter, Ctrl+J", "new line"},
	{"Up, Down", "earlier prompts (from the first or last row of the editor)"},
	{"Esc", "abort the run (remote commands are killed)"},
	{"Esc Esc", "on an empty editor: /tree at your last message, to edit and send again"},
	{"Ctrl+O", "every tool box in full or folded; expand pastes"},
	{"Ctrl+T", "the model's thinking shown or folded"},
	{"Ctrl+L", "pick the model (as /model)"},
	{"Ctrl+P, Shift+Ctrl+P", "the next (previous) model of --models or \"enabledModels\""},
	{"Shift+Tab", "the next thinking level (off, low, medium, high)"},
	{"Ctrl+G", "edit the prompt in $VISUAL or $EDITOR"},
	{"Ctrl+Z, Ctrl+-", "undo in the editor"},
	{"Ctrl+C", "clear the editor; twice: quit"},
	{"Ctrl+D", "quit (on an empty editor)"},
	{"!COMMAND", "run COMMAND on the default host; its output goes with your next prompt"},
	{"!!COMMAND", "run it, its output kept out of the model's context"},
	{"", "When a tool call waits for your approval:"},
	{"y", "allow it once"},
	{"a", "allow it, and the same call, for the rest of the session"},
	{"n", "deny it; type a reason for the model, Enter sends it"},
	{"Esc", "deny it"},
	{"Ctrl+C", "deny it and abort the run"},
}

// hotkeys lists the keys, the commands, and the prompt templates and
// skills in one table, its first column as wide as its widest entry.
func (m *model) hotkeys(string) tea.Cmd {
	var cmds, prompts [][2]string
	for _, c := range m.commands() {
		switch {
		case c.run == nil:
			prompts = append(prompts, [2]string{c.usage, c.help})
		case c.usage != "":
			cmds = append(cmds, [2]string{c.usage, c.help})
		}
	}
	sort.Slice(cmds, func(i, j int) bool { return cmds[i][0] < cmds[j][0] })
	sort.Slice(prompts, func(i, j int) bool { return prompts[i][0] < prompts[j][0] })
	width := 0
	for _, row := range append(append(slices.Clone(hotkeyHelp), cmds...), prompts...) {
		width = max(width, len(row[0]))
	}
	var b strings.Builder
	for _, row := range hotkeyHelp {
		if row[0] == "" {
			fmt.Fprintf(&b, "\n%s\n", row[1])
			continue
		}
		fmt.Fprintf(&b, "%-*s  %s\n", width, row[0], row[1])
	}
	b.WriteString("\n")
	for _, row := range cmds {
		fmt.Fprintf(&b, "%-*s  %s\n", width, row[0], row[1])
	}
	if len(prompts) > 0 {
		b.WriteString("\nPrompt templates and skills (the message each sends goes to the model):\n")
		for _, row := range prompts {
			fmt.Fprintf(&b, "%-*s  %s\n", width, row[0], row[1])
		}
	}
	return m.print(strings.TrimSuffix(b.String(), "\n"))
}

// copyAnswer copies the last answer's text (OSC 52).
func (m *model) copyAnswer(string) tea.Cmd {
	if m.transcript.lastAnswer == "" {
		return m.fail(fmt.Errorf("no answer to copy yet"))
	}
	return tea.Sequence(tea.SetClipboard(m.transcript.lastAnswer), m.print(m.th.dim.Render("copied the last answer")))
}
