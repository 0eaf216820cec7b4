package integration

import (
	"os"
	"testing"

	"github.com/pi-remote/pi-remote/integration/sshd"
	"github.com/pi-remote/pi-remote/internal/tier"
	"github.com/pi-remote/pi-remote/ops"
	"github.com/pi-remote/pi-remote/ops/opstest"
	rssh "github.com/pi-remote/pi-remote/ops/ssh"
	"github.com/pi-remote/pi-remote/tools/toolstest"
)

// host connects to srv and closes the connection when the test ends.
func host(t *testing.T, srv *sshd.Server, opts rssh.HostOptions) *rssh.Host {
	t.Helper()
	h := rssh.New(srv.Config(), opts)
	t.Cleanup(func() { h.Close() })
	return h
}

// sshd starts with umask 077, which its sessions inherit and new files
// must get (they got 0644 whatever the umask).
func TestOpsConformance(t *testing.T) {
	t.Parallel()
	srv := sshd.Start(t, sshd.Options{Wrap: []string{"sh", "-c", "umask 077 && exec $SSHD"}})
	opstest.Run(t, opstest.Harness{New: func(t *testing.T) (ops.Operations, string) {
		return host(t, srv, rssh.HostOptions{}), t.TempDir()
	}})
}

// The contract on OpenSSH without an SFTP server, as if on a host without
// GNU find and setsid. In the soak tier only: the default tier runs each
// of those alone, on hosts that really lack them, and the three together
// against the host program: OpenSSH without SFTP is TestBusyboxHost's
// "no sftp" cell (and dropbear without sftp-server, TestDropbear's), which
// has BusyBox's find; ops/ssh's TestConformanceWithoutSFTP runs the suite
// with all three switches; and a host without setsid is
// TestPrivateDirectoriesAreRemoved's too.
func TestOpsConformanceWithoutSFTP(t *testing.T) {
	tier.Soak(t)
	t.Parallel()
	srv := sshd.Start(t, sshd.Options{NoSFTP: true})
	opstest.Run(t, opstest.Harness{New: func(t *testing.T) (ops.Operations, string) {
		return host(t, srv, rssh.HostOptions{Testing: &rssh.TestSwitches{NoGNUFind: true, NoSetsid: true}}), t.TempDir()
	}})
}

func TestTools(t *testing.T) {
	t.Parallel()
	srv := sshd.Start(t, sshd.Options{})
	toolstest.Run(t, toolstest.Harness{RequireEngines: os.Getenv("CI") != "", New: func(t *testing.T) ops.Operations {
		return host(t, srv, rssh.HostOptions{})
	}})
}
