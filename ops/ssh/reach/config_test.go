package reach

import (
	"crypto/ed25519"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	gossh "golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"
)

func writeConfig(t *testing.T, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "config")
	require.NoError(t, os.WriteFile(p, []byte(content), 0o600))
	return p
}

func TestResolveSpec(t *testing.T) {
	for _, tc := range []struct {
		spec       string
		user, host string
		port       int
	}{
		{"devbox", "", "devbox", 22},
		{"alice@devbox", "alice", "devbox", 22},
		{"alice@devbox:2222", "alice", "devbox", 2222},
		{"10.0.0.5:2200", "", "10.0.0.5", 2200},
		{"[::1]:2222", "", "::1", 2222},
		{"bob@[fe80::1]", "bob", "fe80::1", 22},
		{"::1", "", "::1", 22},
	} {
		c, err := Resolve(tc.spec, Options{SSHConfigFile: "none"})
		require.NoError(t, err, tc.spec)
		assert.Equal(t, tc.host, c.HostName, tc.spec)
		assert.Equal(t, tc.port, c.Port, tc.spec)
		if tc.user != "" {
			assert.Equal(t, tc.user, c.User, tc.spec)
		} else {
			assert.Equal(t, localUser(), c.User, tc.spec)
		}
	}
	for _, bad := range []string{"", "user@", "host:0", "host:99999", "host:x", "[::1"} {
		_, err := Resolve(bad, Options{SSHConfigFile: "none"})
		assert.Error(t, err, "%q", bad)
	}
}

func TestResolveSSHConfig(t *testing.T) {
	inc := writeConfig(t, `
Host *.corp
  User corpuser
  IdentityFile ~/.ssh/corp_%h_%r
  ServerAliveInterval 7
  ServerAliveCountMax 2
`)
	cfg := writeConfig(t, `Include `+inc+`

Host devbox
  HostName 10.1.2.3
  Port 2201
  User dev
  IdentityFile /keys/dev
  IdentityFile /keys/dev2
  IdentitiesOnly yes
  UserKnownHostsFile /kh/one /kh/two
  StrictHostKeyChecking accept-new
  ConnectTimeout 4
  ProxyJump hop2

Host hop1
  HostName 192.0.2.1

Host hop2
  HostName 192.0.2.2
  Port 2022
  ProxyJump alice@hop1

Host chained
  HostName 192.0.2.9
  ProxyJump hop1,bob@hop2:2023
`)
	c, err := Resolve("devbox", Options{SSHConfigFile: cfg})
	require.NoError(t, err)
	assert.Equal(t, "devbox", c.Alias)
	assert.Equal(t, "10.1.2.3", c.HostName)
	assert.Equal(t, 2201, c.Port)
	assert.Equal(t, "dev", c.User)
	assert.Equal(t, []string{"/keys/dev", "/keys/dev2"}, c.IdentityFiles, "no default identities once one is named")
	assert.True(t, c.IdentitiesOnly)
	assert.Equal(t, []string{"/kh/one", "/kh/two"}, c.KnownHostsFiles)
	assert.True(t, c.AcceptNewHostKey)
	assert.Equal(t, 4*time.Second, c.ConnectTimeout)
	// hop2's own ProxyJump comes first: devbox -> hop1 -> hop2.
	require.Len(t, c.Jump, 2)
	assert.Equal(t, "192.0.2.1", c.Jump[0].HostName)
	assert.Equal(t, "alice", c.Jump[0].User)
	assert.Equal(t, "192.0.2.2", c.Jump[1].HostName)
	assert.Equal(t, 2022, c.Jump[1].Port)

	c, err = Resolve("chained", Options{SSHConfigFile: cfg})
	require.NoError(t, err)
	require.Len(t, c.Jump, 3, "hop1, then hop2 which itself goes through hop1")
	assert.Equal(t, "bob", c.Jump[2].User)
	assert.Equal(t, 2023, c.Jump[2].Port, "port in the jump spec overrides ssh_config")

	// Flags override the file.
	c, err = Resolve("carol@devbox:2300", Options{SSHConfigFile: cfg, Identities: []string{"/flag/key"}, KnownHostsFile: "/flag/kh", Jump: "none"})
	require.NoError(t, err)
	assert.Equal(t, "carol", c.User)
	assert.Equal(t, 2300, c.Port)
	assert.Equal(t, []string{"/flag/key", "/keys/dev", "/keys/dev2"}, c.IdentityFiles)
	assert.Equal(t, []string{"/flag/kh"}, c.KnownHostsFiles)
	assert.Empty(t, c.Jump)

	// Included patterns and tokens.
	c, err = Resolve("build.corp", Options{SSHConfigFile: cfg})
	require.NoError(t, err)
	assert.Equal(t, "corpuser", c.User)
	assert.Equal(t, []string{filepath.Join(homeDir(), ".ssh", "corp_build.corp_corpuser")}, c.IdentityFiles)
	assert.Equal(t, 7*time.Second, c.KeepaliveInterval)
	assert.Equal(t, 2, c.KeepaliveCount)

	// Unknown host: defaults.
	c, err = Resolve("elsewhere", Options{SSHConfigFile: cfg})
	require.NoError(t, err)
	assert.Equal(t, 22, c.Port)
	assert.Equal(t, DefaultKeepaliveInterval, c.KeepaliveInterval)
	assert.Contains(t, c.IdentityFiles, filepath.Join(homeDir(), ".ssh", "id_ed25519"))
}

// The file is parsed once for every host resolved against it, and again
// once it changes.
func TestResolveSeesAChangedConfig(t *testing.T) {
	p := writeConfig(t, "Host box\n  HostName 127.0.0.2\n")
	for range 2 {
		c, err := Resolve("box", Options{SSHConfigFile: p})
		require.NoError(t, err)
		assert.Equal(t, "127.0.0.2", c.HostName)
	}
	require.NoError(t, os.WriteFile(p, []byte("Host box\n  HostName 127.0.0.33\n"), 0o600))
	c, err := Resolve("box", Options{SSHConfigFile: p})
	require.NoError(t, err)
	assert.Equal(t, "127.0.0.33", c.HostName)
}

func TestResolveConfigErrors(t *testing.T) {
	_, err := Resolve("x", Options{SSHConfigFile: filepath.Join(t.TempDir(), "missing")})
	assert.ErrorContains(t, err, "ssh config")

	loop := writeConfig(t, "Host a\n  ProxyJump b\nHost b\n  ProxyJump a\n")
	_, err = Resolve("a", Options{SSHConfigFile: loop})
	assert.ErrorContains(t, err, "deeper than")

	badPort := writeConfig(t, "Host a\n  Port many\n")
	_, err = Resolve("a", Options{SSHConfigFile: badPort})
	assert.ErrorContains(t, err, "bad Port")
}

// A file the in-process parser rejects (Match exec) is resolved by OpenSSH.
func TestResolveWithSSHG(t *testing.T) {
	if _, err := exec.LookPath("ssh"); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("ssh client missing in CI")
		}
		t.Skip("no ssh client")
	}
	cfg := writeConfig(t, `Match exec "true"
  User matched
Host ex
  HostName 192.0.2.7
  Port 2022
  IdentityFile /keys/ex
  ProxyJump jumper
Host jumper
  HostName 192.0.2.8
`)
	c, err := Resolve("ex", Options{SSHConfigFile: cfg})
	require.NoError(t, err)
	assert.Equal(t, "192.0.2.7", c.HostName)
	assert.Equal(t, 2022, c.Port)
	assert.Equal(t, "matched", c.User)
	assert.Contains(t, c.IdentityFiles, "/keys/ex")
	require.Len(t, c.Jump, 1)
	assert.Equal(t, "192.0.2.8", c.Jump[0].HostName)
	assert.Equal(t, "matched", c.Jump[0].User)
}

// known_hosts is parsed once for every host dialled against it, and again
// once a key is added to it.
func TestKnownHostsParsedAgainWhenChanged(t *testing.T) {
	file := filepath.Join(t.TempDir(), "known_hosts")
	line := func(addr string) string {
		_, priv, err := ed25519.GenerateKey(nil)
		require.NoError(t, err)
		signer, err := gossh.NewSignerFromKey(priv)
		require.NoError(t, err)
		return knownhosts.Line([]string{addr}, signer.PublicKey()) + "\n"
	}
	require.NoError(t, os.WriteFile(file, []byte(line("127.0.0.2:2222")), 0o600))
	cfg := &Config{KnownHostsFiles: []string{file}}
	for range 2 {
		h, err := loadHostKeys(cfg)
		require.NoError(t, err)
		assert.Equal(t, []string{gossh.KeyAlgoED25519}, h.algorithms("127.0.0.2:2222"))
		assert.Empty(t, h.algorithms("127.0.0.3:2222"))
	}
	f, err := os.OpenFile(file, os.O_APPEND|os.O_WRONLY, 0)
	require.NoError(t, err)
	_, err = f.WriteString(line("127.0.0.3:2222"))
	require.NoError(t, err)
	require.NoError(t, f.Close())
	h, err := loadHostKeys(cfg)
	require.NoError(t, err)
	assert.Equal(t, []string{gossh.KeyAlgoED25519}, h.algorithms("127.0.0.3:2222"), "the added key is known")
}
