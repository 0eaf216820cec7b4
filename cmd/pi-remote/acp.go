package main

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/pi-remote/pi-remote/acp"
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
ask, ask rules) are put to the editor as permission requests.`,
		Example: `  pi-remote acp --host devbox --model anthropic/claude-sonnet-4-5 --cwd /srv/app`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
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
				return nil, err
			}
			sg := *g
			sg.host.Cwd = cwd
			return openWorkspace(ctx, &sg, o, true, nil, onRetry)
		},
		Model: o.model, Models: g.settings.ModelTable(), Compaction: g.settings.compaction(),
		Version: versionString(),
		Log:     g.warn,
	})
}
