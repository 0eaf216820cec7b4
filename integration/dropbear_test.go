//go:build linux

package integration

import (
	"fmt"
	"os"
	"os/exec"
	"path"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pi-remote/pi-remote/integration/sshd"
	"github.com/pi-remote/pi-remote/internal/tier"
)

// dropbear (routers, small VMs, some container images), with OpenSSH's
// sftp-server and without one (dropbear's default): the whole contract and
// every tool. With sftp-server in the soak tier only: SFTP is OpenSSH's
// sftp-server there, which TestOpsConformance and TestTools run behind
// sshd; dropbear's own ways are all in the cell without it.
func TestDropbear(t *testing.T) {
	t.Parallel()
	home := ensureUser(t, "pi-dropbear", "/bin/sh")
	for _, sftp := range []bool{true, false} {
		name := map[bool]string{true: "with sftp-server", false: "without sftp-server"}[sftp]
		t.Run(name, func(t *testing.T) {
			if sftp {
				tier.Soak(t)
			}
			t.Parallel()
			runSuitesAs(t, sshd.StartDropbear(t, sshd.DropbearOptions{User: "pi-dropbear", SFTP: sftp}), home)
		})
	}
}

// Fresh one-shot CLI calls (60; 300 in the soak tier) against dropbear without an SFTP server, with
// dropbear pinned to one CPU: none may fail (a channel dropbear closes
// before the command starts is opened again), and no error may be a bare
// "EOF".
func TestDropbearOneShotCalls(t *testing.T) {
	t.Parallel()
	home := ensureUser(t, "pi-dropbear", "/bin/sh")
	if _, err := exec.LookPath("taskset"); err != nil {
		t.Fatal("taskset (util-linux) is needed to pin dropbear to one CPU")
	}
	srv := sshd.StartDropbear(t, sshd.DropbearOptions{User: "pi-dropbear", Wrap: []string{"taskset", "-c", "0", "sh", "-c", "exec $SSHD"}})
	dir := path.Join(home, fmt.Sprintf("pi-oneshot-%d", time.Now().UnixNano()))
	require.NoError(t, os.MkdirAll(dir, 0o755))
	require.NoError(t, os.WriteFile(path.Join(dir, "hello.txt"), []byte("hello\n"), 0o644))
	require.NoError(t, exec.Command("chown", "-R", "pi-dropbear", dir).Run())
	t.Cleanup(func() { os.RemoveAll(dir) })

	calls := tier.Rounds(30, 60, 300)
	failures := 0
	for i := range calls {
		// Alternate the tools: reads, writes and commands each open the
		// connection their own way.
		var args []string
		switch i % 3 {
		case 0:
			args = []string{"tool", "read", `{"path":"hello.txt"}`}
		case 1:
			args = []string{"tool", "bash", `{"command":"echo ok"}`}
		default:
			args = []string{"tool", "write", fmt.Sprintf(`{"path":"w%d.txt","content":"x"}`, i%10)}
		}
		code, out, errOut := cli(t, "", append(append(srv.Flags(), "--cwd", dir), args...)...)
		if code != 0 || strings.TrimSpace(out) == "" {
			failures++
			t.Errorf("call %d (%s) exit %d: %s%s", i, args[1], code, out, errOut)
		}
		assert.NotRegexp(t, `(?m)(^|: )EOF$`, errOut, "call %d: a bare EOF", i)
		if failures > 5 {
			t.Fatal("too many failures")
		}
	}
	assert.Zero(t, failures, "of %d calls", calls)
}
