package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/pi-remote/pi-remote/internal/termtext"
	"github.com/pi-remote/pi-remote/ops/ssh"
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

// checkReport is what check prints.
type checkReport struct {
	Name     string   `json:"name"`
	Host     string   `json:"host"`
	Via      []string `json:"via,omitempty"`
	HostKey  string   `json:"hostKey,omitempty"`
	Auth     string   `json:"auth,omitempty"`
	SFTP     bool     `json:"sftp"`
	Setsid   bool     `json:"setsid"`
	Home     string   `json:"home,omitempty"`
	Bash     bool     `json:"bash"`
	Rg       bool     `json:"rg"`
	Fd       string   `json:"fd,omitempty"`
	Helpers  []string `json:"helpers,omitempty"`
	RTTMilli float64  `json:"rttMs"`
	Error    string   `json:"error,omitempty"` // why the host could not be reached
}

func checkRun(ctx context.Context, ios iostreams, g *globalOptions, asJSON bool) (err error) {
	hs, err := workspace.OpenHosts(ctx, g.host, workspace.OneShot, nil, g.warn)
	if err != nil {
		return err
	}
	defer hs.Close()
	var reports []checkReport
	var unreachable error
	for _, h := range hs {
		r, err := checkHost(ctx, h)
		if err != nil && (len(hs) == 1 || !workspace.IsConnectionFailure(err)) {
			return err
		}
		if err != nil {
			// One of several: reported with the others.
			r = checkReport{Name: h.Name, Host: h.Where(), Error: err.Error()}
			if unreachable == nil {
				unreachable = &workspace.ConnectionError{Err: fmt.Errorf("host %s: %w", h.Name, err)}
			}
		}
		reports = append(reports, r)
	}
	defer func() {
		if err == nil {
			err = unreachable
		}
	}()
	if asJSON {
		if len(reports) == 1 {
			return encodeJSON(ios.out, reports[0], "  ")
		}
		return encodeJSON(ios.out, reports, "  ")
	}
	for i, r := range reports {
		if i > 0 {
			fmt.Fprintln(ios.out)
		}
		printReport(ios.out, r, hs[i].SSH != nil)
	}
	return nil
}

func checkHost(ctx context.Context, h *workspace.Host) (checkReport, error) {
	r := checkReport{Name: h.Name, Host: "local"}
	if h.SSH != nil {
		info, err := h.SSH.Connect(ctx)
		if err != nil {
			return r, &workspace.ConnectionError{Err: err}
		}
		r = reportFrom(info)
		r.Name = h.Name
		// The best of a few round trips: the first may pay for warm-up.
		best := time.Duration(0)
		for range 5 {
			d, err := h.SSH.Ping(ctx)
			if err != nil {
				return r, &workspace.ConnectionError{Err: err}
			}
			if best == 0 || d < best {
				best = d
			}
		}
		r.RTTMilli = float64(best.Microseconds()) / 1000
	}
	caps, err := h.Env.Capabilities(ctx)
	if err != nil {
		return r, workspace.HostError(err)
	}
	r.Home, r.Bash, r.Rg, r.Fd = caps.Home, caps.Bash != "", caps.Rg != "", caps.Fd
	return r, nil
}

// printReport writes r for a person; what the host said (its home, its
// tools' versions, an error) is shown with its controls as text.
func printReport(out io.Writer, r checkReport, remote bool) {
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

func reportFrom(info ssh.Info) checkReport {
	r := checkReport{
		Host:    info.Config.Alias + " (" + info.Config.User + "@" + info.Config.Addr() + ")",
		HostKey: info.HostKey, Auth: info.Auth, SFTP: info.SFTP, Setsid: info.Setsid, Helpers: info.Tools,
	}
	for _, j := range info.Config.Jump {
		r.Via = append(r.Via, j.String())
	}
	return r
}
