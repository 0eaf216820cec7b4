//go:build linux

// Linux only: mount namespaces, overlayfs and device nodes.

package sshd

import (
	"crypto/ed25519"
	"crypto/rand"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"
)

// DropbearOptions shape one dropbear server.
type DropbearOptions struct {
	// User logs in (its ~/.ssh/authorized_keys gets the client key, as
	// dropbear reads no other file); it must exist.
	User string
	// SFTP makes dropbear's sftp-server (/usr/lib/sftp-server) OpenSSH's;
	// without it the path does not exist, dropbear's default.
	SFTP bool
	// Wrap runs dropbear through these arguments ("$SSHD" is replaced by
	// its command), e.g. taskset to pin it to one CPU.
	Wrap []string
}

// StartDropbear runs a dropbear server (package dropbear-bin) until the
// test ends. It runs as root in a mount namespace of its own where
// /usr/lib is an overlay, so that the SFTP server is there or not without
// touching the machine.
func StartDropbear(t testing.TB, opts DropbearOptions) *Server {
	t.Helper()
	RequireRoot(t, "dropbear logs users in only as root, and the SFTP choice needs a mount namespace")
	daemon, err := exec.LookPath("dropbear")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("dropbear is not installed (apt-get install dropbear-bin); CI must run the dropbear tests")
		}
		t.Skip("dropbear is not installed; install dropbear-bin to run the dropbear tests")
	}
	u, err := user.Lookup(opts.User)
	if err != nil {
		t.Fatal(err)
	}
	dir, err := os.MkdirTemp("", "pi-remote-dropbear-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	s := &Server{Dir: dir, User: opts.User, log: &lockedBuffer{}, ready: "Not backgrounding"}

	hostKey := filepath.Join(dir, "host_ed25519")
	if out, err := exec.Command("dropbearkey", "-t", "ed25519", "-f", hostKey).CombinedOutput(); err != nil {
		t.Fatalf("dropbearkey: %v\n%s", err, out)
	}
	out, err := exec.Command("dropbearkey", "-y", "-f", hostKey).Output()
	if err != nil {
		t.Fatalf("dropbearkey -y: %v", err)
	}
	var hostPub ssh.PublicKey
	for line := range strings.Lines(string(out)) {
		if strings.HasPrefix(line, "ssh-ed25519 ") {
			hostPub, _, _, _, err = ssh.ParseAuthorizedKey([]byte(line))
			if err != nil {
				t.Fatal(err)
			}
		}
	}
	if hostPub == nil {
		t.Fatalf("no public key in dropbearkey's output:\n%s", out)
	}
	s.HostKeys = []ssh.PublicKey{hostPub}

	_, clientPriv, _ := ed25519.GenerateKey(rand.Reader)
	s.ClientKey = filepath.Join(dir, "client_ed25519")
	writeKey(t, s.ClientKey, clientPriv)
	signer, err := ssh.NewSignerFromKey(clientPriv)
	if err != nil {
		t.Fatal(err)
	}
	authorizeKey(t, u, signer.PublicKey())

	s.KnownHosts = filepath.Join(dir, "known_hosts")
	// The overlay's upper layer holds the SFTP server's link, or a
	// whiteout that hides any the machine has.
	upper, work := filepath.Join(dir, "upper"), filepath.Join(dir, "work")
	for _, d := range []string{upper, work} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if opts.SFTP {
		err = os.Symlink(firstExisting(sftpPaths, "/nonexistent/sftp-server"), filepath.Join(upper, "sftp-server"))
	} else {
		err = syscall.Mknod(filepath.Join(upper, "sftp-server"), syscall.S_IFCHR, 0)
	}
	if err != nil {
		t.Fatal(err)
	}
	s.run(t, "dropbear", func() {
		if err := os.WriteFile(s.KnownHosts, []byte(knownhosts.Line([]string{knownhosts.Normalize(s.Addr)}, hostPub)+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		// -s: no passwords; -R would write keys to /etc, -r names ours.
		daemonArgs := wrap(opts.Wrap, []string{daemon, "-F", "-E", "-s", "-p", s.Addr, "-r", hostKey, "-P", filepath.Join(dir, "dropbear.pid")})
		mount := "mount -t overlay overlay -o lowerdir=/usr/lib,upperdir=" + upper + ",workdir=" + work + " /usr/lib"
		s.args = []string{"unshare", "-m", "--propagation", "private", "sh", "-c", mount + ` && exec "$@"`, "sh"}
		s.args = append(s.args, daemonArgs...)
	})
	return s
}

// authMu serializes additions to a user's authorized_keys.
var authMu sync.Mutex

// authorizeKey adds key to u's ~/.ssh/authorized_keys, creating it with
// the ownership and modes dropbear insists on.
func authorizeKey(t testing.TB, u *user.User, key ssh.PublicKey) {
	t.Helper()
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	dotSSH := filepath.Join(u.HomeDir, ".ssh")
	if err := os.MkdirAll(dotSSH, 0o700); err != nil {
		t.Fatal(err)
	}
	name := filepath.Join(dotSSH, "authorized_keys")
	authMu.Lock()
	defer authMu.Unlock()
	f, err := os.OpenFile(name, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	_, err = f.Write(ssh.MarshalAuthorizedKey(key))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{u.HomeDir, dotSSH, name} {
		if err := os.Chown(p, uid, gid); err != nil {
			t.Fatal(err)
		}
	}
}
