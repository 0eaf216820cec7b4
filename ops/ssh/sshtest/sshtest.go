// Package sshtest runs an in-process SSH server for tests of ops/ssh and of
// anything built on it. Commands run as `/bin/sh -c` in their own session
// (like sshd's child), signals reach the whole process group, and the SFTP
// subsystem is OpenSSH's own sftp-server when it is installed (real
// RealPath and rename semantics), else pkg/sftp's server.
package sshtest

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"errors"
	"io"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"sync"
	"testing"

	glssh "github.com/gliderlabs/ssh"
	"github.com/pkg/sftp"
	gossh "golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"

	"github.com/pi-remote/pi-remote/ops/ssh/reach"
)

// SFTPServerPaths are where distributions install OpenSSH's sftp-server.
var SFTPServerPaths = []string{"/usr/lib/openssh/sftp-server", "/usr/libexec/openssh/sftp-server", "/usr/libexec/sftp-server"}

// Server is a running in-process SSH server on a loopback port.
type Server struct {
	Addr       string
	HostKey    gossh.PublicKey
	ClientKey  string // private key file accepted by the server
	KnownHosts string // known_hosts file with the server's key
	// RealSFTP says whether the subsystem is OpenSSH's sftp-server.
	RealSFTP bool

	mu          sync.Mutex
	sessions    int
	connections int
	maxSessions int                       // per connection; 0 = no limit
	open        map[*gossh.ServerConn]int // session channels open per connection
	mostOpen    int                       // the most ever open on one connection
	closeEarly  int                       // session channels still to close at once
	umask       string                    // Options.Umask
}

// Options change the server's behaviour.
type Options struct {
	NoSFTP bool // no sftp subsystem, as on hosts that lack it
	// Umask, when set (octal, "077"), is the umask commands start with,
	// as a user's login would set it; otherwise they have this process's.
	Umask string
}

// Start runs a server until the test ends.
func Start(t testing.TB, opts Options) *Server {
	t.Helper()
	dir := t.TempDir()
	_, hostPriv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	hostSigner, err := gossh.NewSignerFromKey(hostPriv)
	if err != nil {
		t.Fatal(err)
	}
	clientPub, clientPriv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	block, err := gossh.MarshalPrivateKey(clientPriv, "")
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{HostKey: hostSigner.PublicKey(), ClientKey: filepath.Join(dir, "id_ed25519"), KnownHosts: filepath.Join(dir, "known_hosts"), umask: opts.Umask}
	if err := os.WriteFile(s.ClientKey, pem.EncodeToMemory(block), 0o600); err != nil {
		t.Fatal(err)
	}
	allowed, err := gossh.NewPublicKey(clientPub)
	if err != nil {
		t.Fatal(err)
	}

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s.Addr = ln.Addr().String()
	if err := os.WriteFile(s.KnownHosts, []byte(knownhosts.Line([]string{knownhosts.Normalize(s.Addr)}, s.HostKey)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}

	s.open = map[*gossh.ServerConn]int{}
	srv := &glssh.Server{
		ChannelHandlers: map[string]glssh.ChannelHandler{"session": s.session},
		Handler:         s.handle,
		PublicKeyHandler: func(_ glssh.Context, key glssh.PublicKey) bool {
			return glssh.KeysEqual(key, allowed)
		},
		SubsystemHandlers: map[string]glssh.SubsystemHandler{},
		ConnCallback: func(_ glssh.Context, c net.Conn) net.Conn {
			s.mu.Lock()
			s.connections++
			s.mu.Unlock()
			return c
		},
	}
	if !opts.NoSFTP {
		srv.SubsystemHandlers["sftp"] = s.sftp
		for _, p := range SFTPServerPaths {
			if _, err := os.Stat(p); err == nil {
				s.RealSFTP = true
				break
			}
		}
	}
	srv.AddHostKey(hostSigner)
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return s
}

// Config is a client configuration for this server.
func (s *Server) Config() reach.Config {
	host, port, _ := net.SplitHostPort(s.Addr)
	p, _ := strconv.Atoi(port)
	u, _ := user.Current()
	return reach.Config{
		Alias: "sshtest", HostName: host, Port: p, User: u.Username,
		IdentityFiles: []string{s.ClientKey}, IdentityAgent: "none",
		KnownHostsFiles: []string{s.KnownHosts},
	}
}

// SetMaxSessions makes the server refuse session channels beyond n open
// at once on one connection, as OpenSSH's MaxSessions does (0: no limit).
func (s *Server) SetMaxSessions(n int) {
	s.mu.Lock()
	s.maxSessions = n
	s.mu.Unlock()
}

// MostSessionsOpen is the most session channels ever open at once on one
// connection.
func (s *Server) MostSessionsOpen() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.mostOpen
}

// session admits a session channel within the limit, then serves it.
func (s *Server) session(srv *glssh.Server, conn *gossh.ServerConn, ch gossh.NewChannel, ctx glssh.Context) {
	s.mu.Lock()
	if s.maxSessions > 0 && s.open[conn] >= s.maxSessions {
		s.mu.Unlock()
		ch.Reject(gossh.ConnectionFailed, "open failed")
		return
	}
	if s.closeEarly > 0 {
		// Accepted, then closed before any request is answered, as
		// dropbear sometimes does.
		s.closeEarly--
		s.mu.Unlock()
		if c, reqs, err := ch.Accept(); err == nil {
			// Closed first, and no request answered (not even with a
			// refusal): the client sees EOF.
			c.Close()
			go func() {
				for range reqs {
				}
			}()
		}
		return
	}
	s.open[conn]++
	s.mostOpen = max(s.mostOpen, s.open[conn])
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		if s.open[conn]--; s.open[conn] == 0 {
			delete(s.open, conn)
		}
		s.mu.Unlock()
	}()
	glssh.DefaultSessionHandler(srv, conn, ch, ctx)
}

// CloseEarly makes the server close the next n session channels as soon
// as it has accepted them, before their command starts.
func (s *Server) CloseEarly(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closeEarly = n
}

// Sessions is how many session channels the server has accepted.
func (s *Server) Sessions() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sessions
}

// Connections is how many TCP connections the server has accepted.
func (s *Server) Connections() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.connections
}

func (s *Server) count() {
	s.mu.Lock()
	s.sessions++
	s.mu.Unlock()
}

func (s *Server) handle(sess glssh.Session) {
	s.count()
	script := sess.RawCommand()
	if s.umask != "" {
		script = "umask " + s.umask + "; " + script
	}
	cmd := exec.Command(shell, "-c", script)
	cmd.Stdout, cmd.Stderr = sess, sess.Stderr()
	// Like sshd, the exit status goes as soon as the command has exited
	// and its output is drained, whether or not the client has closed
	// its stdin: the copy into the command's stdin is not waited for
	// (it ends with the channel).
	stdin, feed, err := os.Pipe()
	if err != nil {
		io.WriteString(sess.Stderr(), err.Error()+"\n")
		sess.Exit(127)
		return
	}
	cmd.Stdin = stdin
	go func() {
		io.Copy(feed, sess)
		feed.Close()
	}()
	newSession(cmd)
	err = cmd.Start()
	stdin.Close()
	if err != nil {
		feed.Close()
		io.WriteString(sess.Stderr(), err.Error()+"\n")
		sess.Exit(127)
		return
	}
	signals := make(chan glssh.Signal, 4)
	sess.Signals(signals)
	done := make(chan struct{})
	go func() {
		for {
			select {
			case sig := <-signals:
				signalGroup(cmd.Process, sig)
			case <-sess.Context().Done():
				// Like sshd without a pty: closing the channel does not
				// kill the command.
				return
			case <-done:
				return
			}
		}
	}()
	err = cmd.Wait()
	close(done)
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = exitCode(ee)
	}
	sess.Exit(code)
}

func (s *Server) sftp(sess glssh.Session) {
	s.count()
	for _, p := range SFTPServerPaths {
		if _, err := os.Stat(p); err == nil {
			cmd := exec.Command(p, "-e")
			cmd.Stdin, cmd.Stdout = sess, sess
			cmd.Run()
			return
		}
	}
	server, err := sftp.NewServer(sess)
	if err != nil {
		return
	}
	server.Serve()
	server.Close()
}
