package ssh_test

import (
	"context"
	"crypto"
	"encoding/pem"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/agent"

	"github.com/pi-remote/pi-remote/ops"
	rssh "github.com/pi-remote/pi-remote/ops/ssh"
	"github.com/pi-remote/pi-remote/ops/ssh/reach"
	"github.com/pi-remote/pi-remote/ops/ssh/sshtest"
)

// Concurrent first calls share one dial.
func TestConcurrentCallersShareOneDial(t *testing.T) {
	srv := sshtest.Start(t, sshtest.Options{})
	h := rssh.New(srv.Config(), rssh.HostOptions{})
	t.Cleanup(func() { h.Close() })
	var wg sync.WaitGroup
	for range 20 {
		wg.Go(func() { assert.NoError(t, h.Exec(t.Context(), ops.Command{Script: "true"})) })
	}
	wg.Wait()
	assert.Equal(t, 1, srv.Connections())
}

// After a failed dial, calls within the backoff get the same error without
// dialing again; after it, the next call dials.
func TestRedialBackoff(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	var accepted atomic.Int64
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted.Add(1)
			c.Close() // not an SSH server: the handshake fails
		}
	}()
	cfg, err := reach.Resolve(ln.Addr().String(), reach.Options{SSHConfigFile: "none", KnownHostsFile: filepath.Join(t.TempDir(), "kh")})
	require.NoError(t, err)
	h := rssh.New(cfg, rssh.HostOptions{})
	t.Cleanup(func() { h.Close() })

	err1 := h.Exec(t.Context(), ops.Command{Script: "true"})
	var ce *reach.ConnectError
	require.True(t, errors.As(err1, &ce), "%v", err1)
	err2 := h.Exec(t.Context(), ops.Command{Script: "true"})
	assert.Equal(t, err1, err2, "within the backoff: the last error, no new dial")
	assert.Equal(t, int64(1), accepted.Load())

	time.Sleep(400 * time.Millisecond) // first backoff is 250 ms ± 20%
	require.Error(t, h.Exec(t.Context(), ops.Command{Script: "true"}))
	assert.Equal(t, int64(2), accepted.Load(), "dialed again after the backoff")
}

// A key file with a passphrase is used through the agent that holds it;
// without the agent the error says what to do.
func TestAgentHoldsEncryptedKey(t *testing.T) {
	srv := sshtest.Start(t, sshtest.Options{})
	raw, err := os.ReadFile(srv.ClientKey)
	require.NoError(t, err)
	key, err := ssh.ParseRawPrivateKey(raw)
	require.NoError(t, err)
	block, err := ssh.MarshalPrivateKeyWithPassphrase(key.(crypto.PrivateKey), "", []byte("secret"))
	require.NoError(t, err)
	dir := t.TempDir()
	locked := filepath.Join(dir, "id_locked")
	require.NoError(t, os.WriteFile(locked, pem.EncodeToMemory(block), 0o600))

	keyring := agent.NewKeyring()
	require.NoError(t, keyring.Add(agent.AddedKey{PrivateKey: key}))
	sock := filepath.Join(dir, "agent.sock")
	ln, err := net.Listen("unix", sock)
	require.NoError(t, err)
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				agent.ServeAgent(keyring, c)
			}()
		}
	}()

	cfg := srv.Config()
	cfg.IdentityFiles, cfg.IdentitiesOnly, cfg.IdentityAgent = []string{locked}, true, sock
	withAgent := rssh.New(cfg, rssh.HostOptions{})
	t.Cleanup(func() { withAgent.Close() })
	info, err := withAgent.Connect(context.Background())
	require.NoError(t, err)
	assert.Contains(t, info.Auth, "ssh-agent")
	assert.NotContains(t, info.Auth, "skipped")

	cfg.IdentityAgent = "none"
	_, err = rssh.New(cfg, rssh.HostOptions{}).Connect(context.Background())
	var ae *reach.AuthError
	require.True(t, errors.As(err, &ae), "%v", err)
	assert.Contains(t, err.Error(), "needs a passphrase and no ssh-agent holds it (run: ssh-add "+locked+")")
}

// A refused channel lowers the pool to what the host accepted; once the
// host accepts more again, the pool grows back (it never did).
func TestSessionLimitRecovers(t *testing.T) {
	srv := sshtest.Start(t, sshtest.Options{})
	srv.SetMaxSessions(1)
	h := rssh.New(srv.Config(), rssh.HostOptions{SessionRetry: 50 * time.Millisecond})
	t.Cleanup(func() { h.Close() })
	batch := func() {
		var wg sync.WaitGroup
		for range 4 {
			wg.Go(func() { assert.NoError(t, h.Exec(t.Context(), ops.Command{Script: "sleep 0.3"})) })
		}
		wg.Wait()
	}
	batch()
	require.Equal(t, 1, srv.MostSessionsOpen(), "the host's limit held")
	srv.SetMaxSessions(0)
	require.Eventually(t, func() bool {
		batch()
		return srv.MostSessionsOpen() >= 3
	}, 20*time.Second, 10*time.Millisecond, "the pool grew back to run the batch in parallel")
}

// Concurrent first calls that need the host's probe, some of them given
// up at once: the probe is asked again after a failure without racing
// the callers still waiting for it (go test -race).
func TestProbeSharedAndRetried(t *testing.T) {
	srv := sshtest.Start(t, sshtest.Options{})
	h := rssh.New(srv.Config(), rssh.HostOptions{})
	t.Cleanup(func() { h.Close() })
	dir := t.TempDir()
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Go(func() {
			ctx := t.Context()
			if i%2 == 0 {
				// Given up at various points of the dial and the probe.
				c, cancel := context.WithTimeout(ctx, time.Duration(i)*time.Millisecond)
				defer cancel()
				ctx = c
			}
			_, err := h.ReadDir(ctx, dir)
			if i%2 == 1 {
				assert.NoError(t, err)
			}
		})
	}
	wg.Wait()
	_, err := h.ReadDir(t.Context(), dir)
	require.NoError(t, err)
}

// A session channel the host closes before the command starts (dropbear
// does that now and then) is opened again; when the host keeps doing it,
// the error says what happened, never a bare "EOF".
func TestChannelClosedBeforeStart(t *testing.T) {
	srv := sshtest.Start(t, sshtest.Options{NoSFTP: true})
	h := rssh.New(srv.Config(), rssh.HostOptions{})
	t.Cleanup(func() { h.Close() })
	srv.CloseEarly(2)
	var out strings.Builder
	require.NoError(t, h.Exec(t.Context(), ops.Command{Script: "echo ran", Output: &out}))
	assert.Equal(t, "ran\n", out.String())

	other := rssh.New(srv.Config(), rssh.HostOptions{})
	t.Cleanup(func() { other.Close() })
	srv.CloseEarly(1000)
	err := other.Exec(t.Context(), ops.Command{Script: "echo ran"})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "closed a new session channel before the command started")
	assert.NotEqual(t, "EOF", err.Error())
	srv.CloseEarly(0)
	require.NoError(t, other.Exec(t.Context(), ops.Command{Script: "true"}), "the connection is still good")
}
