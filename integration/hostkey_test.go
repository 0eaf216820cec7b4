package integration

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"

	"github.com/pi-remote/pi-remote/integration/sshd"
	rssh "github.com/pi-remote/pi-remote/ops/ssh"
	"github.com/pi-remote/pi-remote/ops/ssh/reach"
)

func TestHostKeys(t *testing.T) {
	t.Parallel()
	srv := sshd.Start(t, sshd.Options{})
	dir := t.TempDir()

	t.Run("unknown host refused by default", func(t *testing.T) {
		kh := filepath.Join(dir, "empty_known_hosts")
		cfg := srv.Config()
		cfg.KnownHostsFiles = []string{kh}
		_, err := rssh.New(cfg, rssh.HostOptions{}).Connect(context.Background())
		var hke *reach.HostKeyError
		require.True(t, errors.As(err, &hke), "%v", err)
		assert.Empty(t, hke.Known)
		assert.Contains(t, err.Error(), "--accept-new-host-key")
		assert.NoFileExists(t, kh, "nothing recorded")

		code, _, stderr := cli(t, "", "--host", srv.User+"@"+srv.Addr, "--identity", srv.ClientKey, "--known-hosts", kh, "--ssh-config", "none", "tool", "ls")
		assert.Equal(t, 3, code)
		assert.Contains(t, stderr, "is unknown")
	})

	t.Run("accepted with the flag, then known", func(t *testing.T) {
		kh := filepath.Join(dir, "sub", "known_hosts")
		code, _, stderr := cli(t, "", "--host", srv.User+"@"+srv.Addr, "--identity", srv.ClientKey, "--known-hosts", kh, "--ssh-config", "none", "--accept-new-host-key", "tool", "bash", `{"command":"echo ok"}`)
		require.Equal(t, 0, code, stderr)
		b, err := os.ReadFile(kh)
		require.NoError(t, err)
		assert.Contains(t, string(b), knownhosts.Normalize(srv.Addr))
		fi, err := os.Stat(kh)
		require.NoError(t, err)
		assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm())

		code, out, stderr := cli(t, "", "--host", srv.User+"@"+srv.Addr, "--identity", srv.ClientKey, "--known-hosts", kh, "--ssh-config", "none", "tool", "bash", `{"command":"echo again"}`)
		require.Equal(t, 0, code, stderr)
		assert.Equal(t, "again\n", out)
	})

	t.Run("changed key refused even with the flag", func(t *testing.T) {
		pub, _, err := ed25519.GenerateKey(rand.Reader)
		require.NoError(t, err)
		other, err := ssh.NewPublicKey(pub)
		require.NoError(t, err)
		kh := filepath.Join(dir, "stale_known_hosts")
		require.NoError(t, os.WriteFile(kh, []byte(knownhosts.Line([]string{knownhosts.Normalize(srv.Addr)}, other)+"\n"), 0o600))
		cfg := srv.Config()
		cfg.KnownHostsFiles, cfg.AcceptNewHostKey = []string{kh}, true
		_, err = rssh.New(cfg, rssh.HostOptions{}).Connect(context.Background())
		var hke *reach.HostKeyError
		require.True(t, errors.As(err, &hke), "%v", err)
		msg := err.Error()
		assert.Contains(t, msg, "HAS CHANGED")
		assert.Contains(t, msg, ssh.FingerprintSHA256(other), "the known fingerprint")
		assert.Contains(t, msg, ssh.FingerprintSHA256(hke.Offered), "the offered fingerprint")
		b, _ := os.ReadFile(kh)
		assert.Equal(t, 1, strings.Count(string(b), "\n"), "known_hosts untouched")

		code, _, stderr := cli(t, "", "--host", srv.User+"@"+srv.Addr, "--identity", srv.ClientKey, "--known-hosts", kh, "--ssh-config", "none", "--accept-new-host-key", "check")
		assert.Equal(t, 3, code)
		assert.Contains(t, stderr, "HAS CHANGED")
	})

	t.Run("known Ed25519 key found although the server also has ECDSA", func(t *testing.T) {
		// The harness's known_hosts holds only the Ed25519 key, as OpenSSH
		// writes it; x/crypto's default order would ask for ECDSA first.
		info, err := rssh.New(srv.Config(), rssh.HostOptions{}).Connect(context.Background())
		require.NoError(t, err)
		assert.Contains(t, info.HostKey, "ssh-ed25519")
	})
}

func TestAuthFailureIsActionable(t *testing.T) {
	t.Parallel()
	srv := sshd.Start(t, sshd.Options{})
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	require.NoError(t, err)
	block, err := ssh.MarshalPrivateKeyWithPassphrase(priv, "", []byte("secret"))
	require.NoError(t, err)
	wrong := filepath.Join(t.TempDir(), "id_locked")
	require.NoError(t, os.WriteFile(wrong, pemEncode(block), 0o600))

	code, _, stderr := cli(t, "", "--host", srv.User+"@"+srv.Addr, "--identity", wrong, "--known-hosts", srv.KnownHosts, "--ssh-config", "none", "check")
	assert.Equal(t, 3, code)
	assert.Contains(t, stderr, "authentication as")
	assert.Contains(t, stderr, "needs a passphrase and no ssh-agent holds it")
	assert.Contains(t, stderr, "ssh-add "+wrong)
}
