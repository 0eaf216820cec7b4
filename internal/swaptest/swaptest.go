//go:build linux

// Package swaptest races a backend's writes against another user who may
// rename entries in the directory written to: the attacker (command
// swapper, run as nobody) swaps every new entry there for a symbolic link
// to a canary file that only root may change, and a new directory for a
// link to a directory of the attacker's full of such links. Writes may
// fail under that attack; the canary must never change.
//
// It needs root (to run the attacker as another user) and a backend whose
// host is this machine: ops/local, ops/ssh against the in-process server
// or a local sshd.
package swaptest

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/pi-remote/pi-remote/internal/unprivileged"
	"github.com/pi-remote/pi-remote/ops"
)

// Attempts is how many times Run writes each of its three files.
const Attempts = 200

// Attacker is the account the attacker runs as.
const Attacker = unprivileged.User

// RequireRoot fails in CI and skips elsewhere when the test is not root.
func RequireRoot(t testing.TB) {
	t.Helper()
	unprivileged.RequireRoot(t, "the attacker runs as another user")
}

// Run writes, Attempts times each, a small file (one request on remote
// hosts), a large one (over SFTP or in chunks) and an edit (a guarded
// write) in a directory the attacker owns, with o as root, and checks
// after every round that the canary kept its owner, mode and content.
func Run(t *testing.T, o ops.Operations) {
	area, dirs := attackerArea(t, "attacker", "evil")
	dir, evil := dirs[0], dirs[1]
	canaryDir := t.TempDir()
	canary := filepath.Join(canaryDir, "canary")
	const canaryText = "root's own\n"
	require.NoError(t, os.WriteFile(canary, []byte(canaryText), 0o600))

	ctx := t.Context()
	small, large, edited := filepath.Join(dir, "small.txt"), filepath.Join(dir, "large.bin"), filepath.Join(dir, "edit.txt")
	big := bytes.Repeat([]byte("0123456789abcdef"), 100<<10/16) // over the inline limit of remote backends
	require.NoError(t, o.WriteFile(ctx, edited, strings.NewReader("line 0\n"), ops.WriteOptions{}))
	swaps := start(t, area, dir, canary, evil, filepath.Base(small), filepath.Base(large), filepath.Base(edited))

	var failed [3]int // small, large, edit
	for i := range Attempts {
		if o.WriteFile(ctx, small, strings.NewReader(fmt.Sprintf("small %d\n", i)), ops.WriteOptions{}) != nil {
			failed[0]++
		}
		if o.WriteFile(ctx, large, bytes.NewReader(big), ops.WriteOptions{}) != nil {
			failed[1]++
		}
		if edit(ctx, o, edited, i) != nil {
			failed[2]++
		}
		var st syscall.Stat_t
		require.NoError(t, syscall.Stat(canary, &st))
		got, err := os.ReadFile(canary)
		require.NoError(t, err)
		require.Equal(t, describe(0, 0, 0o600, []byte(canaryText)), describe(st.Uid, st.Gid, st.Mode&0o7777, got),
			"the canary after round %d (failed so far: %d small, %d large, %d edits)", i, failed[0], failed[1], failed[2])
	}
	t.Logf("failed under attack: %d small, %d large, %d edits of %d each; %d swaps", failed[0], failed[1], failed[2], Attempts, swaps())
	assert.Positive(t, swaps(), "the attacker swapped nothing: the test proved nothing")
}

// RunExchange edits, Attempts times, a file of root's (mode 0600) in a
// directory the attacker owns, while the attacker exchanges it, again and
// again, with a link to a file of its own that everyone may read and
// write (swapper -exchange). An edit that read the secret content may
// fail; it must never leave that content in a file the attacker may read:
// the new file's owner and mode (and ACL) are those of the file it
// replaces, never those of the file the attacker put in its place
// meanwhile.
func RunExchange(t *testing.T, o ops.Operations) {
	area, dirs := attackerArea(t, "attacker")
	dir := dirs[0]
	uid, gid := unprivileged.IDs(t)
	bait, secret := filepath.Join(dir, "bait"), filepath.Join(dir, "secret.txt")
	require.NoError(t, os.WriteFile(bait, []byte("bait\n"), 0o666))
	require.NoError(t, os.Chmod(bait, 0o666))
	require.NoError(t, os.Chown(bait, uid, gid))
	require.NoError(t, os.WriteFile(secret, []byte("SECRET 0\n"), 0o600))
	swaps := start(t, area, "-exchange", dir, filepath.Base(secret), bait)

	ctx := t.Context()
	edited := 0
	// At least Attempts rounds, and on until the attacker has made 100
	// exchanges (a fast backend edits 200 times in less).
	for i := 0; i < Attempts || (swaps() < 10 && i < 50*Attempts); i++ {
		if rc, err := o.Open(ctx, secret); err == nil {
			old, err := io.ReadAll(rc)
			rc.Close()
			if err == nil && bytes.HasPrefix(old, []byte("SECRET")) &&
				o.WriteFile(ctx, secret, strings.NewReader(fmt.Sprintf("SECRET %d\n", i+1)), ops.WriteOptions{Guard: &ops.Guard{Content: old}}) == nil {
				edited++
			}
		}
		entries, err := os.ReadDir(dir)
		require.NoError(t, err)
		for _, e := range entries {
			p := filepath.Join(dir, e.Name())
			var st syscall.Stat_t
			if syscall.Lstat(p, &st) != nil || st.Mode&syscall.S_IFMT != syscall.S_IFREG {
				continue
			}
			content, err := os.ReadFile(p)
			if err != nil || !bytes.HasPrefix(content, []byte("SECRET")) {
				continue
			}
			require.Equal(t, "0:0 0600", fmt.Sprintf("%d:%d %04o", st.Uid, st.Gid, st.Mode&0o7777),
				"round %d: %s holds the secret (%q) with the wrong owner or mode", i, e.Name(), content)
			_, err = unix.Lgetxattr(p, "system.posix_acl_access", nil)
			require.Error(t, err, "round %d: %s holds the secret with an ACL", i, e.Name())
		}
	}
	t.Logf("%d of %d edits went through; %d exchanges", edited, Attempts, swaps()*10)
	assert.Positive(t, swaps(), "the attacker exchanged nothing: the test proved nothing")
	assert.Positive(t, edited, "no edit went through: the test proved nothing")
}

// attackerArea makes, for a test that needs root (RequireRoot), a
// directory everyone may enter, removed when the test ends, holding a
// directory of the attacker's for each name.
func attackerArea(t *testing.T, names ...string) (area string, dirs []string) {
	t.Helper()
	RequireRoot(t)
	uid, gid := unprivileged.IDs(t)
	area, err := os.MkdirTemp("", "pi-remote-swap-")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(area) })
	require.NoError(t, os.Chmod(area, 0o755))
	for _, name := range names {
		d := filepath.Join(area, name)
		require.NoError(t, os.Mkdir(d, 0o755))
		require.NoError(t, os.Chown(d, uid, gid))
		dirs = append(dirs, d)
	}
	return area, dirs
}

// describe is a file's owner, mode, size and first bytes.
func describe(uid, gid, mode uint32, content []byte) string {
	return fmt.Sprintf("%d:%d %04o %d bytes %q", uid, gid, mode, len(content), content[:min(len(content), 40)])
}

// edit does what the edit tool does: read, then a write guarded by what
// was read.
func edit(ctx context.Context, o ops.Operations, name string, i int) error {
	rc, err := o.Open(ctx, name)
	if err != nil {
		return err
	}
	old, err := io.ReadAll(rc)
	rc.Close()
	if err != nil {
		return err
	}
	return o.WriteFile(ctx, name, strings.NewReader(fmt.Sprintf("line %d\n", i)), ops.WriteOptions{Guard: &ops.Guard{Content: old}})
}

// start builds the swapper in area and runs it as Attacker with args
// until the test ends; it returns once the swapper is ready. The function
// it returns counts the swaps so far.
func start(t *testing.T, area string, args ...string) func() int {
	t.Helper()
	uid, gid := unprivileged.IDs(t)
	bin := filepath.Join(area, "swapper")
	build := exec.Command("go", "build", "-o", bin, "github.com/pi-remote/pi-remote/internal/swaptest/swapper")
	out, err := build.CombinedOutput()
	require.NoError(t, err, "building the swapper: %s", out)
	require.NoError(t, os.Chmod(bin, 0o755))

	cmd := exec.Command(bin, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}}
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	require.NoError(t, cmd.Start())
	var (
		mu    sync.Mutex
		swaps int
	)
	ready := make(chan bool, 1)
	done := make(chan struct{})
	go func() {
		defer close(done)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			switch line := sc.Text(); {
			case line == "ready":
				ready <- true
			case strings.HasPrefix(line, "swapped "):
				mu.Lock()
				swaps++
				mu.Unlock()
			}
		}
		ready <- false
	}()
	stop := func() {
		cmd.Process.Kill()
		cmd.Wait()
		<-done
	}
	if !<-ready {
		stop()
		t.Fatalf("the swapper did not start: %s", &stderr)
	}
	t.Cleanup(stop)
	return func() int {
		mu.Lock()
		defer mu.Unlock()
		return swaps
	}
}
