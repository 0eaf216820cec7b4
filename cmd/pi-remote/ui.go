package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/pi-remote/pi-remote/agent/permission"
	"github.com/pi-remote/pi-remote/internal/termtext"
	"github.com/pi-remote/pi-remote/ops/ssh"
	"github.com/pi-remote/pi-remote/printer"
	"github.com/pi-remote/pi-remote/tui"
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

// describePolicy says, for a person, what permission policy p does on
// hosts: each host's mode and where it came from, then the rules in force
// (deny, ask, allow: the order they win in), each with where it came from,
// those a person added "this session" among them.
func describePolicy(p permission.Policy, hosts []string) string {
	var b strings.Builder
	b.WriteString("permissions:")
	width := 0
	for _, h := range hosts {
		width = max(width, len(h))
	}
	for _, h := range hosts {
		from := p.ModeFrom
		if m, ok := p.Hosts[h]; ok && m != "" {
			from = p.HostsFrom[h]
		}
		if from == "" {
			from = "default"
		}
		fmt.Fprintf(&b, "\n  %-*s  %-9s  (%s)", width, h, p.HostMode(h), from)
	}
	if len(p.Deny)+len(p.Ask)+len(p.Allow) == 0 {
		b.WriteString("\nrules: none")
		return b.String()
	}
	b.WriteString("\nrules (deny wins over ask, ask over allow):")
	for _, l := range []struct {
		kind  string
		rules []permission.Rule
	}{{"deny", p.Deny}, {"ask", p.Ask}, {"allow", p.Allow}} {
		for _, r := range l.rules {
			fmt.Fprintf(&b, "\n  %-5s  %s", l.kind, r.Text)
			if r.From != "" {
				fmt.Fprintf(&b, "  (%s)", r.From)
			}
		}
	}
	return b.String()
}

// lineCommands are the slash commands of the line prompt (TERM=dumb):
// those of the terminal UI that make sense line by line, on the same
// functions (c), so that none of them reaches the model. (/quit and
// /help are the prompt's own; the pickers, /resume and /fork, are left
// out: `pi-remote run --resume ID` does it.)
func lineCommands(a *runAgent, c tui.Commands, o *runOptions) map[string]printer.LineCommand {
	say := func(f func() string) func(context.Context, string) (string, error) {
		return func(context.Context, string) (string, error) { return f(), nil }
	}
	all := map[string]printer.LineCommand{
		"compact": {Usage: "/compact [focus]", Help: "summarize the older conversation now", Run: func(ctx context.Context, focus string) (string, error) {
			return "", a.compact(ctx, focus)
		}},
	}
	if c.Session != nil {
		all["session"] = printer.LineCommand{Usage: "/session", Help: "the session's file, size, cost, and the permissions in force", Run: say(c.Session)}
	}
	if c.Jobs != nil {
		all["jobs"] = printer.LineCommand{Usage: "/jobs", Help: "remote commands that outlive their connection", Run: say(func() string { return c.Jobs(0) })}
	}
	if c.MCP != nil {
		all["mcp"] = printer.LineCommand{Usage: "/mcp", Help: "the MCP servers, their state and their tools", Run: say(c.MCP)}
	}
	if c.Export != nil {
		all["export"] = printer.LineCommand{Usage: "/export [file]", Help: "write the transcript as Markdown (or .html)", Run: func(_ context.Context, file string) (string, error) {
			where, err := c.Export(file)
			if err != nil {
				return "", err
			}
			return "exported to " + where, nil
		}}
	}
	if c.Hosts != nil {
		all["hosts"] = printer.LineCommand{Usage: "/hosts [NAME]", Help: "every host's connection; NAME becomes the default", Run: func(_ context.Context, name string) (string, error) {
			if name == "" || c.SetDefaultHost == nil {
				return c.Hosts(), nil
			}
			if err := c.SetDefaultHost(name); err != nil {
				return "", err
			}
			return "default host: " + name, nil
		}}
	}
	if c.SetModel != nil {
		all["model"] = printer.LineCommand{Usage: "/model [PROVIDER/ID]", Help: "the model, or switch to another", Run: func(_ context.Context, name string) (string, error) {
			if name != "" {
				if err := c.SetModel(name); err != nil {
					return "", err
				}
			}
			return "model: " + o.model, nil
		}}
	}
	if c.SetThinking != nil {
		all["thinking"] = printer.LineCommand{Usage: "/thinking [off|low|medium|high]", Help: "the model's reasoning level", Run: func(_ context.Context, level string) (string, error) {
			if level != "" {
				if err := c.SetThinking(level); err != nil {
					return "", err
				}
			}
			return "thinking: " + o.thinking, nil
		}}
	}
	if c.New != nil {
		all["new"] = printer.LineCommand{Usage: "/new", Help: "start a new session", Run: func(context.Context, string) (string, error) {
			_, about, err := c.New()
			return about, err
		}}
	}
	if c.Prompts != nil && c.Expand != nil {
		// Prompt templates and skills: their message is a run, as a
		// typed line would be.
		for _, p := range c.Prompts() {
			if _, taken := all[p.Name]; taken || p.Name == "help" {
				continue
			}
			name := p.Name
			all[name] = printer.LineCommand{Usage: "/" + name + " [args]", Help: termtext.String(p.Description), Run: func(ctx context.Context, arg string) (string, error) {
				msg, ok := c.Expand(name, arg)
				if !ok {
					return "", fmt.Errorf("/%s is gone", name)
				}
				return "", a.turn(ctx, msg)
			}}
		}
	}
	return all
}
