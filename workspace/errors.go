package workspace

import (
	"errors"

	"github.com/pi-remote/pi-remote/ops"
	"github.com/pi-remote/pi-remote/ops/ssh/reach"
)

// UsageError says that the options asked for what cannot be: a host spec
// that does not parse, a working directory that is not one, two hosts of
// one name, an unknown tool. Its text names the options as the command
// line spells them (--host, --cwd, --tools).
type UsageError struct{ Err error }

func (e *UsageError) Error() string { return e.Err.Error() }
func (e *UsageError) Unwrap() error { return e.Err }

// ConnectionError says that a host could not be reached, verified or
// logged in to, or that its connection was lost.
type ConnectionError struct{ Err error }

func (e *ConnectionError) Error() string { return e.Err.Error() }
func (e *ConnectionError) Unwrap() error { return e.Err }

// IsConnectionFailure says whether err means the host could not be
// reached, verified or logged in to, or was lost.
func IsConnectionFailure(err error) bool {
	var ce *reach.ConnectError
	return errors.As(err, &ce) || errors.Is(err, ops.ErrConnectionLost)
}

// HostError is err, a host's answer, as a *ConnectionError when it means
// the connection failed; any other error as it is.
func HostError(err error) error {
	var ce *ConnectionError
	if err == nil || errors.As(err, &ce) || !IsConnectionFailure(err) {
		return err
	}
	return &ConnectionError{Err: err}
}
