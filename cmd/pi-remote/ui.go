package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/pi-remote/pi-remote/agent"
	"github.com/pi-remote/pi-remote/internal/termtext"
	"github.com/pi-remote/pi-remote/loop"
	"github.com/pi-remote/pi-remote/ops/ssh"
	"github.com/pi-remote/pi-remote/tools"
	"github.com/pi-remote/pi-remote/workspace"
)

// isTerminal says whether w is a terminal (a character device).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// useColor: only on a terminal, never with NO_COLOR or TERM=dumb.
func useColor(w io.Writer) bool { return colorFor(isTerminal(w), os.Getenv) }

func colorFor(tty bool, getenv func(string) string) bool {
	return tty && getenv("NO_COLOR") == "" && getenv("TERM") != "dumb"
}

// liveLines is how much of a running command's output the terminal shows.
const liveLines = 5

// printWriter is the print mode's terminal: the assistant's text streams to
// stdout; tool calls, folded results, token usage, a spinner while the
// model thinks and the live tail of a running bash go to stderr (the last
// two only on a terminal). Whatever came from outside (the model, a tool,
// a host) is shown with its controls made visible (termtext), on a
// terminal or not: print mode is for reading; --mode json has the exact
// text.
type printWriter struct {
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

func newPrintWriter(out, errw io.Writer, defs map[string]tools.Definition, tty, color bool) *printWriter {
	return &printWriter{out: out, err: errw, answer: termtext.NewWriter(out), defs: defs, th: tools.Theme{Color: color}, tty: tty, atLineStart: true}
}

func (p *printWriter) emit(e loop.Event) {
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
		if a.ErrorMessage != "" {
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
		if len(tail) > liveLines {
			tail = tail[len(tail)-liveLines:]
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

// note prints a notice between the tool lines.
func (p *printWriter) note(text string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.eraseLive()
	fmt.Fprintln(p.err, p.th.Yellow("  ⟳ "+termtext.String(text)))
}

// linkState tells of a host's lost and restored connection, between the
// tool lines (the live tail is drawn again by the next update).
func (p *printWriter) linkState(host string, s ssh.LinkState, down time.Duration, err error) {
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

// relay passes the hosts' connection news and the model's retries to a
// front end set once it exists (hosts connect, and the model is built,
// before it does); until then they are dropped.
type relay struct {
	mu    sync.Mutex
	link  workspace.LinkFunc
	retry func(attempt int, why string)
}

func (r *relay) set(link workspace.LinkFunc, retry func(attempt int, why string)) {
	r.mu.Lock()
	r.link, r.retry = link, retry
	r.mu.Unlock()
}

func (r *relay) onLink(host string, s ssh.LinkState, down time.Duration, err error) {
	r.mu.Lock()
	to := r.link
	r.mu.Unlock()
	if to != nil {
		to(host, s, down, err)
	}
}

func (r *relay) onRetry(attempt int, why string) {
	r.mu.Lock()
	to := r.retry
	r.mu.Unlock()
	if to != nil {
		to(attempt, why)
	}
}

// eraseLive removes the live tail drawn by the last update.
func (p *printWriter) eraseLive() {
	if p.live > 0 {
		fmt.Fprintf(p.err, "\x1b[%dF\x1b[J", p.live)
		p.live = 0
	}
}

func (p *printWriter) startSpinner() {
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

func (p *printWriter) stopSpinner() {
	p.mu.Lock()
	stop, done := p.spinStop, p.spinDone
	p.spinStop, p.spinDone = nil, nil
	p.mu.Unlock()
	if stop != nil {
		close(stop)
		<-done
	}
}

func (p *printWriter) finish() {
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

// shownOn is where output that is data (a tool's, a job's, a transcript)
// goes: w itself, byte for byte, when w is a file or a pipe; on a terminal
// a writer that shows its controls as text (termtext). done writes what
// that writer held back; call it when the output ends.
func shownOn(w io.Writer) (out io.Writer, done func() error) {
	if !isTerminal(w) {
		return w, func() error { return nil }
	}
	tw := termtext.NewWriter(w)
	return tw, tw.Flush
}

// encodeJSON writes v as JSON to w, indented by indent (none when ""),
// with the controls encoding/json leaves raw escaped (termtext.JSON): the
// value is the same, and a terminal shows it safely.
func encodeJSON(w io.Writer, v any, indent string) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if indent != "" {
		enc.SetIndent("", indent)
	}
	if err := enc.Encode(v); err != nil {
		return err
	}
	_, err := w.Write(termtext.JSON(buf.Bytes()))
	return err
}
