package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/spf13/pflag"

	"github.com/pi-remote/pi-remote/env"
	"github.com/pi-remote/pi-remote/ops"
	"github.com/pi-remote/pi-remote/ops/local"
	"github.com/pi-remote/pi-remote/ops/ssh"
	"github.com/pi-remote/pi-remote/tools"
)

// hostFlags select the host and say how to reach it; every command has them.
type hostFlags struct {
	hosts          []string
	identities     []string
	knownHosts     string
	acceptNew      bool
	sshConfig      string
	jump           string
	connectTimeout time.Duration
	reattach       time.Duration
	leaseTTL       time.Duration
	outputCapMiB   int64

	// oneShot: the command makes one call or a few: each host warms one
	// command server (ssh.HostOptions.WarmServers).
	oneShot bool

	// onLinkState, when set, hears of lost and restored connections.
	onLinkState func(host string, state ssh.LinkState, down time.Duration, err error)
}

func (h *hostFlags) register(fs *pflag.FlagSet) {
	fs.StringArrayVar(&h.hosts, "host", nil, "host to act on: [user@]host[:port] or an ssh_config alias (default: this machine); repeat as NAME=SPEC for several, the first is the default")
	fs.StringArrayVar(&h.identities, "identity", nil, "private key file to log in with (repeatable; tried before ssh_config's)")
	fs.StringVar(&h.knownHosts, "known-hosts", "", "known_hosts file (default: ssh_config's UserKnownHostsFile or ~/.ssh/known_hosts)")
	fs.BoolVar(&h.acceptNew, "accept-new-host-key", false, "record the key of a host seen for the first time (a changed key is always refused)")
	fs.StringVar(&h.sshConfig, "ssh-config", "", `ssh_config file (default ~/.ssh/config; "none" reads none)`)
	fs.StringVar(&h.jump, "jump", "", "jump host(s), comma-separated, like ssh -J (overrides ProxyJump)")
	fs.DurationVar(&h.connectTimeout, "connect-timeout", 0, "bound on connecting and logging in (default 15s)")
	fs.DurationVar(&h.reattach, "reattach-timeout", ssh.DefaultReattachTimeout, "how long a remote command whose connection dropped waits for the host to come back (0: fail at once; the command then runs on until its lease runs out)")
	fs.DurationVar(&h.leaseTTL, "lease-ttl", ssh.DefaultLeaseTTL, "how long a remote command runs on once no client renews its lease (a client that crashed or never came back)")
	fs.Int64Var(&h.outputCapMiB, "output-cap-mib", ssh.DefaultOutputCap>>20, "most output (MiB) a remote command may write on its host before it is stopped (0: no cap)")
}

// hostOptions are the backend's options from the flags.
// warmBudget is how many command servers a session warms over all its
// hosts (each one a login shell on its host), a full pool each for one or
// two hosts; every host warms at least one.
const warmBudget = 16

// hostOptions are the options of each of n SSH hosts.
func (h *hostFlags) hostOptions(n int) ssh.HostOptions {
	o := ssh.HostOptions{ReattachTimeout: h.reattach, LeaseTTL: h.leaseTTL, OutputCap: h.outputCapMiB << 20}
	switch {
	case h.oneShot:
		o.WarmServers = 1
	case n > 2:
		o.WarmServers = max(1, warmBudget/n)
	}
	if h.reattach == 0 {
		o.ReattachTimeout = -1
	}
	if h.outputCapMiB <= 0 {
		o.OutputCap = -1
	}
	return o
}

// sshConfig resolves the --host spec; a spec that cannot be parsed is a
// usage error.
func (h *hostFlags) sshConfigFor(spec string) (ssh.Config, error) {
	cfg, err := ssh.Resolve(spec, ssh.Options{
		SSHConfigFile:    h.sshConfig,
		Identities:       h.identities,
		KnownHostsFile:   h.knownHosts,
		AcceptNewHostKey: h.acceptNew,
		Jump:             h.jump,
		ConnectTimeout:   h.connectTimeout,
	})
	if err != nil {
		return ssh.Config{}, usageErrorf("--host %s: %v", spec, err)
	}
	return cfg, nil
}

// connectionError wraps a failure to reach a host with exit code 3.
func connectionError(err error) error {
	return &exitError{code: exitConnection, err: err}
}

// isConnectionFailure says whether err means the host could not be reached,
// verified or logged in to.
func isConnectionFailure(err error) bool {
	var ce *ssh.ConnectError
	return errors.As(err, &ce) || errors.Is(err, ops.ErrConnectionLost)
}

// target is one execution environment the flags select, with the SSH
// host behind it when it is remote.
type target struct {
	name string
	env  *env.ExecutionEnv
	host *ssh.Host // nil for this machine
	down error     // why the host could not be reached at start, if it could not
}

func (t *target) close() {
	if t.host != nil {
		t.host.Close()
	}
}

// lost says whether a remote host's connection is gone, to tell a tool's
// own failure from a lost connection: at once when the host saw its
// connection die (a new dial to a black-holed host would take the connect
// timeout), else checked with one round trip.
func (t *target) lost(ctx context.Context) bool {
	if t.host == nil {
		return false
	}
	if t.host.Down() {
		return true
	}
	_, err := t.host.Ping(ctx)
	return err != nil && isConnectionFailure(err)
}

// where identifies the target for session files: "local" or
// user@host:port.
func (t *target) where() string {
	if t.host == nil {
		return "local"
	}
	cfg := t.host.Config()
	return cfg.String()
}

// targets are the environments of one command; the first is the default.
type targets []*target

func (ts targets) close() {
	for _, t := range ts {
		t.close()
	}
}

func (ts targets) lost(ctx context.Context) bool {
	for _, t := range ts {
		if t.lost(ctx) {
			return true
		}
	}
	return false
}

// definitions are the tools of every target; with several, each tool takes
// an optional host argument.
func (ts targets) definitions() ([]tools.Definition, error) {
	var hosts []tools.Host
	for _, t := range ts {
		hosts = append(hosts, tools.Host{Name: t.name, Defs: definitions(t.env)})
	}
	return tools.ForHosts(hosts)
}

var hostName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]*$`)

// splitHostFlag reads "NAME=SPEC" or "SPEC".
func splitHostFlag(v string) (name, spec string) {
	if n, s, ok := strings.Cut(v, "="); ok && hostName.MatchString(n) && !strings.Contains(n, "@") {
		return n, s
	}
	return "", v
}

// openTargets builds the environments the flags select: this machine
// without --host; otherwise one per --host (NAME=SPEC names it; SPEC
// "local" is this machine). Remote hosts are connected first, all at once,
// so that connection problems surface before any tool runs: with one host
// as exit 3; with several, a host that cannot be reached is reported (on
// stderr, by check, in the system prompt) and kept, its calls failing with
// the reason until it answers (each call tries again), unless none of the
// hosts can be reached.
func openTargets(ctx context.Context, g *globalOptions) (targets, error) {
	if len(g.host.hosts) == 0 {
		e, err := localEnv(g.cwd, "local")
		if err != nil {
			return nil, err
		}
		return targets{{name: "local", env: e}}, nil
	}
	var ts targets
	fail := func(err error) (targets, error) {
		ts.close()
		return nil, err
	}
	seen := map[string]bool{}
	var cfgs []ssh.Config
	sshHosts := 0
	for _, v := range g.host.hosts {
		if _, spec := splitHostFlag(v); spec != "local" {
			sshHosts++
		}
	}
	// (A lease of 0 or less is the default one.)
	if h := g.host; sshHosts > 0 && h.reattach > 0 && h.leaseTTL > 0 && h.leaseTTL < h.reattach {
		// The lease would kill a command whose client still waits to
		// attach to it again.
		return nil, usageErrorf("--lease-ttl %s is shorter than --reattach-timeout %s: a command would be killed while its client still waits for the host; raise the lease or lower the re-attach timeout", h.leaseTTL, h.reattach)
	}
	for _, v := range g.host.hosts {
		name, spec := splitHostFlag(v)
		var t *target
		var cfg ssh.Config
		if spec == "local" {
			if name == "" {
				name = "local"
			}
			e, err := localEnv(g.cwd, name)
			if err != nil {
				return fail(err)
			}
			t = &target{name: name, env: e}
		} else {
			var err error
			if cfg, err = g.host.sshConfigFor(spec); err != nil {
				return fail(err)
			}
			if name == "" {
				name = cfg.Alias
			}
			opts := g.host.hostOptions(sshHosts)
			if tell := g.host.onLinkState; tell != nil {
				host := name
				opts.OnLinkState = func(s ssh.LinkState, down time.Duration, err error) { tell(host, s, down, err) }
			}
			t = &target{name: name, host: ssh.New(cfg, opts)}
		}
		if seen[name] {
			t.close()
			return fail(usageErrorf("--host: the name %q is used twice; name hosts with NAME=SPEC", name))
		}
		seen[name] = true
		ts = append(ts, t)
		cfgs = append(cfgs, cfg)
	}
	errs := make([]error, len(ts))
	var wg sync.WaitGroup
	for i, t := range ts {
		if t.host != nil {
			wg.Go(func() { errs[i] = t.open(ctx, cfgs[i], g.cwd) })
		}
	}
	wg.Wait()
	reached := 0
	for i, t := range ts {
		switch err := errs[i]; {
		case err == nil:
			reached++
		case len(ts) == 1 || !isConnectionFailure(err):
			return fail(err)
		default:
			t.unreachable(err, g.cwd)
		}
	}
	if reached == 0 {
		return fail(errs[0])
	}
	for _, t := range ts {
		if t.down != nil && g.warn != nil {
			fmt.Fprintf(g.warn, "pi-remote: host %s is unreachable (%v); its calls fail until it answers\n", t.name, unwrapConnection(t.down))
		}
	}
	return ts, nil
}

// unreachable keeps a host that could not be reached at start: its
// environment finds its home, and the working directory under it, once the
// host answers (--cwd unchecked until then).
func (t *target) unreachable(err error, cwd string) {
	t.down = err
	if cwd == "~" || strings.HasPrefix(cwd, "~/") {
		cwd = strings.TrimLeft(cwd[1:], "/")
	}
	t.env = env.New(t.host, env.Options{Name: t.name, Cwd: cwd})
}

// unwrapConnection is a connection failure without the exit code.
func unwrapConnection(err error) error {
	var ee *exitError
	if errors.As(err, &ee) {
		return ee.err
	}
	return err
}

func (t *target) open(ctx context.Context, cfg ssh.Config, cwd string) error {
	if err := t.host.Reach(ctx); err != nil {
		return connectionError(err)
	}
	t.env = env.New(t.host, env.Options{Name: t.name})
	if cwd == "" {
		return nil
	}
	abs, err := t.env.Resolve(ctx, cwd)
	if err != nil {
		return hostError(err)
	}
	fi, err := t.host.Stat(ctx, abs)
	switch {
	case err != nil && isConnectionFailure(err):
		return connectionError(err)
	case err != nil:
		return usageErrorf("--cwd %s on %s: %v", cwd, cfg.Alias, unwrapPath(err))
	case !fi.IsDir():
		return usageErrorf("--cwd %s on %s: not a directory", cwd, cfg.Alias)
	}
	home, err := t.env.Home(ctx)
	if err != nil {
		return hostError(err)
	}
	t.env = env.New(t.host, env.Options{Name: t.name, Cwd: path.Clean(abs), Home: home})
	return nil
}

func hostError(err error) error {
	if isConnectionFailure(err) {
		return connectionError(err)
	}
	return err
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
