package main

import (
	"cmp"
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/pi-remote/pi-remote/printer"
	"github.com/pi-remote/pi-remote/workspace"
)

func newCheckCmd(io iostreams, g *globalOptions) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "check",
		Short: "Connect to the host and report what pi-remote will use there",
		Long: `Connect to the chosen host and print the resolved configuration, the
host key status, how the login succeeded, whether SFTP is available, which
search tools (rg, fd) and helpers the host has, the round-trip time, and the
host's permission mode with the rules in force there and where each came
from; then the MCP servers the settings configure, each started to list its
tools (and stopped), with its state: running, failed (and why), or not
started (a project's, when you have not trusted the project). --json gives
them as "mcpServers" in the first host's report.

Exit status: 0 all good, 2 usage error, 3 connection, authentication or
host-key failure (the message says what to do).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return checkRun(cmd.Context(), io, g, asJSON)
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the report as JSON")
	return cmd
}

func checkRun(ctx context.Context, ios iostreams, g *globalOptions, asJSON bool) error {
	policy, err := g.policy()
	if err != nil {
		return err
	}
	hs, err := workspace.OpenHosts(ctx, g.host, workspace.OneShot, nil, g.warn)
	if err != nil {
		return err
	}
	defer hs.Close()
	if _, err := g.gate(hs.Names()); err != nil {
		return err
	}
	// (One of several hosts that cannot be reached is reported with the
	// others, and its failure is the command's.)
	reports, err := hs.Check(ctx)
	if reports == nil {
		return err
	}
	for i := range reports {
		reports[i].Permissions = workspace.PolicyOn(policy, reports[i].Name)
	}
	// The MCP servers are started to list their tools, then stopped;
	// JSON has them with the first report.
	mcp := g.startMCP(ctx, hs)
	defer mcp.Close()
	servers := mcp.Status()
	reports[0].MCPServers = servers
	if asJSON {
		var werr error
		if len(reports) == 1 {
			werr = encodeJSON(ios.out, reports[0], "  ")
		} else {
			werr = encodeJSON(ios.out, reports, "  ")
		}
		return cmp.Or(werr, err)
	}
	for i, r := range reports {
		if i > 0 {
			fmt.Fprintln(ios.out)
		}
		printer.Report(ios.out, r, hs[i].SSH != nil)
	}
	if len(servers) > 0 {
		fmt.Fprintf(ios.out, "\nMCP servers:\n%s\n", printer.MCPServers(servers))
	}
	return err
}
