package main

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/pi-remote/pi-remote/acp"
	"github.com/pi-remote/pi-remote/agent"
	"github.com/pi-remote/pi-remote/tools"
	"github.com/pi-remote/pi-remote/workspace"
)

func newACPCmd(ios iostreams, g *globalOptions) *cobra.Command {
	o := &runOptions{}
	cmd := &cobra.Command{
		Use:   "acp",
		Short: "Serve the agent to an editor over the Agent Client Protocol on stdio",
		Long: `Serve the agent over the Agent Client Protocol (ACP v1, JSON-RPC on stdin and
stdout), so an editor's agent panel (Zed, JetBrains IDEs, Neovim's CodeCompanion)
drives it; the tools run on the chosen host. See docs/acp.md.

Each editor session opens the hosts anew in its own directory: on this machine
the editor's directory; on a remote host the settings' acpCwdMap entry for it,
else --cwd, else the home directory there. Sessions are saved as run's are, and
session/load continues one by its ID. Calls that need approval (--permissions
ask, ask rules) are put to the editor as permission requests. A session in a
directory of this machine follows that directory's .pi-remote/settings.json as
run there would (its permission rules and mode; with trustedProjects, its
hooks, MCP servers and prompt templates).`,
		Example: `  pi-remote acp --host devbox --model anthropic/claude-sonnet-4-5 --cwd /srv/app`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.toolsGiven = cmd.Flags().Changed("tools")
			return acpRun(cmd.Context(), ios, g, o)
		},
	}
	registerAgentFlags(cmd.Flags(), o)
	return cmd
}

func acpRun(ctx context.Context, ios iostreams, g *globalOptions, o *runOptions) error {
	// What would fail every session fails now, before the editor waits.
	if _, err := newModel(o.model, o.thinking, g.modelFrom(), o, nil); err != nil {
		return err
	}
	if _, err := g.policy(); err != nil {
		return err
	}
	local := g.host.DefaultIsLocal()
	onRetry := func(n int, why string) { fmt.Fprintln(g.warn, "pi-remote:", retryNote(n, why)) }
	return acp.Serve(ctx, ios.in, ios.out, acp.Options{
		Open: func(ctx context.Context, editorCwd string) (*workspace.Workspace, error) {
			cwd, err := acp.HostCwd(editorCwd, local, g.host.Cwd, g.settings.ACPCwdMap)
			if err != nil {
				return nil, acp.InvalidParams(err)
			}
			if local {
				// The editor named a directory this machine does not
				// have: its parameter is at fault, not pi-remote.
				if fi, err := os.Stat(cwd); err != nil || !fi.IsDir() {
					return nil, acp.InvalidParams(fmt.Errorf("cwd %q is not a directory on this machine", editorCwd))
				}
			}
			sg, so := *g, *o
			sg.host.Cwd = cwd
			if s, ok, err := g.sessionSettings(editorCwd); err != nil {
				return nil, acp.InvalidParams(err)
			} else if ok {
				sg.settings = s
				so.tools, so.toolsGiven = g.sessionTools(o, s)
			}
			return openWorkspace(ctx, &sg, &so, true, nil, onRetry)
		},
		Model: o.model, Models: g.settings.ModelTable(), Compaction: g.settings.compaction(),
		Version: versionString(),
		Log:     g.warn,
	})
}

// sessionSettings are the settings of an editor session opened in
// editorCwd, when it is a directory on this machine: the user's and that
// directory's project settings, as run started there reads them (the
// project's file sets only what projectKeys allows unless the user trusts
// it; --trust-project trusts only the directory pi-remote acp started
// in). They give the session its permission rules and mode (the command
// line's modes still win, as in run), its tools unless --tools named them,
// hooks, MCP servers and prompt templates; what was chosen at start
// (model, hosts) stays. ok is
// false when editorCwd is no directory here: the start directory's
// settings apply.
func (g *globalOptions) sessionSettings(editorCwd string) (s settings, ok bool, err error) {
	if fi, err := os.Stat(editorCwd); err != nil || !fi.IsDir() {
		return settings{}, false, nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return settings{}, false, nil // no home: no settings files at all
	}
	start := g.settings.loaded.ProjectDir
	here := start != "" && sameDir(start, editorCwd)
	l, err := agent.LoadSettings(home, editorCwd, g.trustProject && here)
	if err != nil {
		return settings{}, false, fmt.Errorf("settings: %w", err)
	}
	if !here {
		// The start directory's notice was said at start.
		fmt.Fprint(g.warn, l.Notice())
	}
	return settings{Settings: l.Settings, loaded: l}, true, nil
}

// sessionTools are the active tools of a session whose settings are s
// (--tools, and whether the tools were named): --tools when the command
// line gave it, else the session's settings' (a project may narrow them
// as in run), else the defaults.
func (g *globalOptions) sessionTools(o *runOptions, s settings) (string, bool) {
	switch {
	case o.toolsGiven && !slices.Contains(g.fromSettings, "tools"):
		return o.tools, true
	case s.Tools != nil:
		return strings.Join(s.Tools, ","), true
	}
	return strings.Join(tools.DefaultActive, ","), false
}
