// Package printer renders what the commands show, for a person or a
// program. An agent's events go to Print, for print mode (the assistant's
// text on stdout, tool activity on stderr, controls from outside shown as
// text), or to JSON, for --mode json (one event a line); both are safe
// for concurrent use, as events may come from several goroutines.
// LinePrompt is print mode's prompt loop where the terminal cannot
// redraw. The rest are listings: a host's Report, the Jobs left on hosts,
// the saved Sessions, and the Tools with their schemas.
package printer

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/pi-remote/pi-remote/agent"
	"github.com/pi-remote/pi-remote/internal/termtext"
	"github.com/pi-remote/pi-remote/loop"
	"github.com/pi-remote/pi-remote/ops/ssh"
	"github.com/pi-remote/pi-remote/tools"
)

// LiveLines is how much of a running command's output the terminal shows.
const LiveLines = 5

// Print is the print mode's terminal: the assistant's text streams to
// stdout; tool calls, folded results, token usage, a spinner while the
// model thinks and the live tail of a running bash go to stderr (the last
// two only on a terminal). Whatever came from outside (the model, a tool,
// a host) is shown with its controls made visible (termtext), on a
// terminal or not: print mode is for reading; --mode json has the exact
// text.
type Print struct {
	mu          sync.Mutex
	out, err    io.Writer
	answer      *termtext.Writer // the assistant's text, to out
	defs        map[string]tools.Definition
	th          tools.Theme
	tty         bool
	atLineStart bool
	live        int // lines of live output drawn on stderr, to erase
	spinStop    chan struct{}
	spinDone    chan struct{}
}

// New prints to out and errw; tty says errw is a terminal (a spinner, a
// live tail), color that it may be coloured; defs render the tool calls.
func New(out, errw io.Writer, defs map[string]tools.Definition, tty, color bool) *Print {
	return &Print{out: out, err: errw, answer: termtext.NewWriter(out), defs: defs, th: tools.Theme{Color: color}, tty: tty, atLineStart: true}
}

// Emit shows one event.
func (p *Print) Emit(e loop.Event) {
	if _, ok := e.(loop.TurnStart); ok {
		p.startSpinner()
		return
	}
	if _, ok := e.(loop.MessageStart); !ok {
		p.stopSpinner()
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	switch e := e.(type) {
	case loop.MessageUpdate:
		if d, ok := e.Delta.(*loop.TextDelta); ok && d.Delta != "" {
			io.WriteString(p.answer, d.Delta)
			p.atLineStart = strings.HasSuffix(d.Delta, "\n")
		}
	case loop.MessageEnd:
		a, ok := e.Message.(*loop.AssistantMessage)
		if !ok {
			return
		}
		p.answer.Flush()
		if !p.atLineStart {
			io.WriteString(p.out, "\n")
			p.atLineStart = true
		}
		switch {
		case agent.IsOverflowRefusal(a):
			// (The session compacts and tries again; if that fails too,
			// the run's error says so.)
			fmt.Fprintln(p.err, p.th.Dim("  the context did not fit: "+termtext.String(a.ErrorMessage)))
		case a.ErrorMessage != "":
			fmt.Fprintln(p.err, p.th.Red("error: "+termtext.String(a.ErrorMessage)))
		}
		if u := a.Usage; u != nil && (u.Input > 0 || u.Output > 0) {
			line := fmt.Sprintf("  tokens: %d in", u.Input)
			if u.CacheRead > 0 {
				line += fmt.Sprintf(" (%d cached)", u.CacheRead)
			}
			line += fmt.Sprintf(", %d out", u.Output)
			fmt.Fprintln(p.err, p.th.Dim(line))
		}
	case agent.CompactionStart:
		fmt.Fprintln(p.err, p.th.Yellow(fmt.Sprintf("  ⋯ compacting the context (%s)…", compactionReasons[e.Reason])))
	case agent.CompactionEnd:
		if e.Error != "" {
			fmt.Fprintln(p.err, p.th.Red("  ✗ compaction failed: "+termtext.String(e.Error)))
		} else {
			fmt.Fprintln(p.err, p.th.Dim(fmt.Sprintf("  compacted: %d → %d tokens", e.TokensBefore, e.TokensAfter)))
		}
	case loop.ToolExecutionStart:
		fmt.Fprintln(p.err, p.th.Cyan("→ "+tools.RenderCall(p.defs[e.ToolName], e.Args)))
	case loop.ToolExecutionUpdate:
		if !p.tty {
			return
		}
		p.eraseLive()
		tail := strings.Split(strings.TrimRight(termtext.String(e.PartialResult.Content.Text()), "\n"), "\n")
		if len(tail) > LiveLines {
			tail = tail[len(tail)-LiveLines:]
		}
		for _, l := range tail {
			fmt.Fprintln(p.err, p.th.Dim("    │ "+l))
		}
		p.live = len(tail)
	case loop.ToolExecutionEnd:
		p.eraseLive()
		mark := p.th.Green("✓")
		if e.IsError {
			mark = p.th.Red("✗")
		}
		fmt.Fprintf(p.err, "  %s %s\n", mark, termtext.String(e.ToolName))
		body := tools.RenderResult(p.defs[e.ToolName], e.Result, p.th)
		if strings.TrimSpace(body) != "" {
			fmt.Fprintln(p.err, indent(body, "    "))
		}
	}
}

var compactionReasons = map[string]string{
	"threshold": "near the window",
	"overflow":  "the model refused its size",
	"manual":    "asked for",
}

// Note prints a notice between the tool lines.
func (p *Print) Note(text string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.eraseLive()
	fmt.Fprintln(p.err, p.th.Yellow("  ⟳ "+termtext.String(text)))
}

// LinkState tells of a host's lost and restored connection, between the
// tool lines (the live tail is drawn again by the next update).
func (p *Print) LinkState(host string, s ssh.LinkState, down time.Duration, err error) {
	host = termtext.String(host)
	p.mu.Lock()
	defer p.mu.Unlock()
	p.eraseLive()
	switch s {
	case ssh.LinkReconnecting:
		fmt.Fprintln(p.err, p.th.Yellow(fmt.Sprintf("  ⟳ connection to %s lost; reconnecting… (running commands go on there)", host)))
	case ssh.LinkBack:
		fmt.Fprintln(p.err, p.th.Dim(fmt.Sprintf("  ⟳ reconnected to %s after %s", host, down.Round(100*time.Millisecond))))
	case ssh.LinkGaveUp:
		fmt.Fprintln(p.err, p.th.Red(fmt.Sprintf("  ✗ %s did not come back within %s: %s", host, down.Round(time.Second), termtext.String(fmt.Sprint(err)))))
	}
}

// eraseLive removes the live tail drawn by the last update.
func (p *Print) eraseLive() {
	if p.live > 0 {
		fmt.Fprintf(p.err, "\x1b[%dF\x1b[J", p.live)
		p.live = 0
	}
}

func (p *Print) startSpinner() {
	if !p.tty {
		return
	}
	p.stopSpinner()
	stop, done := make(chan struct{}), make(chan struct{})
	p.mu.Lock()
	p.spinStop, p.spinDone = stop, done
	p.mu.Unlock()
	go func() {
		defer close(done)
		frames := []string{"⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"}
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		start := time.Now()
		for i := 0; ; i++ {
			p.mu.Lock()
			fmt.Fprintf(p.err, "\r%s %s", p.th.Cyan(frames[i%len(frames)]), p.th.Dim(fmt.Sprintf("waiting for the model %.0fs", time.Since(start).Seconds())))
			p.mu.Unlock()
			select {
			case <-stop:
				p.mu.Lock()
				io.WriteString(p.err, "\r\x1b[K")
				p.mu.Unlock()
				return
			case <-t.C:
			}
		}
	}()
}

func (p *Print) stopSpinner() {
	p.mu.Lock()
	stop, done := p.spinStop, p.spinDone
	p.spinStop, p.spinDone = nil, nil
	p.mu.Unlock()
	if stop != nil {
		close(stop)
		<-done
	}
}

// Finish ends a run: the spinner stops, held-back text is written.
func (p *Print) Finish() {
	p.stopSpinner()
	p.mu.Lock()
	defer p.mu.Unlock()
	p.answer.Flush()
}

func indent(s, prefix string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = prefix + l
	}
	return strings.Join(lines, "\n")
}

// JSON prints one event per line (loop.MarshalEvent).
type JSON struct {
	mu sync.Mutex
	w  *bufio.Writer
}

// NewJSON prints events to w.
func NewJSON(w io.Writer) *JSON { return &JSON{w: bufio.NewWriter(w)} }

func (j *JSON) Emit(e loop.Event) {
	b, err := loop.MarshalEvent(e)
	if err != nil {
		b, _ = json.Marshal(map[string]string{"type": "error", "error": err.Error()})
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	j.w.Write(b)
	j.w.WriteByte('\n')
	j.w.Flush()
}

// Finish is nothing to do: every line is flushed as it is written.
func (j *JSON) Finish() {}
