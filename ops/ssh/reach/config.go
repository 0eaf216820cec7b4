package reach

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	sshconfig "github.com/kevinburke/ssh_config"
)

// Config is everything needed to reach one host. Resolve fills it from a
// host spec, the user's ssh_config and explicit overrides.
type Config struct {
	// Alias is the name the user gave (an ssh_config Host alias or a host
	// name); it appears in messages.
	Alias    string
	HostName string
	Port     int
	User     string

	// IdentityFiles are tried in order after the agent's keys that match
	// them. IdentitiesOnly limits agent keys to those files.
	IdentityFiles  []string
	IdentitiesOnly bool
	// IdentityAgent is the agent socket; "" means $SSH_AUTH_SOCK, "none"
	// disables the agent.
	IdentityAgent string

	// KnownHostsFiles are read to verify the host key; new keys accepted
	// with AcceptNewHostKey are appended to the first one.
	KnownHostsFiles  []string
	AcceptNewHostKey bool

	// Jump is the chain of hosts to go through, outermost first.
	Jump []Config

	ConnectTimeout time.Duration
	// KeepaliveInterval and KeepaliveCount detect a dead connection: after
	// KeepaliveCount unanswered keepalives sent KeepaliveInterval apart the
	// connection is closed. The defaults (5 s × 3) notice within ~15 s.
	KeepaliveInterval time.Duration
	KeepaliveCount    int
}

// Addr is the host:port to dial and to look up in known_hosts.
func (c *Config) Addr() string {
	return net.JoinHostPort(c.HostName, strconv.Itoa(c.Port))
}

// String is user@host:port, with the jump chain when there is one.
func (c *Config) String() string {
	s := fmt.Sprintf("%s@%s", c.User, c.Addr())
	if len(c.Jump) > 0 {
		var hops []string
		for _, j := range c.Jump {
			hops = append(hops, j.String())
		}
		s += " via " + strings.Join(hops, ",")
	}
	return s
}

// Options are the command-line settings that override ssh_config.
type Options struct {
	// SSHConfigFile is the ssh_config to read; "" means ~/.ssh/config (a
	// missing file is fine), "none" reads no file.
	SSHConfigFile string
	// Identities are added before the ones ssh_config names.
	Identities []string
	// KnownHostsFile replaces the ssh_config / default known_hosts files.
	KnownHostsFile   string
	AcceptNewHostKey bool
	// Jump replaces ssh_config's ProxyJump ("none" disables it).
	Jump              string
	ConnectTimeout    time.Duration
	KeepaliveInterval time.Duration
	KeepaliveCount    int
}

// The settings a Config gets when neither ssh_config nor Options name
// them (and Dial's bound when ConnectTimeout is zero).
const (
	DefaultConnectTimeout    = 15 * time.Second
	DefaultKeepaliveInterval = 5 * time.Second
	DefaultKeepaliveCount    = 3
)

// maxJumpDepth bounds a ProxyJump chain (one that names itself loops).
const maxJumpDepth = 8

// Resolve turns a host spec — [user@]host[:port] or an ssh_config alias —
// into a Config, reading ssh_config the way OpenSSH does for the keys
// pi-remote honours: HostName, User, Port, IdentityFile, IdentitiesOnly,
// IdentityAgent, UserKnownHostsFile, StrictHostKeyChecking, ProxyJump,
// ConnectTimeout, ServerAliveInterval, ServerAliveCountMax (Host patterns and
// Include included). Options override the file.
//
// The file is parsed in-process; a file that parser cannot read (Match
// criteria other than host and all, for instance) is resolved by OpenSSH
// itself with `ssh -G` when an ssh client is installed.
func Resolve(spec string, opts Options) (Config, error) {
	look, err := loadSSHConfig(opts.SSHConfigFile)
	if err != nil {
		return Config{}, err
	}
	return resolve(spec, opts, look, 0)
}

// lookup answers ssh_config questions for one host alias.
type lookup func(host string) (settings, error)

type settings interface {
	get(key string) string
	getAll(key string) []string
}

func loadSSHConfig(name string) (lookup, error) {
	explicit := name != ""
	empty := func(string) (settings, error) { return parsed{&sshconfig.Config{}, ""}, nil }
	if name == "none" {
		return empty, nil
	}
	if !explicit {
		name = filepath.Join(homeDir(), ".ssh", "config")
	}
	f, err := os.Open(name)
	if err != nil {
		if !explicit && errors.Is(err, os.ErrNotExist) {
			return empty, nil
		}
		return nil, fmt.Errorf("ssh config: %w", err)
	}
	defer f.Close()
	c, err := sshConfigs.get([]string{name}, func() (*sshconfig.Config, error) { return sshconfig.Decode(f) })
	if err == nil {
		return func(host string) (settings, error) { return parsed{c, host}, nil }, nil
	}
	ssh, lerr := exec.LookPath("ssh")
	if lerr != nil {
		return nil, fmt.Errorf("ssh config %s: %w (no ssh client to read it instead; pass --ssh-config none to ignore the file)", name, err)
	}
	return func(host string) (settings, error) { return sshG(ssh, name, host) }, nil
}

// sshConfigs are the ssh_config files parsed (parsedFiles). (A change to a
// file one includes is seen with the next change to the file itself.)
var sshConfigs parsedFiles[*sshconfig.Config]

// parsed is a host's view of a file read by kevinburke/ssh_config.
type parsed struct {
	c    *sshconfig.Config
	host string
}

func (p parsed) get(key string) string {
	v, _ := p.c.Get(p.host, key)
	return v
}

func (p parsed) getAll(key string) []string {
	v, _ := p.c.GetAll(p.host, key)
	return v
}

// sshG asks OpenSSH for the configuration of host: `ssh -G` evaluates
// every Match and Include the way ssh itself would.
func sshG(ssh, file, host string) (settings, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, ssh, "-G", "-F", file, "--", host)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("ssh -G %s: %v: %s", host, err, strings.TrimSpace(stderr.String()))
	}
	g := sshGOutput{}
	for _, line := range strings.Split(string(out), "\n") {
		k, v, ok := strings.Cut(line, " ")
		if ok {
			g[strings.ToLower(k)] = append(g[strings.ToLower(k)], v)
		}
	}
	return g, nil
}

type sshGOutput map[string][]string

func (g sshGOutput) get(key string) string {
	v := g[strings.ToLower(key)]
	if len(v) == 0 || v[0] == "none" {
		return ""
	}
	return v[0]
}

func (g sshGOutput) getAll(key string) []string { return g[strings.ToLower(key)] }

func resolve(spec string, opts Options, look lookup, depth int) (Config, error) {
	if depth > maxJumpDepth {
		return Config{}, fmt.Errorf("ProxyJump chain deeper than %d hops (a loop?)", maxJumpDepth)
	}
	specUser, host, specPort, err := splitSpec(spec)
	if err != nil {
		return Config{}, err
	}
	set, err := look(host)
	if err != nil {
		return Config{}, err
	}
	get, getAll := set.get, set.getAll
	c := Config{Alias: host, HostName: host, Port: 22}
	if v := get("HostName"); v != "" {
		c.HostName = strings.ReplaceAll(v, "%h", host)
	}
	if v := get("Port"); v != "" {
		if c.Port, err = strconv.Atoi(v); err != nil {
			return Config{}, fmt.Errorf("ssh config: host %s: bad Port %q", host, v)
		}
	}
	if specPort != 0 {
		c.Port = specPort
	}
	c.User = firstNonEmpty(specUser, get("User"), localUser())

	expand := func(p string) string { return expandTokens(p, &c) }
	for _, id := range opts.Identities {
		c.IdentityFiles = append(c.IdentityFiles, expand(id))
	}
	configured := getAll("IdentityFile")
	for _, id := range configured {
		c.IdentityFiles = append(c.IdentityFiles, expand(id))
	}
	if len(c.IdentityFiles) == 0 {
		// As OpenSSH: the default identities only when none is named.
		for _, n := range []string{"id_rsa", "id_ecdsa", "id_ecdsa_sk", "id_ed25519", "id_ed25519_sk"} {
			c.IdentityFiles = append(c.IdentityFiles, filepath.Join(homeDir(), ".ssh", n))
		}
	}
	c.IdentitiesOnly = strings.EqualFold(get("IdentitiesOnly"), "yes")
	if v := get("IdentityAgent"); v != "" {
		c.IdentityAgent = expand(v)
	}

	switch {
	case opts.KnownHostsFile != "":
		c.KnownHostsFiles = []string{expand(opts.KnownHostsFile)}
	case get("UserKnownHostsFile") != "":
		for _, f := range strings.Fields(get("UserKnownHostsFile")) {
			c.KnownHostsFiles = append(c.KnownHostsFiles, expand(f))
		}
	default:
		c.KnownHostsFiles = []string{filepath.Join(homeDir(), ".ssh", "known_hosts"), filepath.Join(homeDir(), ".ssh", "known_hosts2")}
	}
	c.AcceptNewHostKey = opts.AcceptNewHostKey || strings.EqualFold(get("StrictHostKeyChecking"), "accept-new")

	c.ConnectTimeout = firstDuration(opts.ConnectTimeout, seconds(get("ConnectTimeout")), DefaultConnectTimeout)
	c.KeepaliveInterval = firstDuration(opts.KeepaliveInterval, seconds(get("ServerAliveInterval")), DefaultKeepaliveInterval)
	c.KeepaliveCount = DefaultKeepaliveCount
	if n, err := strconv.Atoi(get("ServerAliveCountMax")); err == nil && n > 0 {
		c.KeepaliveCount = n
	}
	if opts.KeepaliveCount > 0 {
		c.KeepaliveCount = opts.KeepaliveCount
	}

	jump := get("ProxyJump")
	if depth == 0 && opts.Jump != "" {
		jump = opts.Jump
	}
	if jump != "" && !strings.EqualFold(jump, "none") {
		// Hops take their own settings from ssh_config, but not the
		// command-line jump (that would recurse for ever).
		hopOpts := opts
		hopOpts.Jump = ""
		hopOpts.Identities = opts.Identities
		for _, hop := range strings.Split(jump, ",") {
			hop = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(hop), "ssh://"))
			j, err := resolve(hop, hopOpts, look, depth+1)
			if err != nil {
				return Config{}, fmt.Errorf("jump host %s: %w", hop, err)
			}
			// A hop's own ProxyJump comes first in the chain.
			c.Jump = append(c.Jump, j.Jump...)
			j.Jump = nil
			c.Jump = append(c.Jump, j)
		}
	}
	return c, nil
}

// splitSpec parses [user@]host[:port], with IPv6 hosts in brackets.
func splitSpec(spec string) (user, host string, port int, err error) {
	if spec == "" {
		return "", "", 0, errors.New("empty host")
	}
	if i := strings.LastIndex(spec, "@"); i >= 0 {
		user, spec = spec[:i], spec[i+1:]
	}
	host = spec
	if strings.HasPrefix(spec, "[") {
		h, p, err := net.SplitHostPort(spec)
		if err != nil {
			if strings.HasSuffix(spec, "]") {
				return user, strings.Trim(spec, "[]"), 0, nil
			}
			return "", "", 0, fmt.Errorf("bad host %q: %w", spec, err)
		}
		host, spec = h, ":"+p
	} else if i := strings.LastIndex(spec, ":"); i >= 0 && strings.Count(spec, ":") == 1 {
		host, spec = spec[:i], spec[i:]
	} else {
		spec = ""
	}
	if spec != "" {
		port, err = strconv.Atoi(spec[1:])
		if err != nil || port <= 0 || port > 65535 {
			return "", "", 0, fmt.Errorf("bad port in host %q", host+spec)
		}
	}
	if host == "" {
		return "", "", 0, errors.New("empty host")
	}
	return user, host, port, nil
}

// expandTokens expands ~ and the ssh_config tokens %d %h %p %r %u %% in a
// file path.
func expandTokens(p string, c *Config) string {
	if p == "~" || strings.HasPrefix(p, "~/") {
		p = homeDir() + p[1:]
	}
	if !strings.Contains(p, "%") {
		return p
	}
	var b strings.Builder
	for i := 0; i < len(p); i++ {
		if p[i] != '%' || i+1 == len(p) {
			b.WriteByte(p[i])
			continue
		}
		i++
		switch p[i] {
		case 'd':
			b.WriteString(homeDir())
		case 'h':
			b.WriteString(c.HostName)
		case 'p':
			b.WriteString(strconv.Itoa(c.Port))
		case 'r':
			b.WriteString(c.User)
		case 'u':
			b.WriteString(localUser())
		case '%':
			b.WriteByte('%')
		default:
			b.WriteByte('%')
			b.WriteByte(p[i])
		}
	}
	return b.String()
}

func homeDir() string {
	if h, err := os.UserHomeDir(); err == nil {
		return h
	}
	return "/"
}

func localUser() string {
	if u, err := user.Current(); err == nil {
		return u.Username
	}
	return os.Getenv("USER")
}

func firstNonEmpty(s ...string) string {
	for _, v := range s {
		if v != "" {
			return v
		}
	}
	return ""
}

func firstDuration(d ...time.Duration) time.Duration {
	for _, v := range d {
		if v > 0 {
			return v
		}
	}
	return 0
}

func seconds(s string) time.Duration {
	n, err := strconv.Atoi(s)
	if err != nil || n <= 0 {
		return 0
	}
	return time.Duration(n) * time.Second
}
