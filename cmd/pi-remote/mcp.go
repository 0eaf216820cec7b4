package main

import (
	"context"
	"strings"

	"github.com/spf13/cobra"

	"github.com/pi-remote/pi-remote/mcpserver"
	"github.com/pi-remote/pi-remote/printer"
	"github.com/pi-remote/pi-remote/tools"
	"github.com/pi-remote/pi-remote/workspace"
)

func newMCPCmd(ios iostreams, g *globalOptions) *cobra.Command {
	var toolList string
	cmd := &cobra.Command{
		Use:   "mcp",
		Short: "Serve the tools of the chosen host(s) as an MCP server on stdio",
		Long: `Serve pi-remote's tools over the Model Context Protocol on stdin/stdout, so
another agent (Claude Code, Codex, Cursor...) works on the chosen host(s)
through pi-remote's persistent connection and mutation queue.

bash output arrives as progress notifications when the client asks for
progress; cancelling a call kills the remote command; tool failures are
tool results with isError, not protocol errors.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return mcpRun(cmd.Context(), ios, g, toolList)
		},
	}
	cmd.Flags().StringVar(&toolList, "tools", strings.Join(tools.DefaultActive, ","), "tools to expose, comma-separated: "+strings.Join(tools.AllNames, ","))
	return cmd
}

func mcpRun(ctx context.Context, ios iostreams, g *globalOptions, toolList string) error {
	hs, err := workspace.OpenHosts(ctx, g.host, workspace.Session, nil, g.warn)
	if err != nil {
		return err
	}
	defer hs.Close()
	// The MCP client has its own approvals; ours are the host owner's
	// policy: enforced, with nobody here to ask (ask fails closed).
	gate, err := g.gate(hs.Names())
	if err != nil {
		return err
	}
	defs, err := hs.Definitions(gate)
	if err != nil {
		return usageErrorf("%v", err)
	}
	active, err := tools.Select(defs, splitList(toolList))
	if err != nil {
		return usageErrorf("--tools: %v", err)
	}
	return mcpserver.Serve(ctx, ios.in, ios.out, mcpserver.Options{Defs: defs, Active: active, MaxArgumentBytes: maxArgsInput, ProgressLines: printer.LiveLines})
}
