// Package opstest is the conformance suite of the ops contract. Every backend
// runs it: ops/local directly, ops/ssh against an in-process server and
// against a real OpenSSH sshd.
//
//	func TestConformance(t *testing.T) {
//		opstest.Run(t, opstest.Harness{New: func(t *testing.T) (ops.Operations, string) { ... }})
//	}
package opstest

import (
	"bytes"
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pi-remote/pi-remote/internal/shellquote"
	"github.com/pi-remote/pi-remote/ops"
)

// Harness connects the suite to one backend.
type Harness struct {
	// New returns the backend under test and an empty scratch directory on
	// its host (absolute, slash-separated) that the test may fill. It
	// registers its own cleanup with t.
	New func(t *testing.T) (ops.Operations, string)
	// NoAttributeTools says the host has no setfacl, getfacl, setfattr and
	// getfattr (a BusyBox-only host, a slim container): the test that an
	// ACL and an extended attribute survive a write is skipped there.
	// Elsewhere their absence fails the test in CI (CI installs them).
	NoAttributeTools bool
	// Drop, when set, breaks the backend's transport to its host as a
	// connection reset does (o is what New returned): the tests of a
	// lost connection run only where it is set.
	Drop func(t *testing.T, o ops.Operations)
	// NoSpawn, when set, says why the Spawn tests do not apply to the
	// host (one that allows one or two SSH sessions: whether a process
	// gets one depends on what the pool has learned of the limit yet).
	NoSpawn string
}

// Run runs the whole suite as subtests of t.
func Run(t *testing.T, h Harness) {
	t.Run("Read", func(t *testing.T) { testRead(t, h) })
	t.Run("ReadDir", func(t *testing.T) { testReadDir(t, h) })
	t.Run("Write", func(t *testing.T) { testWrite(t, h) })
	t.Run("Exec", func(t *testing.T) { testExec(t, h) })
	t.Run("Kill", func(t *testing.T) { testKill(t, h) })
	t.Run("RealPath", func(t *testing.T) { testRealPath(t, h) })
	t.Run("Spawn", func(t *testing.T) {
		if h.NoSpawn != "" {
			t.Skip(h.NoSpawn)
		}
		testSpawn(t, h)
	})
}

func write(t *testing.T, o ops.Operations, name, content string) {
	t.Helper()
	require.NoError(t, o.WriteFile(t.Context(), name, strings.NewReader(content), ops.WriteOptions{}))
}

func read(t *testing.T, o ops.Operations, name string) string {
	t.Helper()
	rc, err := o.Open(t.Context(), name)
	require.NoError(t, err)
	defer rc.Close()
	b, err := io.ReadAll(rc)
	require.NoError(t, err)
	return string(b)
}

func run(t *testing.T, o ops.Operations, script string) string {
	t.Helper()
	var out bytes.Buffer
	require.NoError(t, o.Exec(t.Context(), ops.Command{Script: script, Output: &out}), "script %q output %q", script, out.String())
	return out.String()
}

// q quotes a word for the host's shell.
func q(s string) string { return shellquote.Quote(s) }

// hostIsRoot says whether the backend acts as root on its host, where
// permission bits do not stop it.
func hostIsRoot(t *testing.T, o ops.Operations) bool {
	t.Helper()
	return run(t, o, "id -u") == "0\n"
}

// hostUmask is the umask of the host's commands: the one its new files
// get.
func hostUmask(t *testing.T, o ops.Operations) fs.FileMode {
	t.Helper()
	out := strings.TrimSpace(run(t, o, "umask"))
	u, err := strconv.ParseUint(out, 8, 32)
	require.NoError(t, err, "umask printed %q", out)
	return fs.FileMode(u) & fs.ModePerm
}

// needNonRoot skips a test of permission errors when the backend is root:
// the suite's runs as an unprivileged user cover it (ops/local and the
// in-process server re-run as nobody, integration logs in as a plain user).
func needNonRoot(t *testing.T, o ops.Operations) {
	t.Helper()
	if hostIsRoot(t, o) {
		t.Skip("permission bits do not stop root: the unprivileged runs of this suite cover it")
	}
}

// needRoot skips a test that arranges what only root may (another owner,
// a mount): the root runs of the suite cover it.
func needRoot(t *testing.T, o ops.Operations) {
	t.Helper()
	if !hostIsRoot(t, o) {
		t.Skip("needs root on the host: the root runs of this suite cover it")
	}
}

// restrict gives dir the mode until the test ends (then 0755, so that it
// can be cleaned up).
func restrict(t *testing.T, o ops.Operations, dir, mode string) {
	t.Helper()
	run(t, o, "chmod "+mode+" "+q(dir))
	t.Cleanup(func() { o.Exec(context.WithoutCancel(t.Context()), ops.Command{Script: "chmod 0755 " + q(dir)}) })
}

func requirePathError(t *testing.T, err error, target error) {
	t.Helper()
	require.Error(t, err)
	var pe *fs.PathError
	assert.True(t, errors.As(err, &pe), "got %T (%v), want *fs.PathError", err, err)
	assert.ErrorIs(t, err, target)
}

// skipOrFail skips t saying why, or fails it in CI (CI=true), where every
// tool a test needs is installed and a skip would hide that one is not.
func skipOrFail(t *testing.T, why string) {
	t.Helper()
	if os.Getenv("CI") != "" {
		t.Fatal(why)
	}
	t.Skip(why)
}
