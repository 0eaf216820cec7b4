package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"

	"github.com/spf13/cobra"

	"github.com/pi-remote/pi-remote/env"
	"github.com/pi-remote/pi-remote/internal/termtext"
	"github.com/pi-remote/pi-remote/tools"
)

// Exit codes of the CLI contract.
const (
	exitOK         = 0
	exitToolError  = 1
	exitUsage      = 2
	exitConnection = 3
)

// exitError carries an exit code out of a command.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

func usageErrorf(format string, a ...any) error {
	return &exitError{code: exitUsage, err: fmt.Errorf(format, a...)}
}

// iostreams are a command's standard streams.
type iostreams struct {
	in       io.Reader
	out, err io.Writer
}

// globalOptions are the flags every command shares.
type globalOptions struct {
	cwd      string
	host     hostFlags
	settings settings
	// trustProject trusts the project's settings file for this run
	// (--trust-project).
	trustProject bool
	warn         io.Writer // stderr: notices that do not stop a command
}

func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	io := iostreams{in: stdin, out: stdout, err: stderr}
	root := newRootCmd(io)
	root.SetArgs(args)
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return exitOK
	}
	// (An error may carry a host's or a model's text: its controls are
	// shown as text.)
	var ee *exitError
	if errors.As(err, &ee) {
		if ee.err != nil && ee.code != exitToolError {
			fmt.Fprintln(stderr, "pi-remote:", termtext.String(ee.err.Error()))
		}
		return ee.code
	}
	// Anything cobra itself rejects (unknown command or flag, bad args) is
	// a usage error.
	fmt.Fprintln(stderr, "pi-remote:", termtext.String(err.Error()))
	fmt.Fprintln(stderr, "Run 'pi-remote --help' for usage.")
	return exitUsage
}

func newRootCmd(io iostreams) *cobra.Command {
	// Notices may carry a host's text (its error): controls shown as
	// text. (Each notice is a whole line, so the writer holds nothing
	// back between them.)
	g := &globalOptions{warn: termtext.NewWriter(io.err)}
	cmd := &cobra.Command{
		Use:   "pi-remote",
		Short: "Agent tools that run where the work is",
		Long: `pi-remote gives an LLM agent seven tools — read, write, edit, bash, grep, find
and ls — that act on an execution environment: this machine, or remote hosts
(--host) over one persistent SSH connection each, with nothing installed
there but sshd and a POSIX sh. Mutations of one file are serialized by a
per-environment queue keyed on the canonical path, so parallel edits never
lose each other.`,
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error {
			if !usesSettings(cmd) {
				return nil
			}
			s, err := loadSettings(g.trustProject, g.warn)
			if err != nil {
				return usageErrorf("settings: %v", err)
			}
			g.settings = s
			return s.apply(cmd, g)
		},
	}
	cmd.PersistentFlags().StringVar(&g.cwd, "cwd", "", "working directory on the host (default: the current directory locally, the home directory on a remote host)")
	cmd.PersistentFlags().BoolVar(&g.trustProject, "trust-project", false, "trust the current directory's .pi-remote/settings.json for this run: it may then set every key, baseUrl and hosts too (to trust it for good, add the directory to trustedProjects in ~/.pi-remote/settings.json)")
	g.host.register(cmd.PersistentFlags())
	cmd.AddCommand(newToolCmd(io, g), newToolsCmd(io), newCheckCmd(io, g), newRunCmd(io, g), newRPCCmd(io, g), newMCPCmd(io, g), newJobsCmd(io, g), newSessionsCmd(io, g), newExportCmd(io), newVersionCmd(io))
	return cmd
}

func definitions(e *env.ExecutionEnv) []tools.Definition {
	return tools.Definitions(e, tools.Options{})
}
