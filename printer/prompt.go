package printer

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"

	"github.com/pi-remote/pi-remote/agent"
	"github.com/pi-remote/pi-remote/internal/termtext"
)

// ErrAborted is LinePrompt's end when a second Ctrl-C comes during a run.
var ErrAborted = errors.New("aborted")

// A LineCommand is a slash command of LinePrompt: "/name [arg]" runs it
// instead of sending the line to the model. Run may take long (it is
// aborted like a run); what it returns is shown, its controls as text.
type LineCommand struct {
	Usage, Help string // "/export [file]", "write the transcript as Markdown"
	Run         func(ctx context.Context, arg string) (string, error)
}

// LinePrompt is print mode's prompt loop for a terminal that cannot
// redraw (an editor's shell buffer): after intro, each line of in (at most
// maxLine bytes) is a run in one session (run), or, when it starts with
// "/", a command: one of commands, /help (lists them) or /quit (/exit),
// never sent to the model; an unknown one is told. A value on sigs
// (Ctrl-C) aborts the current run or command; a second one exits with
// ErrAborted, one at the prompt, /quit or the end of in with nil. An
// error is told on errw, unless the run's events showed it (agent.Shown),
// and the loop goes on.
func LinePrompt(ctx context.Context, in io.Reader, errw io.Writer, sigs <-chan os.Signal, intro string, maxLine int,
	run func(ctx context.Context, prompt string) error, commands map[string]LineCommand) error {
	lines := make(chan string)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(in)
		sc.Buffer(make([]byte, 64<<10), maxLine)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	io.WriteString(errw, intro)
	for {
		fmt.Fprint(errw, "› ")
		var line string
		select {
		case l, ok := <-lines:
			if !ok {
				fmt.Fprintln(errw)
				return nil
			}
			line = strings.TrimSpace(l)
		case <-sigs:
			fmt.Fprintln(errw)
			return nil
		}
		if line == "" {
			continue
		}
		work := func(ctx context.Context) error { return run(ctx, line) }
		if text, ok := strings.CutPrefix(line, "/"); ok {
			name, arg, _ := strings.Cut(text, " ")
			arg = strings.TrimSpace(arg)
			cmd, ok := commands[name]
			switch {
			case name == "quit" || name == "exit":
				return nil
			case name == "help":
				io.WriteString(errw, lineHelp(commands))
				continue
			case !ok:
				fmt.Fprintf(errw, "unknown command /%s (/help lists them); it was not sent to the model\n", termtext.String(name))
				continue
			}
			work = func(ctx context.Context) error {
				out, err := cmd.Run(ctx, arg)
				if out != "" {
					fmt.Fprintln(errw, termtext.String(out))
				}
				return err
			}
		}
		runCtx, cancel := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() { done <- work(runCtx) }()
		var err error
		select {
		case err = <-done:
		case <-sigs:
			cancel()
			fmt.Fprintln(errw, "\naborting… (Ctrl-C again to exit)")
			select {
			case err = <-done:
			case <-sigs:
				cancel()
				<-done
				return ErrAborted
			}
		}
		cancel()
		if err != nil && !agent.Shown(err) {
			fmt.Fprintln(errw, "pi-remote:", termtext.String(err.Error()))
		}
	}
}

// lineHelp lists LinePrompt's commands, by name.
func lineHelp(commands map[string]LineCommand) string {
	var b strings.Builder
	names := slices.Sorted(maps.Keys(commands))
	usages := []string{"/help", "/quit"}
	helps := []string{"this list", "leave (also /exit, Ctrl-D)"}
	for _, name := range names {
		usages = append(usages, commands[name].Usage)
		helps = append(helps, commands[name].Help)
	}
	width := 0
	for _, u := range usages {
		width = max(width, len(u))
	}
	for i, u := range usages {
		fmt.Fprintf(&b, "  %-*s  %s\n", width, u, helps[i])
	}
	return b.String()
}
