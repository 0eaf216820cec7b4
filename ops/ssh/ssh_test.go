package ssh_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pi-remote/pi-remote/internal/tier"
	"github.com/pi-remote/pi-remote/internal/unprivileged"
	"github.com/pi-remote/pi-remote/ops"
	"github.com/pi-remote/pi-remote/ops/opstest"
	rssh "github.com/pi-remote/pi-remote/ops/ssh"
	"github.com/pi-remote/pi-remote/ops/ssh/sshtest"
	"github.com/pi-remote/pi-remote/tools/toolstest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func harness(opts sshtest.Options, hopts rssh.HostOptions) opstest.Harness {
	return opstest.Harness{New: func(t *testing.T) (ops.Operations, string) {
		srv := sshtest.Start(t, opts)
		h := rssh.New(srv.Config(), hopts)
		t.Cleanup(func() { h.Close() })
		return h, t.TempDir()
	}, Drop: func(t *testing.T, o ops.Operations) { rssh.DropForTest(o.(*rssh.Host)) }}
}

// Commands start with umask 077, which new files must get too (they got
// 0644 whatever the umask).
func TestConformance(t *testing.T) {
	t.Parallel()
	opstest.Run(t, harness(sshtest.Options{Umask: "077"}, rssh.HostOptions{}))
}

// A bare POSIX host: no SFTP subsystem, no GNU find, no setsid.
func TestConformanceWithoutSFTP(t *testing.T) {
	tier.Default(t)
	t.Parallel()
	opstest.Run(t, harness(sshtest.Options{NoSFTP: true}, rssh.HostOptions{Testing: &rssh.TestSwitches{NoGNUFind: true, NoSetsid: true}}))
}

// A host with neither GNU find nor stat -c (macOS, some embedded systems):
// directories are listed with an ls per entry.
func TestConformanceWithoutStat(t *testing.T) {
	tier.Default(t)
	t.Parallel()
	opstest.Run(t, harness(sshtest.Options{NoSFTP: true}, rssh.HostOptions{Testing: &rssh.TestSwitches{NoGNUFind: true, NoStatC: true}}))
}

// The suite's permission checks need a user that permission bits stop: the
// in-process server runs commands as the test's own user.
func TestConformanceUnprivileged(t *testing.T) {
	tier.Default(t)
	t.Parallel()
	unprivileged.Rerun(t, "TestConformance")
}

// Every tool's table, over SSH to a server on this machine.
func TestTools(t *testing.T) {
	tier.Default(t)
	t.Parallel()
	toolstest.Run(t, toolstest.Harness{RequireEngines: os.Getenv("CI") != "", New: func(t *testing.T) ops.Operations {
		srv := sshtest.Start(t, sshtest.Options{})
		h := rssh.New(srv.Config(), rssh.HostOptions{})
		t.Cleanup(func() { h.Close() })
		return h
	}})
}

// Output that begins like the server's end marker, split across writes,
// comes through unchanged.
func TestOutputResemblingTheMarker(t *testing.T) {
	srv := sshtest.Start(t, sshtest.Options{})
	h := rssh.New(srv.Config(), rssh.HostOptions{})
	t.Cleanup(func() { h.Close() })
	var out bytes.Buffer
	script := `printf '\036@pi-'; sleep 0.1; printf 'remote:'; sleep 0.1; printf 'x\036\036@pi-remote:'`
	require.NoError(t, h.Exec(t.Context(), ops.Command{Script: script, Output: &out}))
	assert.Equal(t, "\x1e@pi-remote:x\x1e\x1e@pi-remote:", out.String())
}

// Steady-state commands reuse the command servers: no session per call.
func TestCommandsReuseServers(t *testing.T) {
	srv := sshtest.Start(t, sshtest.Options{})
	h := rssh.New(srv.Config(), rssh.HostOptions{})
	t.Cleanup(func() { h.Close() })
	require.NoError(t, h.Exec(t.Context(), ops.Command{Script: "true"}))
	// The pool's warm-up goes on in the background.
	before := srv.Sessions()
	for since := time.Now(); time.Since(since) < time.Second; {
		time.Sleep(50 * time.Millisecond)
		if n := srv.Sessions(); n != before {
			before, since = n, time.Now()
		}
	}
	for range 50 {
		require.NoError(t, h.Exec(t.Context(), ops.Command{Script: "true"}))
		_, err := h.Stat(t.Context(), "/")
		require.NoError(t, err)
	}
	assert.Equal(t, before, srv.Sessions(), "50 sequential commands and stats opened no new session")
}

// Guarded writes work with any one digest tool, and with cmp alone; with
// none of them they fail saying why, and leave nothing behind.
func TestGuardedWriteWithEachDigestTool(t *testing.T) {
	t.Parallel()
	srv := sshtest.Start(t, sshtest.Options{})
	methods := []string{"sha256sum", "shasum", "openssl", "md5sum", "cksum", "cmp", "none"}
	for i, method := range methods {
		t.Run(method, func(t *testing.T) {
			if method != "none" {
				if _, err := exec.LookPath(method); err != nil {
					if os.Getenv("CI") != "" {
						t.Fatalf("%s is not installed; CI installs it", method)
					}
					t.Skipf("%s is not installed here", method)
				}
			}
			// Every tool before this one is hidden.
			h := rssh.New(srv.Config(), rssh.HostOptions{Testing: &rssh.TestSwitches{NoTools: methods[:i]}})
			t.Cleanup(func() { h.Close() })
			for _, large := range []bool{false, true} {
				dir := t.TempDir()
				name := filepath.Join(dir, "f.txt")
				require.NoError(t, os.WriteFile(name, []byte("what I read\n"), 0o644))
				write := func(content, expected string) error {
					// Over 4 KiB the content goes in its own upload.
					if large {
						content = strings.Repeat(content, 1000)
					}
					return h.WriteFile(t.Context(), name, strings.NewReader(content), ops.WriteOptions{Guard: &ops.Guard{Content: []byte(expected)}})
				}
				err := write("mine\n", "something else\n")
				if method == "none" {
					require.Error(t, err)
					assert.Contains(t, err.Error(), "none of sha256sum")
				} else {
					require.ErrorIs(t, err, ops.ErrModified)
				}
				got, _ := os.ReadFile(name)
				assert.Equal(t, "what I read\n", string(got), "the file is left as it was")

				if method != "none" {
					require.NoError(t, write("mine\n", "what I read\n"))
					got, _ = os.ReadFile(name)
					assert.Contains(t, string(got), "mine\n")
				}
				left, _ := os.ReadDir(dir)
				assert.Len(t, left, 1, "no temporary or expected-content file is left: %v", left)
			}
		})
	}
}

// An upload through the command server (no SFTP) carries raw data behind
// its request line, which the host reads with head -c: BusyBox's head
// reads ahead of its count, and took with it any request sent behind the
// data, which was never answered. Nothing is pipelined behind such a
// request. (BusyBox head first in the host's PATH; one session.)
func TestNothingWaitsBehindAnUpload(t *testing.T) {
	busybox, err := exec.LookPath("busybox")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("busybox is not installed")
		}
		t.Skip("busybox is not installed")
	}
	shim := t.TempDir()
	require.NoError(t, os.Symlink(busybox, filepath.Join(shim, "head")))
	t.Setenv("PATH", shim+string(os.PathListSeparator)+os.Getenv("PATH"))
	srv := sshtest.Start(t, sshtest.Options{NoSFTP: true})
	h := rssh.New(srv.Config(), rssh.HostOptions{MaxSessions: 1, NoSFTP: true})
	t.Cleanup(func() { h.Close() })
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	dir := t.TempDir()
	content := bytes.Repeat([]byte("0123456789abcdef"), 32<<10) // 512 KiB: past WriteFile's inline limit
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Go(func() {
			assert.NoError(t, h.WriteFile(ctx, filepath.Join(dir, fmt.Sprintf("f%d", i)), bytes.NewReader(content), ops.WriteOptions{}))
		})
	}
	for range 40 {
		wg.Go(func() {
			_, err := h.Stat(ctx, "/")
			assert.NoError(t, err)
		})
	}
	wg.Wait()
	for i := range 4 {
		got, err := os.ReadFile(filepath.Join(dir, fmt.Sprintf("f%d", i)))
		require.NoError(t, err)
		assert.True(t, bytes.Equal(content, got), "file %d", i)
	}
}

// With every channel in use, short file requests are pipelined on a busy
// server, never behind a command (which reads the request stream while it
// runs): one session allowed, 40 stats and 5 commands at once all succeed
// on one server.
func TestRequestsShareAServer(t *testing.T) {
	srv := sshtest.Start(t, sshtest.Options{})
	h := rssh.New(srv.Config(), rssh.HostOptions{MaxSessions: 1, NoSFTP: true})
	t.Cleanup(func() { h.Close() })
	var wg sync.WaitGroup
	outs := make([]strings.Builder, 5)
	for i := range 45 {
		wg.Go(func() {
			if i%9 == 0 {
				assert.NoError(t, h.Exec(t.Context(), ops.Command{Script: fmt.Sprintf("sleep 0.1; echo %d", i/9), Output: &outs[i/9]}))
				return
			}
			_, err := h.Stat(t.Context(), "/")
			assert.NoError(t, err)
		})
	}
	wg.Wait()
	for i := range outs {
		assert.Equal(t, fmt.Sprintf("%d\n", i), outs[i].String())
	}
	assert.Equal(t, int64(1), h.SessionsOpened())
}

// A spawned process holds a session of the host for its life, and takes
// one only while another stays for the commands: on a host that allows
// two, one process runs beside the commands, a second is refused saying
// why, and once the first is gone a new one may start.
func TestSpawnLeavesASessionForCommands(t *testing.T) {
	t.Parallel()
	srv := sshtest.Start(t, sshtest.Options{})
	srv.SetMaxSessions(2)
	h := rssh.New(srv.Config(), rssh.HostOptions{MaxSessions: 2})
	t.Cleanup(func() { h.Close() })
	ctx := t.Context()
	p, err := h.Spawn(ctx, ops.SpawnCommand{Args: []string{"cat"}})
	require.NoError(t, err)
	var out bytes.Buffer
	require.NoError(t, h.Exec(ctx, ops.Command{Script: "echo beside", Output: &out}))
	assert.Equal(t, "beside\n", out.String())

	_, err = h.Spawn(ctx, ops.SpawnCommand{Args: []string{"cat"}})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "MaxSessions")

	require.NoError(t, p.Stdin().Close())
	require.NoError(t, p.Wait())
	q, err := h.Spawn(ctx, ops.SpawnCommand{Args: []string{"cat"}})
	require.NoError(t, err, "the first one's session was given back")
	require.NoError(t, q.Stdin().Close())
	require.NoError(t, q.Wait())
	out.Reset()
	require.NoError(t, h.Exec(ctx, ops.Command{Script: "echo after", Output: &out}))
	assert.Equal(t, "after\n", out.String())
	assert.LessOrEqual(t, srv.MostSessionsOpen(), 2)
}
