package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/pi-remote/pi-remote/internal/termtext"
	"github.com/pi-remote/pi-remote/ops"
	"github.com/pi-remote/pi-remote/ops/ssh"
	"github.com/pi-remote/pi-remote/printer"
	"github.com/pi-remote/pi-remote/workspace"
)

func newJobsCmd(io iostreams, g *globalOptions) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "jobs [attach|kill ID]",
		Short: "List, follow or kill the commands left on remote hosts",
		Long: `Remote commands run as jobs on their host, detached from the SSH connection,
until their client collects the result. "jobs" lists the ones not collected
yet on the chosen host(s): still running (the agent's, or one whose client
crashed or lost its connection), or ended with nobody to collect them.

  jobs              list: ID, state, age, command
  jobs attach ID    print the job's output from its start and follow it to
                    its end; Ctrl-C stops following, the job runs on.
                    Exit status 1 when the job failed.
  jobs kill ID      kill a running job (its whole process group), or forget
                    an ended one

A job whose client stopped renewing its lease (--lease-ttl) is killed by
the host itself.`,
		Args: func(cmd *cobra.Command, args []string) error {
			switch {
			case len(args) == 0:
				return nil
			case len(args) == 2 && (args[0] == "attach" || args[0] == "kill"):
				return nil
			}
			return usageErrorf("usage: pi-remote jobs [attach|kill ID]")
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			if len(g.host.Hosts) == 0 {
				return usageErrorf("jobs are on remote hosts: give --host")
			}
			hs, err := workspace.OpenHosts(ctx, g.host, workspace.OneShot, nil, g.warn)
			if err != nil {
				return err
			}
			defer hs.Close()
			if len(args) == 0 {
				return listJobs(ctx, io, hs, asJSON, 0)
			}
			failed := func(err error) error {
				fmt.Fprintln(io.err, "pi-remote:", termtext.String(err.Error()))
				return &failure{err: err}
			}
			if args[0] == "kill" {
				what, err := hs.StopJob(ctx, args[1])
				if errors.Is(err, ssh.ErrNoJob) {
					return failed(err)
				} else if err != nil {
					return err
				}
				fmt.Fprintln(io.out, termtext.String(fmt.Sprintf("job %s %s", args[1], what)))
				return nil
			}
			// The job's output byte for byte into a file or a pipe; on
			// a terminal with its controls shown as text.
			out, done := shownOn(io.out)
			err = hs.AttachJob(ctx, args[1], out)
			if derr := done(); err == nil {
				err = derr
			}
			var exit *ops.ExitError
			switch {
			case errors.As(err, &exit):
				return failed(fmt.Errorf("job %s: %w", args[1], exit))
			case err != nil && ctx.Err() != nil:
				return failed(fmt.Errorf("stopped following job %s; it runs on", args[1]))
			case errors.Is(err, ssh.ErrNoJob):
				return failed(err)
			}
			return err
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the list as JSON")
	return cmd
}

// listJobs lists the hosts' jobs, a table cut to width columns (0: none).
func listJobs(ctx context.Context, io iostreams, hs workspace.Hosts, asJSON bool, width int) error {
	jobs, err := hs.Jobs(ctx)
	if err != nil {
		return err
	}
	all := printer.JobRows(jobs)
	if asJSON {
		return encodeJSON(io.out, all, "  ")
	}
	return printer.Jobs(io.out, all, len(hs) > 1, width)
}
