package printer

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/pi-remote/pi-remote/agent"
	"github.com/pi-remote/pi-remote/internal/termtext"
)

// ErrAborted is LinePrompt's end when a second Ctrl-C comes during a run.
var ErrAborted = errors.New("aborted")

// LinePrompt is print mode's prompt loop for a terminal that cannot
// redraw (an editor's shell buffer): after intro, each line of in (at most
// maxLine bytes) is a run in one session (run), or "/compact [focus]" a
// compaction (compact). A value on sigs (Ctrl-C) aborts the current one;
// a second one exits with ErrAborted, one at the prompt or the end of in
// with nil. A run's error is told on errw, unless the run's events showed
// it (agent.Shown), and the loop goes on.
func LinePrompt(ctx context.Context, in io.Reader, errw io.Writer, sigs <-chan os.Signal, intro string, maxLine int,
	run func(ctx context.Context, prompt string) error, compact func(ctx context.Context, focus string) error) error {
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
		runCtx, cancel := context.WithCancel(ctx)
		done := make(chan error, 1)
		if focus, ok := strings.CutPrefix(line, "/compact"); ok && (focus == "" || focus[0] == ' ') {
			go func() { done <- compact(runCtx, strings.TrimSpace(focus)) }()
		} else {
			go func() { done <- run(runCtx, line) }()
		}
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
