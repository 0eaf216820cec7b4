package tui

import (
	"context"
	"errors"
	"fmt"
	"strings"

	tea "charm.land/bubbletea/v2"
)

// shellOutputLimit bounds the output of a !command that goes to the
// model (the box shows it folded, whatever its length).
const shellOutputLimit = 50_000

// shell runs "!cmd" or "!!cmd": the person's own command, with bash on
// the default host, its output in a box as a call's (Esc kills it). The
// output of "!cmd" goes with the next prompt; "!!cmd" keeps it out of the
// model's context.
func (m *model) shell(text string) tea.Cmd {
	keep := !strings.HasPrefix(text, "!!")
	command := strings.TrimSpace(strings.TrimLeft(text, "!"))
	switch {
	case m.o.Commands.Shell == nil:
		return m.fail(errors.New("no shell here"))
	case command == "":
		return m.fail(errors.New("!COMMAND runs COMMAND on the default host and gives the model its output with your next prompt; !!COMMAND keeps it out"))
	case m.running:
		return m.fail(errors.New("a !command waits until the run ends (Esc aborts it)"))
	}
	shell := m.o.Commands.Shell
	m.inShell = true
	return m.start(func(ctx context.Context) doneMsg {
		out, failed := shell(ctx, command)
		if ctx.Err() != nil {
			return doneMsg{err: ctx.Err()}
		}
		if !keep {
			return doneMsg{}
		}
		if len(out) > shellOutputLimit {
			out = out[:shellOutputLimit] + "\n[output cut at 50,000 bytes]"
		}
		status := "ran"
		if failed {
			status = "ran (it failed)"
		}
		return doneMsg{shell: fmt.Sprintf("I %s this command:\n\n```sh\n%s\n```\n\nIts output:\n\n```\n%s\n```", status, command, strings.TrimRight(out, "\n"))}
	})
}
