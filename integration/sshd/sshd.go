// Package sshd runs real OpenSSH sshd instances on loopback ports for the
// integration tests and the benchmark: generated host and client keys, a
// known_hosts file, an sshd_config of the test's choosing, logs kept for
// failure messages.
//
// In CI (CI=true) a missing sshd fails the test; elsewhere it skips, saying
// why.
package sshd

import (
	"bufio"
	"bytes"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"

	"github.com/pi-remote/pi-remote/internal/unprivileged"
	"github.com/pi-remote/pi-remote/ops/ssh/reach"
)

// Paths where distributions install the daemon and the SFTP server.
var (
	daemonPaths = []string{"/usr/sbin/sshd", "/usr/local/sbin/sshd"}
	sftpPaths   = []string{"/usr/lib/openssh/sftp-server", "/usr/libexec/openssh/sftp-server", "/usr/libexec/sftp-server"}
)

// Require returns the sshd binary, failing the test in CI and skipping it
// elsewhere when there is none.
func Require(t testing.TB) string {
	t.Helper()
	for _, p := range daemonPaths {
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	if os.Getenv("CI") != "" {
		t.Fatal("OpenSSH sshd is not installed (apt-get install openssh-server); CI must run the integration tests")
	}
	t.Skip("OpenSSH sshd is not installed; install openssh-server to run the integration tests")
	return ""
}

// RequireRoot fails in CI and skips elsewhere when the test is not root.
func RequireRoot(t testing.TB, why string) {
	t.Helper()
	unprivileged.RequireRoot(t, why)
}

// Options shape one server.
type Options struct {
	// User logs in; default the current user. Another user needs root.
	User string
	// Config lines appended to the generated sshd_config.
	Config []string
	// Wrap, when set, runs sshd through these arguments, e.g. unshare
	// with a mount script; "$SSHD" in them is replaced by the sshd command.
	Wrap []string
	// NoSFTP leaves the sftp subsystem out.
	NoSFTP bool
}

// Server is one running sshd.
type Server struct {
	Addr       string
	Port       int
	User       string
	Dir        string
	ClientKey  string // private key accepted for User
	KnownHosts string // the server's host keys
	HostKeys   []ssh.PublicKey

	opts    Options
	args    []string // the daemon's command line
	ready   string   // what it logs when it is about to listen
	mu      sync.Mutex
	cmd     *exec.Cmd
	log     *lockedBuffer
	stopped bool
}

// Start runs an sshd until the test ends.
func Start(t testing.TB, opts Options) *Server {
	t.Helper()
	daemon := Require(t)
	me, err := user.Current()
	if err != nil {
		t.Fatal(err)
	}
	if opts.User == "" {
		opts.User = me.Username
	}
	if opts.User != me.Username {
		RequireRoot(t, "sshd logs in only its own user unless it runs as root")
	}
	if os.Geteuid() == 0 {
		// The privilege-separation directory of a root sshd.
		if err := os.MkdirAll("/run/sshd", 0o755); err != nil {
			t.Fatal(err)
		}
	}
	dir, err := os.MkdirTemp("", "pi-remote-sshd-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	// sshd reads authorized_keys as the login user.
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	s := &Server{Dir: dir, User: opts.User, opts: opts, log: &lockedBuffer{}, ready: "Server listening on"}

	var hostKeyLines []string
	edPub, edPriv, _ := ed25519.GenerateKey(rand.Reader)
	ecPriv, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	for name, key := range map[string]any{"host_ed25519": edPriv, "host_ecdsa": ecPriv} {
		writeKey(t, filepath.Join(dir, name), key)
		hostKeyLines = append(hostKeyLines, "HostKey "+filepath.Join(dir, name))
	}
	edSSH, _ := ssh.NewPublicKey(edPub)
	ecSSH, _ := ssh.NewPublicKey(&ecPriv.PublicKey)
	s.HostKeys = []ssh.PublicKey{edSSH, ecSSH}

	_, clientPriv, _ := ed25519.GenerateKey(rand.Reader)
	s.ClientKey = filepath.Join(dir, "client_ed25519")
	writeKey(t, s.ClientKey, clientPriv)
	signer, err := ssh.NewSignerFromKey(clientPriv)
	if err != nil {
		t.Fatal(err)
	}
	authorized := filepath.Join(dir, "authorized_keys")
	if err := os.WriteFile(authorized, ssh.MarshalAuthorizedKey(signer.PublicKey()), 0o644); err != nil {
		t.Fatal(err)
	}

	s.KnownHosts = filepath.Join(dir, "known_hosts")
	lines := []string{
		"ListenAddress 127.0.0.1",
		"PidFile " + filepath.Join(dir, "sshd.pid"),
		"AuthorizedKeysFile " + authorized,
		"StrictModes no",
		"UsePAM no",
		"PasswordAuthentication no",
		"KbdInteractiveAuthentication no",
		"PubkeyAuthentication yes",
		"PermitRootLogin prohibit-password",
		"AllowUsers " + opts.User,
		"LogLevel VERBOSE",
	}
	lines = append(lines, hostKeyLines...)
	if !opts.NoSFTP {
		lines = append(lines, "Subsystem sftp "+firstExisting(sftpPaths, "internal-sftp"))
	}
	lines = append(lines, opts.Config...)
	config := filepath.Join(dir, "sshd_config")
	// OpenSSH ≥ 9.8 penalises sources that fail auth; tests do on purpose.
	if os.WriteFile(config, []byte(strings.Join(lines, "\n")+"\n"), 0o644) == nil &&
		exec.Command(daemon, "-t", "-f", config, "-o", "PerSourcePenalties=no").Run() == nil {
		lines = append(lines, "PerSourcePenalties no")
	}
	s.run(t, "sshd", func() {
		// What OpenSSH's client writes: the Ed25519 key only. The client
		// must ask for it first even though the server also has ECDSA.
		if err := os.WriteFile(s.KnownHosts, []byte(knownhosts.Line([]string{knownhosts.Normalize(s.Addr)}, edSSH)+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		withPort := append([]string{"Port " + strconv.Itoa(s.Port)}, lines...)
		if err := os.WriteFile(config, []byte(strings.Join(withPort, "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if out, err := exec.Command(daemon, "-t", "-f", config).CombinedOutput(); err != nil {
			t.Fatalf("sshd -t: %v\n%s", err, out)
		}
		s.args = wrap(opts.Wrap, []string{daemon, "-D", "-e", "-f", config})
	})
	return s
}

// run starts the daemon on a free port, and stops it when the test ends,
// showing its log if the test failed. listen, given s.Port and s.Addr,
// writes what names them and sets s.args. A port another test's daemon
// took between freePort and the bind is given up for another, up to
// three times.
func (s *Server) run(t testing.TB, name string, listen func()) {
	t.Helper()
	for attempt := 1; ; attempt++ {
		s.Port = freePort(t)
		s.Addr = net.JoinHostPort("127.0.0.1", strconv.Itoa(s.Port))
		listen()
		err := s.start()
		if err == nil {
			break
		}
		if !errors.Is(err, errPortTaken) || attempt == 3 {
			t.Fatal(err)
		}
		t.Logf("%s: %v; another port", name, err)
		s.log.Reset()
	}
	t.Cleanup(func() {
		s.Stop()
		if t.Failed() {
			t.Logf("%s log (%s):\n%s", name, s.Addr, s.Log())
		}
	})
}

func (s *Server) start() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	cmd := exec.Command(s.args[0], s.args[1:]...)
	r, w, err := os.Pipe()
	if err != nil {
		return err
	}
	cmd.Stdout, cmd.Stderr = w, w
	if err := cmd.Start(); err != nil {
		w.Close()
		r.Close()
		return err
	}
	w.Close()
	ready := make(chan struct{})
	go func() {
		br := bufio.NewReader(r)
		signalled := false
		for {
			line, err := br.ReadString('\n')
			s.log.Write([]byte(line))
			if !signalled && strings.Contains(line, s.ready) {
				close(ready)
				signalled = true
			}
			if err != nil {
				r.Close()
				if !signalled {
					close(ready)
				}
				return
			}
		}
	}()
	select {
	case <-ready:
	case <-time.After(10 * time.Second):
	}
	var c net.Conn
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		c, err = net.DialTimeout("tcp", s.Addr, time.Second)
		if err == nil || time.Now().After(deadline) {
			break
		}
	}
	if err == nil {
		c.Close()
		// (What answered may be another test's daemon that took the
		// port first: this one then fails to bind.)
		if !listensOn(cmd.Process.Pid, s.Port) {
			cmd.Process.Kill()
			cmd.Wait()
			return fmt.Errorf("%w: %s\n%s", errPortTaken, s.Addr, s.log.String())
		}
	} else {
		cmd.Process.Kill()
		cmd.Wait()
		return fmt.Errorf("sshd did not start on %s: %v\n%s", s.Addr, err, s.log.String())
	}
	s.cmd, s.stopped = cmd, false
	return nil
}

// errPortTaken: another process listens on the daemon's port.
var errPortTaken = errors.New("the port is another process's")

// listensOn reports whether process pid, or one of its descendants, has
// a socket listening on 127.0.0.1:port, read from /proc (without it, as
// on macOS, it cannot tell, and says yes).
func listensOn(pid, port int) bool {
	table, err := os.ReadFile("/proc/net/tcp")
	if err != nil {
		return true
	}
	local := fmt.Sprintf("0100007F:%04X", port)
	sockets := map[string]bool{}
	for _, line := range strings.Split(string(table), "\n") {
		f := strings.Fields(line)
		// sl local remote state ... inode: state 0A is LISTEN.
		if len(f) > 9 && f[1] == local && f[3] == "0A" {
			sockets["socket:["+f[9]+"]"] = true
		}
	}
	tree := map[int]bool{pid: true}
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	for grew := true; grew; {
		grew = false
		for _, stat := range stats {
			b, err := os.ReadFile(stat)
			if err != nil {
				continue
			}
			after := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
			p, _ := strconv.Atoi(strings.Split(stat, "/")[2])
			ppid := 0
			if len(after) > 1 {
				ppid, _ = strconv.Atoi(after[1])
			}
			if tree[ppid] && !tree[p] {
				tree[p], grew = true, true
			}
		}
	}
	for p := range tree {
		fds, _ := filepath.Glob(fmt.Sprintf("/proc/%d/fd/*", p))
		for _, fd := range fds {
			if target, err := os.Readlink(fd); err == nil && sockets[target] {
				return true
			}
		}
	}
	return false
}

// Stop kills the daemon (sessions it forked live on until their
// connections close, as with a real sshd restart).
func (s *Server) Stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil || s.stopped {
		return
	}
	s.stopped = true
	s.cmd.Process.Kill()
	s.cmd.Wait()
}

// Restart starts the daemon again on the same port with the same keys.
func (s *Server) Restart() error {
	s.Stop()
	return s.start()
}

// Log is what sshd wrote so far.
func (s *Server) Log() string { return s.log.String() }

// Config is a client configuration that logs in to this server, with its
// own known_hosts and no agent and no ssh_config.
func (s *Server) Config() reach.Config {
	return reach.Config{
		Alias: "sshd-" + strconv.Itoa(s.Port), HostName: "127.0.0.1", Port: s.Port, User: s.User,
		IdentityFiles: []string{s.ClientKey}, IdentityAgent: "none",
		KnownHostsFiles: []string{s.KnownHosts},
	}
}

// Flags are the CLI flags that reach this server.
func (s *Server) Flags() []string {
	return []string{"--host", s.User + "@" + s.Addr, "--identity", s.ClientKey, "--known-hosts", s.KnownHosts, "--ssh-config", "none"}
}

// wrap puts a daemon's command line into a wrapper's ("$SSHD" in it).
func wrap(wrapper, args []string) []string {
	if len(wrapper) == 0 {
		return args
	}
	daemon := strings.Join(args, " ")
	var wrapped []string
	for _, a := range wrapper {
		wrapped = append(wrapped, strings.ReplaceAll(a, "$SSHD", daemon))
	}
	return wrapped
}

func writeKey(t testing.TB, name string, key any) {
	t.Helper()
	block, err := ssh.MarshalPrivateKey(key, "")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(name, pem.EncodeToMemory(block), 0o600); err != nil {
		t.Fatal(err)
	}
}

func freePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func firstExisting(paths []string, fallback string) string {
	for _, p := range paths {
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	return fallback
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) Reset() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.b.Reset()
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
