package main

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/pi-remote/pi-remote/internal/termtext"
	"github.com/pi-remote/pi-remote/workspace"
)

func newCheckCmd(io iostreams, g *globalOptions) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "check",
		Short: "Connect to the host and report what pi-remote will use there",
		Long: `Connect to the chosen host and print the resolved configuration, the
host key status, how the login succeeded, whether SFTP is available, which
search tools (rg, fd) and helpers the host has, and the round-trip time.

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
	hs, err := workspace.OpenHosts(ctx, g.host, workspace.OneShot, nil, g.warn)
	if err != nil {
		return err
	}
	defer hs.Close()
	// (One of several hosts that cannot be reached is reported with the
	// others, and its failure is the command's.)
	reports, err := hs.Check(ctx)
	if reports == nil {
		return err
	}
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
		printReport(ios.out, r, hs[i].SSH != nil)
	}
	return err
}

// printReport writes r for a person; what the host said (its home, its
// tools' versions, an error) is shown with its controls as text.
func printReport(out io.Writer, r workspace.Report, remote bool) {
	w := termtext.NewWriter(out)
	defer w.Flush()
	fmt.Fprintf(w, "name:      %s\n", r.Name)
	fmt.Fprintf(w, "host:      %s\n", r.Host)
	if len(r.Via) > 0 {
		fmt.Fprintf(w, "via:       %s\n", strings.Join(r.Via, " -> "))
	}
	if r.Error != "" {
		fmt.Fprintf(w, "state:     unreachable: %s\n", r.Error)
		return
	}
	// What the host has, or what pi-remote does without it.
	type ability struct {
		label   string
		has     bool
		yes, no string
	}
	var abilities []ability
	if remote {
		fmt.Fprintf(w, "host key:  %s\n", r.HostKey)
		fmt.Fprintf(w, "auth:      %s\n", r.Auth)
		abilities = append(abilities,
			ability{"sftp", r.SFTP, "available", "missing (files go over the shell)"},
			ability{"setsid", r.Setsid, "yes (commands get their own process group)", "missing (a cancelled command takes its server with it)"})
	}
	abilities = append(abilities, ability{"home", true, r.Home, ""},
		ability{"bash", r.Bash, "yes", "no (bash tool uses sh)"},
		ability{"rg", r.Rg, "yes", "no (grep walks the tree with find(1), skips what .gitignore/.ignore exclude as rg would, and runs grep -E: POSIX regex syntax, one more round trip)"},
		ability{"fd", r.Fd != "", r.Fd, "no (find walks the tree with find(1) and skips what .gitignore/.ignore exclude, as fd would)"})
	for _, a := range abilities {
		text := a.no
		if a.has {
			text = a.yes
		}
		fmt.Fprintf(w, "%-11s%s\n", a.label+":", text)
	}
	if len(r.Helpers) > 0 {
		fmt.Fprintf(w, "helpers:   %s\n", strings.Join(r.Helpers, " "))
	}
	if remote {
		fmt.Fprintf(w, "rtt:       %.2f ms\n", r.RTTMilli)
	}
}
