package ssh

import "github.com/pi-remote/pi-remote/ops/ssh/reach"

// Reaching a host (ssh_config, authentication, host keys, dialing) is
// package reach's. These names stay here so that a caller of ops/ssh —
// cmd/pi-remote, the integration tests, sshtest — resolves a host, builds
// a Host and tells its connection errors apart with one import.

// Config is everything needed to reach one host (reach.Config).
type Config = reach.Config

// Options are the command-line settings that override ssh_config
// (reach.Options).
type Options = reach.Options

// ConnectError is a failure to reach, verify or log in to a host
// (reach.ConnectError). The CLI maps it to exit code 3.
type ConnectError = reach.ConnectError

// HostKeyError is a host key that was refused (reach.HostKeyError).
type HostKeyError = reach.HostKeyError

// AuthError is a refused login (reach.AuthError).
type AuthError = reach.AuthError

// Resolve turns a host spec — [user@]host[:port] or an ssh_config alias —
// into a Config (reach.Resolve).
func Resolve(spec string, opts Options) (Config, error) { return reach.Resolve(spec, opts) }
