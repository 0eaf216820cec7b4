package workspace

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/pi-remote/pi-remote/agent/permission"
	"github.com/pi-remote/pi-remote/env"
	"github.com/pi-remote/pi-remote/ops/local"
	"github.com/pi-remote/pi-remote/ops/ssh"
	"github.com/pi-remote/pi-remote/ops/ssh/reach"
	"github.com/pi-remote/pi-remote/tools"
)

// HostOptions select the hosts and say how to reach them: what every
// command's host flags hold.
type HostOptions struct {
	// Hosts are the host specs: "SPEC" or "NAME=SPEC", where SPEC is
	// [user@]host[:port], an ssh_config alias, or "local" for this
	// machine. None means this machine. The first is the default host.
	Hosts []string
	// Cwd is the working directory on every host ("": the current
	// directory locally, the home directory on a remote host).
	Cwd string

	// Identities are private key files to log in with, tried before
	// ssh_config's (--identity).
	Identities []string
	// KnownHosts is the known_hosts file ("": ssh_config's, or
	// ~/.ssh/known_hosts); AcceptNew records the key of a host seen for
	// the first time (a changed key is always refused).
	KnownHosts string
	AcceptNew  bool
	// SSHConfig is the ssh_config file ("": ~/.ssh/config; "none": none).
	SSHConfig string
	// Jump names jump hosts, comma-separated, like ssh -J.
	Jump string
	// ConnectTimeout bounds connecting and logging in (0: the default).
	ConnectTimeout time.Duration
	// Reattach is how long a remote command whose connection dropped
	// waits for the host to come back (0: fail at once); LeaseTTL how
	// long a remote command runs on once no client renews its lease (0:
	// the default).
	Reattach time.Duration
	LeaseTTL time.Duration
	// OutputCapMiB is the most output, in MiB, a remote command may write
	// on its host (0: no cap).
	OutputCapMiB int64
}

// Calls says how many calls a command makes on its hosts, which decides
// how many command servers (each a login shell on its host) each host
// warms.
type Calls int

const (
	// Session: a conversation's many calls; a full pool for one or two
	// hosts, a shared budget over more.
	Session Calls = iota
	// OneShot: one call or a few; one command server per host.
	OneShot
)

// LinkFunc hears of a host's lost and restored connection.
type LinkFunc func(host string, state ssh.LinkState, down time.Duration, err error)

// warmBudget is how many command servers a session warms over all its
// hosts, a full pool each for one or two hosts; every host warms at least
// one.
const warmBudget = 16

// sshOptions are the options of each of n SSH hosts.
func (o HostOptions) sshOptions(n int, calls Calls) ssh.HostOptions {
	so := ssh.HostOptions{ReattachTimeout: o.Reattach, LeaseTTL: o.LeaseTTL, OutputCap: o.OutputCapMiB << 20}
	switch {
	case calls == OneShot:
		so.WarmServers = 1
	case n > 2:
		so.WarmServers = max(1, warmBudget/n)
	}
	if o.Reattach == 0 {
		so.ReattachTimeout = -1
	}
	if o.OutputCapMiB <= 0 {
		so.OutputCap = -1
	}
	return so
}

// sshConfig resolves a host spec; one that cannot be parsed is a usage
// error.
func (o HostOptions) sshConfig(spec string) (reach.Config, error) {
	cfg, err := reach.Resolve(spec, reach.Options{
		SSHConfigFile:    o.SSHConfig,
		Identities:       o.Identities,
		KnownHostsFile:   o.KnownHosts,
		AcceptNewHostKey: o.AcceptNew,
		Jump:             o.Jump,
		ConnectTimeout:   o.ConnectTimeout,
	})
	if err != nil {
		return reach.Config{}, usageErrorf("--host %s: %v", spec, err)
	}
	return cfg, nil
}

func usageErrorf(format string, a ...any) error {
	return &UsageError{Err: fmt.Errorf(format, a...)}
}

// Host is one execution environment of a workspace, with the SSH host
// behind it when it is remote.
type Host struct {
	Name string
	Env  *env.ExecutionEnv
	SSH  *ssh.Host // nil for this machine
	// Down is why the host could not be reached at start (nil when it
	// was); its calls fail with the reason until it answers.
	Down error
}

// Close closes the connection to a remote host.
func (h *Host) Close() {
	if h.SSH != nil {
		h.SSH.Close()
	}
}

// Lost says whether a remote host's connection is gone, to tell a tool's
// own failure from a lost connection: at once when the host saw its
// connection die (a new dial to a black-holed host would take the connect
// timeout), else checked with one round trip.
func (h *Host) Lost(ctx context.Context) bool {
	if h.SSH == nil {
		return false
	}
	if h.SSH.Down() {
		return true
	}
	_, err := h.SSH.Ping(ctx)
	return err != nil && IsConnectionFailure(err)
}

// Where identifies the host for session files: "local" or
// user@host:port.
func (h *Host) Where() string {
	if h.SSH == nil {
		return "local"
	}
	cfg := h.SSH.Config()
	return cfg.String()
}

// Hosts are the environments of one command; the first is the default.
type Hosts []*Host

// Close closes every host.
func (hs Hosts) Close() {
	for _, h := range hs {
		h.Close()
	}
}

// Names are the hosts' names, the default first.
func (hs Hosts) Names() []string {
	var names []string
	for _, h := range hs {
		names = append(names, h.Name)
	}
	return names
}

// Lost says whether any host's connection is gone (Host.Lost).
func (hs Hosts) Lost(ctx context.Context) bool {
	for _, h := range hs {
		if h.Lost(ctx) {
			return true
		}
	}
	return false
}

// Definitions are the tools of every host; with several, each tool takes
// an optional host argument. With a gate, every call passes it before
// it runs; nil is no policy (the tool command: the person's own call).
func (hs Hosts) Definitions(gate *permission.Gate) ([]tools.Definition, error) {
	return hs.definitions(gate, nil)
}

// definitions are the built-in tools of every host and those extra makes
// for it (Options.Tools), behind gate.
func (hs Hosts) definitions(gate *permission.Gate, extra func(*env.ExecutionEnv) []tools.Definition) ([]tools.Definition, error) {
	var all []tools.Host
	for _, h := range hs {
		defs := tools.Definitions(h.Env, tools.Options{})
		if extra != nil {
			for _, d := range extra(h.Env) {
				if d.Name == "" || slices.ContainsFunc(defs, func(o tools.Definition) bool { return o.Name == d.Name }) {
					return nil, fmt.Errorf("a tool named %q is there already (or the name is empty): give each tool its own name", d.Name)
				}
				defs = append(defs, d)
			}
		}
		all = append(all, tools.Host{Name: h.Name, Defs: guard(h, defs, gate)})
	}
	return tools.ForHosts(all)
}

var hostName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]*$`)

// splitHostSpec reads "NAME=SPEC" or "SPEC".
func splitHostSpec(v string) (name, spec string) {
	if n, s, ok := strings.Cut(v, "="); ok && hostName.MatchString(n) && !strings.Contains(n, "@") {
		return n, s
	}
	return "", v
}

// DefaultIsLocal says whether the default (first) host is this machine.
func (o HostOptions) DefaultIsLocal() bool {
	if len(o.Hosts) == 0 {
		return true
	}
	_, spec := splitHostSpec(o.Hosts[0])
	return spec == "local"
}

// OpenHosts builds the environments o selects: this machine without
// hosts; otherwise one per host spec. Remote hosts are connected first,
// all at once, so that connection problems surface before any tool runs:
// with one host as a *ConnectionError; with several, a host that cannot be
// reached is told on warn and kept (Host.Down), its calls failing with the
// reason until it answers (each call tries again), unless none of the
// hosts can be reached. onLink, when not nil, hears of lost and restored
// connections. Problems with o are *UsageError.
func OpenHosts(ctx context.Context, o HostOptions, calls Calls, onLink LinkFunc, warn io.Writer) (Hosts, error) {
	if len(o.Hosts) == 0 {
		e, err := localEnv(o.Cwd, "local")
		if err != nil {
			return nil, err
		}
		return Hosts{{Name: "local", Env: e}}, nil
	}
	var hs Hosts
	fail := func(err error) (Hosts, error) {
		hs.Close()
		return nil, err
	}
	seen := map[string]bool{}
	var cfgs []reach.Config
	sshHosts := 0
	for _, v := range o.Hosts {
		if _, spec := splitHostSpec(v); spec != "local" {
			sshHosts++
		}
	}
	// (A lease of 0 or less is the default one.)
	if sshHosts > 0 && o.Reattach > 0 && o.LeaseTTL > 0 && o.LeaseTTL < o.Reattach {
		// The lease would kill a command whose client still waits to
		// attach to it again.
		return nil, usageErrorf("--lease-ttl %s is shorter than --reattach-timeout %s: a command would be killed while its client still waits for the host; raise the lease or lower the re-attach timeout", o.LeaseTTL, o.Reattach)
	}
	for _, v := range o.Hosts {
		name, spec := splitHostSpec(v)
		var h *Host
		var cfg reach.Config
		if spec == "local" {
			if name == "" {
				name = "local"
			}
			e, err := localEnv(o.Cwd, name)
			if err != nil {
				return fail(err)
			}
			h = &Host{Name: name, Env: e}
		} else {
			var err error
			if cfg, err = o.sshConfig(spec); err != nil {
				return fail(err)
			}
			if name == "" {
				name = cfg.Alias
			}
			so := o.sshOptions(sshHosts, calls)
			if onLink != nil {
				host := name
				so.OnLinkState = func(s ssh.LinkState, down time.Duration, err error) { onLink(host, s, down, err) }
			}
			h = &Host{Name: name, SSH: ssh.New(cfg, so)}
		}
		if seen[name] {
			h.Close()
			return fail(usageErrorf("--host: the name %q is used twice; name hosts with NAME=SPEC", name))
		}
		seen[name] = true
		hs = append(hs, h)
		cfgs = append(cfgs, cfg)
	}
	errs := make([]error, len(hs))
	var wg sync.WaitGroup
	for i, h := range hs {
		if h.SSH != nil {
			wg.Go(func() { errs[i] = h.open(ctx, cfgs[i], o.Cwd) })
		}
	}
	wg.Wait()
	reached := 0
	for i, h := range hs {
		switch err := errs[i]; {
		case err == nil:
			reached++
		case len(hs) == 1 || !IsConnectionFailure(err):
			return fail(err)
		default:
			h.unreachable(err, o.Cwd)
		}
	}
	if reached == 0 {
		return fail(errs[0])
	}
	for _, h := range hs {
		if h.Down != nil && warn != nil {
			fmt.Fprintf(warn, "pi-remote: host %s is unreachable (%v); its calls fail until it answers\n", h.Name, h.Down)
		}
	}
	return hs, nil
}

// unreachable keeps a host that could not be reached at start: its
// environment finds its home, and the working directory under it, once the
// host answers (cwd unchecked until then).
func (h *Host) unreachable(err error, cwd string) {
	h.Down = err
	if cwd == "~" || strings.HasPrefix(cwd, "~/") {
		cwd = strings.TrimLeft(cwd[1:], "/")
	}
	h.Env = env.New(h.SSH, env.Options{Name: h.Name, Cwd: cwd})
}

// open reaches a remote host and checks cwd there.
func (h *Host) open(ctx context.Context, cfg reach.Config, cwd string) error {
	if err := h.SSH.Reach(ctx); err != nil {
		return &ConnectionError{Err: err}
	}
	h.Env = env.New(h.SSH, env.Options{Name: h.Name})
	if cwd == "" {
		return nil
	}
	abs, err := h.Env.Resolve(ctx, cwd)
	if err != nil {
		return HostError(err)
	}
	fi, err := h.SSH.Stat(ctx, abs)
	switch {
	case err != nil && IsConnectionFailure(err):
		return &ConnectionError{Err: err}
	case err != nil:
		return usageErrorf("--cwd %s on %s: %v", cwd, cfg.Alias, unwrapPath(err))
	case !fi.IsDir():
		return usageErrorf("--cwd %s on %s: not a directory", cwd, cfg.Alias)
	}
	home, err := h.Env.Home(ctx)
	if err != nil {
		return HostError(err)
	}
	h.Env = env.New(h.SSH, env.Options{Name: h.Name, Cwd: path.Clean(abs), Home: home})
	return nil
}

// localEnv is this machine with cwd (default: the current directory).
func localEnv(cwd, name string) (*env.ExecutionEnv, error) {
	if cwd == "" {
		wd, err := os.Getwd()
		if err != nil {
			return nil, usageErrorf("current directory: %v", err)
		}
		cwd = wd
	}
	abs, err := filepath.Abs(cwd)
	if err != nil {
		return nil, usageErrorf("--cwd %s: %v", cwd, err)
	}
	fi, err := os.Stat(abs)
	if err != nil {
		return nil, usageErrorf("--cwd %s: %v", cwd, unwrapPath(err))
	}
	if !fi.IsDir() {
		return nil, usageErrorf("--cwd %s: not a directory", cwd)
	}
	home, err := os.UserHomeDir()
	if err != nil {
		home = "/"
	}
	return env.New(local.New(), env.Options{Name: name, Cwd: abs, Home: home}), nil
}

func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
