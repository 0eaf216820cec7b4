package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/pi-remote/pi-remote/agent"
	"github.com/pi-remote/pi-remote/loop"
	"github.com/pi-remote/pi-remote/printer"
	"github.com/pi-remote/pi-remote/session"
	"github.com/pi-remote/pi-remote/tui"
	"github.com/pi-remote/pi-remote/workspace"
)

// tuiEvents sends a run's events to the terminal UI.
type tuiEvents struct{ ui *tui.UI }

func (u tuiEvents) Emit(e loop.Event) { u.ui.Emit(e) }
func (u tuiEvents) Finish()           {}

// newTUI prepares the terminal UI for run's interactive mode; its
// commands act on a's session (set before the UI runs).
func newTUI(ios iostreams, g *globalOptions, o *runOptions, w *workspace.Workspace, a *runAgent, onRetry func(int, string)) *tui.UI {
	histFile := session.HistoryFile()
	ui := tui.New(tui.Options{
		Tools:        w.ByName,
		Hosts:        w.HostNames(),
		Cwd:          w.Cwd(),
		Model:        o.model,
		Thinking:     o.thinking,
		AutoCompact:  !g.settings.compaction().Off,
		History:      session.LoadHistory(histFile, 1000),
		SaveHistory:  func(p string) { session.AppendHistory(histFile, p) },
		Commands:     tuiCommands(g, o, w, a, onRetry),
		CompletePath: w.CompletePath,
		Branch:       w.GitBranch,
		Current:      currentText(w),
		Color:        useColor(ios.out),
		Theme:        g.settings.Theme,
		In:           ios.in,
		Out:          ios.out,
	})
	// A call the permission policy asks about waits for the person's
	// decision in the terminal.
	if w.Gate != nil {
		w.Gate.SetAsker(ui.Ask)
	}
	return ui
}

// maxShownFile bounds the file an approval prompt reads to show how a
// write would change it.
const maxShownFile = 256 << 10

// currentText reads, for an approval prompt, the file at path (canonical)
// on host that a write would replace: none when it is missing, not a
// regular file, larger than maxShownFile, or not text.
func currentText(w *workspace.Workspace) func(ctx context.Context, host, path string) (string, bool) {
	return func(ctx context.Context, host, path string) (string, bool) {
		i := slices.IndexFunc(w.Hosts, func(h *workspace.Host) bool { return h.Name == host })
		if i < 0 {
			return "", false
		}
		e := w.Hosts[i].Env
		fi, err := e.Stat(ctx, path)
		if err != nil || !fi.Mode().IsRegular() || fi.Size() > maxShownFile {
			return "", false
		}
		b, err := e.ReadFile(ctx, path)
		if err != nil || len(b) > maxShownFile || !utf8.Valid(b) || bytes.IndexByte(b, 0) >= 0 {
			return "", false
		}
		return string(b), true
	}
}

// tuiCommands carry out the terminal's slash commands on the session.
func tuiCommands(g *globalOptions, o *runOptions, w *workspace.Workspace, a *runAgent, onRetry func(int, string)) tui.Commands {
	models := g.settings.ModelTable()
	first, baseURL := o.model, o.baseURL
	switchTo := func(name, thinking string, info agent.ModelInfo) error {
		with := *o
		with.baseURL = baseURLFor(baseURL, first, name)
		m, err := newModel(name, thinking, "/model", &with, onRetry)
		if err != nil {
			return err
		}
		a.s.SetModel(m, info)
		o.model, o.thinking = name, thinking
		return nil
	}
	return tui.Commands{
		SetModel: func(name string) error { return switchTo(name, o.thinking, models.Lookup(name)) },
		SetThinking: func(level string) error {
			return switchTo(o.model, level, a.s.Model())
		},
		Session: func() string {
			size := "?"
			if fi, err := os.Stat(a.path); err == nil {
				size = fmt.Sprintf("%.1f KiB", float64(fi.Size())/1024)
			}
			info := a.s.Model()
			about := fmt.Sprintf("session %s (%s)\nmessages in context: %d, %d of %d tokens\nusage: %s",
				a.path, size, len(a.s.Messages()), a.s.ContextTokens(), info.Window, a.s.Usage())
			if w.Gate != nil {
				about += "\n" + describePolicy(w.Gate.Policy(), w.HostNames())
			}
			return about
		},
		Export: func(path string) (string, error) {
			path = exportPath(path, a.file.Header().ID)
			return path, session.ExportFile(a.path, path)
		},
		Models: func() []tui.Choice {
			var names []string
			for name := range models {
				names = append(names, name)
			}
			sort.Strings(names)
			return modelChoices(names, baseURL, first)
		},
		ScopedModels: func() tui.ModelScope {
			return modelScope(o.models, models, o.model, baseURL, first)
		},
		Sessions: func() []tui.Choice {
			root, err := session.Root()
			if err != nil {
				return nil
			}
			all, _ := session.List(root)
			var out []tui.Choice
			for _, s := range session.OfHost(all, w.Where(agent.Where{}).Host, a.path) {
				out = append(out, tui.Choice{Value: s.ID, Label: fmt.Sprintf("%s  %s  %s  %s",
					s.LastActivity.Local().Format("01-02 15:04"), printer.ShortID(s.ID), s.Host, printer.OneLine(s.FirstPrompt, 60))})
			}
			return out
		},
		ForkPoints: func() []tui.Choice {
			_, entries, err := session.Branch(a.path)
			if err != nil {
				return nil
			}
			var out []tui.Choice
			for _, p := range session.ForkPoints(entries) {
				out = append(out, tui.Choice{Value: p.Entry, Label: printer.OneLine(p.Prompt, 80), Text: p.Prompt})
			}
			return out
		},
		Resume: func(id string) (tui.Agent, string, error) {
			return switchSession(a, w.Where(agent.Where{Resume: id}), models)
		},
		Fork: func(entry string) (tui.Agent, string, error) {
			return switchSession(a, w.Where(agent.Where{Path: a.path, Fork: entry}), models)
		},
		New: func() (tui.Agent, string, error) {
			return switchSession(a, w.Where(agent.Where{}), models)
		},
		Tree: func() ([]session.Entry, string, error) {
			_, entries, leaf, err := session.Tree(a.path)
			return entries, leaf, err
		},
		Navigate: func(entry string) error { return a.s.Navigate(entry) },
		Prompts:  func() []tui.PromptCommand { return promptCommands(w) },
		Expand:   w.Expand,
		Shell: func(ctx context.Context, command string) (string, bool) {
			m := w.Shell(ctx, command, a.out.Emit)
			return m.Content.Text(), m.IsError
		},
		Jobs: func(width int) string {
			var buf strings.Builder
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			if err := listJobs(ctx, iostreams{out: &buf}, w.Hosts, false, width); err != nil {
				return err.Error()
			}
			return strings.TrimRight(buf.String(), "\n")
		},
		SetDefaultHost: func(name string) error {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			if err := w.SetDefault(ctx, name); err != nil {
				return err
			}
			a.s.SetTools(w.Config.Tools, w.Config.SystemPrompt)
			return nil
		},
		MCP: func() string {
			if st := w.MCPStatus(); len(st) > 0 {
				return printer.MCPServers(st)
			}
			return "no MCP servers (\"mcpServers\" in ~/.pi-remote/settings.json; docs/extending.md)"
		},
		Hosts: func() string {
			var lines []string
			for _, h := range w.Hosts {
				state := "connected"
				if h.Down != nil {
					state = "down at start: " + h.Down.Error()
				}
				lines = append(lines, fmt.Sprintf("%s  %s  %s", h.Name, h.Where(), state))
			}
			return strings.Join(lines, "\n")
		},
	}
}

// switchSession makes the terminal's session the one w names, closing the
// current one.
func switchSession(a *runAgent, w agent.Where, models agent.Models) (tui.Agent, string, error) {
	opened, err := agent.Open(w, models)
	if err != nil {
		return nil, "", err
	}
	a.start(opened)
	return a.s, fmt.Sprintf("session %s (%d messages in context)", a.path, len(opened.Context.Messages)), nil
}

// exportPath is where /export writes: path, absolute; with none, a file
// named after the session in the directory pi-remote runs in, where the
// person will look for it (not among the session files).
func exportPath(path, sessionID string) string {
	if path == "" {
		path = "pi-remote-" + sessionID[:min(8, len(sessionID))] + ".md"
	}
	if abs, err := filepath.Abs(path); err == nil {
		path = abs
	}
	return path
}
