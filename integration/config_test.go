package integration

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pi-remote/pi-remote/integration/netfault"
	"github.com/pi-remote/pi-remote/integration/sshd"
)

// An ssh_config alias with HostName, Port, User, IdentityFile,
// UserKnownHostsFile and a ProxyJump chain through Include, and the same
// with --jump: traffic goes through the jump host.
func TestSSHConfigAndProxyJump(t *testing.T) {
	t.Parallel()
	jump := sshd.Start(t, sshd.Options{})
	target := sshd.Start(t, sshd.Options{})
	// The jump host is reached through a proxy that counts connections, so
	// the test can see that the chain was used.
	p := netfault.Start(t, jump.Addr)
	dir := t.TempDir()
	kh := filepath.Join(dir, "known_hosts")
	khLines := readFile(t, jump.KnownHosts) + readFile(t, target.KnownHosts) +
		strings.Replace(readFile(t, jump.KnownHosts), jump.Addr[len("127.0.0.1:"):], p.Addr[len("127.0.0.1:"):], 1)
	require.NoError(t, os.WriteFile(kh, []byte(khLines), 0o600))

	included := filepath.Join(dir, "hosts.conf")
	require.NoError(t, os.WriteFile(included, []byte(fmt.Sprintf(`
Host bastion
  HostName 127.0.0.1
  Port %d
  User %s
  IdentityFile %s

Host devbox
  HostName 127.0.0.1
  Port %d
  User %s
  IdentityFile %s
  ProxyJump bastion

Host direct
  HostName 127.0.0.1
  Port %d
  User %s
  IdentityFile %s

Host *
  UserKnownHostsFile %s
`, portOf(p.Addr), jump.User, jump.ClientKey, target.Port, target.User, target.ClientKey, target.Port, target.User, target.ClientKey, kh)), 0o600))
	cfg := filepath.Join(dir, "config")
	require.NoError(t, os.WriteFile(cfg, []byte("Include "+included+"\n"), 0o600))

	code, out, stderr := cli(t, "", "--ssh-config", cfg, "--host", "devbox", "check", "--json")
	require.Equal(t, 0, code, stderr)
	var report map[string]any
	require.NoError(t, json.Unmarshal([]byte(out), &report))
	assert.Contains(t, report["host"], fmt.Sprintf("devbox (%s@127.0.0.1:%d)", target.User, target.Port))
	assert.Len(t, report["via"], 1)
	assert.Equal(t, int64(1), p.Accepted(), "went through the jump host")
	assert.Equal(t, true, report["sftp"])

	code, out, stderr = cli(t, "", "--ssh-config", cfg, "--host", "direct", "--jump", "bastion", "tool", "bash", `{"command":"echo via jump"}`)
	require.Equal(t, 0, code, stderr)
	assert.Equal(t, "via jump\n", out)
	assert.Equal(t, int64(2), p.Accepted(), "--jump went through the jump host")

	code, out, stderr = cli(t, "", "--ssh-config", cfg, "--host", "direct", "check")
	require.Equal(t, 0, code, stderr)
	assert.Equal(t, int64(2), p.Accepted(), "no jump configured for direct")
	for _, want := range []string{"host key:  known", "auth:", "sftp:      available", "rg:", "fd:", "rtt:"} {
		assert.Contains(t, out, want)
	}
}

func TestCLIOverSSH(t *testing.T) {
	t.Parallel()
	srv := sshd.Start(t, sshd.Options{})
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "hello.txt"), []byte("hi there\n"), 0o644))
	flags := append(srv.Flags(), "--cwd", dir)

	code, out, stderr := cli(t, "", append(flags, "tool", "read", `{"path":"hello.txt"}`)...)
	require.Equal(t, 0, code, stderr)
	assert.Equal(t, "hi there\n", out)

	code, out, _ = cli(t, "", append(flags, "tool", "read", `{"path":"missing.txt"}`)...)
	assert.Equal(t, 1, code, "a tool error is exit 1")
	assert.Contains(t, out, "not found")

	code, _, stderr = cli(t, "", append(srv.Flags(), "--cwd", "/no/such/dir", "tool", "ls")...)
	assert.Equal(t, 2, code)
	assert.Contains(t, stderr, "--cwd /no/such/dir")

	// Without --cwd the remote home is the working directory.
	code, out, stderr = cli(t, "", append(srv.Flags(), "tool", "bash", `{"command":"pwd"}`)...)
	require.Equal(t, 0, code, stderr)
	home, _ := os.UserHomeDir()
	assert.Equal(t, home+"\n", out)

	// Nothing listens: exit 3 with the reason.
	code, _, stderr = cli(t, "", "--host", "127.0.0.1:1", "--ssh-config", "none", "--known-hosts", srv.KnownHosts, "tool", "ls")
	assert.Equal(t, 3, code)
	assert.Contains(t, stderr, "connection refused")

	code, _, stderr = cli(t, "", "--host", "user@", "tool", "ls")
	assert.Equal(t, 2, code, stderr)
}

func portOf(addr string) int {
	var p int
	fmt.Sscanf(addr[strings.LastIndex(addr, ":")+1:], "%d", &p)
	return p
}
