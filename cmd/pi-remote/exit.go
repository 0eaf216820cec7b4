package main

import (
	"errors"
	"fmt"
	"io"

	"github.com/pi-remote/pi-remote/internal/termtext"
	"github.com/pi-remote/pi-remote/mcpserver"
	"github.com/pi-remote/pi-remote/workspace"
)

// Exit codes of the CLI contract (DESIGN.md): scripts depend on them.
const (
	exitOK         = 0
	exitFailed     = 1 // the tool returned an error result; the run ended in an error; the job failed
	exitUsage      = 2
	exitConnection = 3 // connection, authentication or host-key failure; the MCP client's streams
)

// usageError says that the command line asks for what cannot be.
type usageError struct{ err error }

func (e *usageError) Error() string { return e.err.Error() }
func (e *usageError) Unwrap() error { return e.err }

func usageErrorf(format string, a ...any) error {
	return &usageError{err: fmt.Errorf(format, a...)}
}

// failure says that the command ran and what it did failed: a tool's
// error result, a run that ended in an error or was aborted, a job that
// failed. The command's own output has shown it.
type failure struct{ err error }

func (e *failure) Error() string { return e.err.Error() }
func (e *failure) Unwrap() error { return e.err }

// exit tells the user about a command's error on stderr and returns the
// exit status for it: the one place that decides both. A failure's output
// has told it already; anything untyped is cobra's own rejection (unknown
// command or flag, bad arguments), a usage error with a pointer to --help.
// (An error may carry a host's or a model's text: its controls are shown
// as text.)
func exit(stderr io.Writer, err error) int {
	var (
		failed   *failure
		usage    *usageError
		badOpt   *workspace.UsageError
		noHost   *workspace.ConnectionError
		noClient *mcpserver.ClientError
	)
	code := exitUsage
	switch {
	case err == nil:
		return exitOK
	case errors.As(err, &failed):
		return exitFailed
	case errors.As(err, &usage), errors.As(err, &badOpt):
	case errors.As(err, &noHost), errors.As(err, &noClient):
		code = exitConnection
	default:
		fmt.Fprintln(stderr, "pi-remote:", termtext.String(err.Error()))
		fmt.Fprintln(stderr, "Run 'pi-remote --help' for usage.")
		return exitUsage
	}
	fmt.Fprintln(stderr, "pi-remote:", termtext.String(err.Error()))
	return code
}
