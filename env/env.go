// Package env provides ExecutionEnv, the portable type the tools talk to.
//
// One ExecutionEnv is one host: its operations (an ops backend), its working
// directory and home, path resolution (relative paths, "~", "@" prefixes,
// Unicode space variants), canonical path keys, the host's capabilities
// (bash, rg, fd), and its own file mutation queue, with the barriers that
// order reads and commands after the mutations reserved before them.
// Behaviour that must be identical on every host lives here once; backends
// stay thin. Tools never import a backend, os or os/exec: everything goes
// through an ExecutionEnv.
//
// An ExecutionEnv is safe for concurrent use.
package env

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"strings"
	"sync"

	"github.com/pi-remote/pi-remote/canonpath"
	"github.com/pi-remote/pi-remote/ops"
)

// Options configure an ExecutionEnv.
type Options struct {
	// Name is how users and models refer to the host ("local", "devbox").
	Name string
	// Cwd is the working directory: absolute, or relative to the host's
	// home (asked of the host when first needed); empty means the home.
	Cwd string
	// Home is the host's home directory; empty means ask the host.
	Home string
}

// ExecutionEnv is one host as the tools see it.
type ExecutionEnv struct {
	ops   ops.Operations
	name  string
	id    string
	cwd   string
	home  string
	queue mutationQueue

	capMu sync.Mutex
	caps  *Capabilities
}

// New returns an environment over the backend o.
func New(o ops.Operations, opts Options) *ExecutionEnv {
	name := opts.Name
	if name == "" {
		name = "local"
	}
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err) // crypto/rand never fails on supported platforms
	}
	e := &ExecutionEnv{ops: o, name: name, id: name + "#" + hex.EncodeToString(b[:]), home: opts.Home}
	if opts.Cwd != "" {
		e.cwd = path.Clean(opts.Cwd)
	}
	e.queue.tails = map[canonpath.Key]*slot{}
	e.queue.keys = map[string]canonpath.Key{}
	return e
}

// Name is the environment's display name.
func (e *ExecutionEnv) Name() string { return e.name }

// ID is unique to this ExecutionEnv value: two environments never share one,
// even for the same host.
func (e *ExecutionEnv) ID() string { return e.id }

// Ops returns the backend.
func (e *ExecutionEnv) Ops() ops.Operations { return e.ops }

// Cwd returns the working directory, asking the host for its home when none
// was configured.
func (e *ExecutionEnv) Cwd(ctx context.Context) (string, error) {
	if path.IsAbs(e.cwd) {
		return e.cwd, nil
	}
	home, err := e.Home(ctx)
	if err != nil {
		return "", err
	}
	return path.Join(home, e.cwd), nil
}

// Home returns the host's home directory.
func (e *ExecutionEnv) Home(ctx context.Context) (string, error) {
	if e.home != "" {
		return e.home, nil
	}
	c, err := e.Capabilities(ctx)
	if err != nil {
		return "", err
	}
	return c.Home, nil
}

// unicodeSpaces are the space variants that models and copy-paste put into
// paths; they become ASCII spaces.
var unicodeSpaces = strings.NewReplacer(
	"\u00a0", " ", "\u2000", " ", "\u2001", " ", "\u2002", " ", "\u2003", " ",
	"\u2004", " ", "\u2005", " ", "\u2006", " ", "\u2007", " ", "\u2008", " ",
	"\u2009", " ", "\u200a", " ", "\u202f", " ", "\u205f", " ", "\u3000", " ",
)

// Resolve turns a path given by a model or user into an absolute, clean path
// on this host: a leading "@" is dropped, Unicode space variants become
// spaces, "~" and "~/..." expand to the host's home, and relative paths are
// joined to the working directory.
func (e *ExecutionEnv) Resolve(ctx context.Context, p string) (string, error) {
	p = unicodeSpaces.Replace(strings.TrimPrefix(p, "@"))
	if p == "" {
		return "", errors.New("empty path")
	}
	if strings.ContainsRune(p, 0) {
		return "", errors.New("path contains a NUL byte")
	}
	if p == "~" || strings.HasPrefix(p, "~/") {
		home, err := e.Home(ctx)
		if err != nil {
			return "", err
		}
		return path.Join(home, p[1:]), nil
	}
	if path.IsAbs(p) {
		return path.Clean(p), nil
	}
	cwd, err := e.Cwd(ctx)
	if err != nil {
		return "", err
	}
	return path.Join(cwd, p), nil
}

// Key returns the canonical key of an absolute path on this environment.
func (e *ExecutionEnv) Key(ctx context.Context, abs string) (canonpath.Key, error) {
	return canonpath.Of(ctx, e.id, ops.ResolverOf(e.ops), abs)
}

// Stat delegates to the backend.
func (e *ExecutionEnv) Stat(ctx context.Context, abs string) (fs.FileInfo, error) {
	return e.ops.Stat(ctx, abs)
}

// Open delegates to the backend.
func (e *ExecutionEnv) Open(ctx context.Context, abs string) (io.ReadCloser, error) {
	return e.ops.Open(ctx, abs)
}

// ReadFile reads a whole file.
func (e *ExecutionEnv) ReadFile(ctx context.Context, abs string) ([]byte, error) {
	rc, err := e.ops.Open(ctx, abs)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	return io.ReadAll(rc)
}

// ReadDir delegates to the backend.
func (e *ExecutionEnv) ReadDir(ctx context.Context, abs string) ([]ops.DirEntry, error) {
	return e.ops.ReadDir(ctx, abs)
}

// WriteFile delegates to the backend. Callers that mutate user files do so
// inside Mutate.
func (e *ExecutionEnv) WriteFile(ctx context.Context, abs string, r io.Reader, opts ops.WriteOptions) error {
	return e.ops.WriteFile(ctx, abs, r, opts)
}

// MkdirAll delegates to the backend.
func (e *ExecutionEnv) MkdirAll(ctx context.Context, abs string) error {
	return e.ops.MkdirAll(ctx, abs)
}

// NonInteractive is the environment every command gets so that nothing waits
// for a human: no pagers, no editors, no credential prompts.
var NonInteractive = []string{
	"GIT_TERMINAL_PROMPT=0",
	"GIT_EDITOR=true",
	"GIT_PAGER=cat",
	"PAGER=cat",
	"MANPAGER=cat",
	"EDITOR=true",
	"VISUAL=true",
	"DEBIAN_FRONTEND=noninteractive",
	"SSH_ASKPASS=",
	"TERM=dumb",
	"CI=true",
}

// Exec runs a command on the host in the working directory (unless cmd.Dir
// is set) with the NonInteractive environment added.
func (e *ExecutionEnv) Exec(ctx context.Context, cmd ops.Command) error {
	if cmd.Dir == "" {
		cwd, err := e.Cwd(ctx)
		if err != nil {
			return err
		}
		cmd.Dir = cwd
	}
	cmd.Env = append(append([]string(nil), NonInteractive...), cmd.Env...)
	return e.ops.Exec(ctx, cmd)
}

// Capabilities is what a host offers beyond POSIX sh, probed once per
// environment.
type Capabilities struct {
	Home   string // $HOME
	TmpDir string // $TMPDIR or /tmp
	Bash   string // path of bash, "" when absent
	Rg     string // path of ripgrep, "" when absent
	Fd     string // path of fd (or Debian's fdfind), "" when absent
}

const probeScript = `for c in bash rg fd fdfind; do p=$(command -v "$c" 2>/dev/null) && printf '%s=%s\n' "$c" "$p"; done
printf 'home=%s\ntmp=%s\n' "$HOME" "${TMPDIR:-/tmp}"`

// Capabilities probes the host once (one command) and caches the answer. A
// failed probe is not cached.
func (e *ExecutionEnv) Capabilities(ctx context.Context) (Capabilities, error) {
	e.capMu.Lock()
	defer e.capMu.Unlock()
	if e.caps != nil {
		return *e.caps, nil
	}
	var out bytes.Buffer
	if err := e.ops.Exec(ctx, ops.Command{Script: probeScript, Output: &out}); err != nil {
		return Capabilities{}, fmt.Errorf("probe host %s: %w", e.name, err)
	}
	c := Capabilities{}
	for line := range strings.Lines(out.String()) {
		k, v, _ := strings.Cut(strings.TrimRight(line, "\n"), "=")
		switch k {
		case "bash":
			c.Bash = v
		case "rg":
			c.Rg = v
		case "fd":
			c.Fd = v
		case "fdfind":
			if c.Fd == "" {
				c.Fd = v
			}
		case "home":
			c.Home = v
		case "tmp":
			c.TmpDir = v
		}
	}
	if c.Home == "" || !path.IsAbs(c.Home) {
		c.Home = "/"
	}
	if !path.IsAbs(c.TmpDir) {
		c.TmpDir = "/tmp"
	}
	e.caps = &c
	return c, nil
}

// SetCapabilities overrides the probe, for tests and for callers that know
// the host (for example to force the POSIX fallbacks).
func (e *ExecutionEnv) SetCapabilities(c Capabilities) {
	e.capMu.Lock()
	defer e.capMu.Unlock()
	e.caps = &c
}
