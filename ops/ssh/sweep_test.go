//go:build unix

package ssh

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pi-remote/pi-remote/internal/unprivileged"
)

// thisHost is this host as the server program records it: its name and its boot id.
func thisHost(t *testing.T) (string, string) {
	t.Helper()
	name, err := os.ReadFile("/proc/sys/kernel/hostname")
	require.NoError(t, err)
	boot, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	require.NoError(t, err)
	return strings.TrimSpace(string(name)), strings.TrimSpace(string(boot))
}

// thisHostRecord is this host as a job's server line records it: "NAME
// BOOT".
func thisHostRecord(t *testing.T) string {
	name, boot := thisHost(t)
	return name + " " + boot
}

// otherBoot is a boot id that is not this boot's.
const otherBoot = "00000000-0000-4000-8000-000000000000"

// plantDir makes dir with mode, holding files (name → content; a content
// starting with "->" makes a symbolic link to the rest), everything owned
// by uid:gid.
func plantDir(t *testing.T, dir string, mode os.FileMode, uid, gid int, files map[string]string) {
	t.Helper()
	require.NoError(t, os.Mkdir(dir, mode))
	require.NoError(t, os.Chmod(dir, mode))
	for name, content := range files {
		p := filepath.Join(dir, name)
		if target, ok := strings.CutPrefix(content, "->"); ok {
			require.NoError(t, os.Symlink(target, p))
		} else {
			require.NoError(t, os.WriteFile(p, []byte(content), 0o600))
		}
		require.NoError(t, os.Lchown(p, uid, gid))
	}
	require.NoError(t, os.Chown(dir, uid, gid))
}

// A server start sweeps the private directories of dead servers, and only
// those proven its user's own: another user's directory (whatever its
// mode) listing files to remove, a symbolic link to a directory of the
// user's, a directory of another host sharing TMPDIR are left alone, with
// the files they name; a dead server's own directory, and one of this
// host before it rebooted, go.
func TestServerStartSweepsOnlyItsOwnPrivateDirectories(t *testing.T) {
	t.Parallel()
	unprivileged.RequireRoot(t, "planting directories of another user")
	uid, gid := unprivileged.IDs(t)
	name, _ := thisHost(t)
	for _, sh := range testShells(t) {
		t.Run(strings.Join(sh, " "), func(t *testing.T) {
			t.Parallel()
			tmp := t.TempDir()
			canaries := t.TempDir()
			canary := func(n string) string {
				p := filepath.Join(canaries, n)
				require.NoError(t, os.WriteFile(p, []byte("precious"), 0o600))
				return p
			}
			rootsDir := filepath.Join(t.TempDir(), "roots")
			plantDir(t, rootsDir, 0o700, 0, 0, map[string]string{"temp.a": canary("through-link") + "\n"})
			ownTemp := filepath.Join(t.TempDir(), ".f.pi-remote-0123")
			require.NoError(t, os.WriteFile(ownTemp, nil, 0o600))

			others755 := filepath.Join(tmp, ".pi-remote.999999.x")
			plantDir(t, others755, 0o755, uid, gid, map[string]string{"temp.a": canary("a") + "\n"})
			others700 := filepath.Join(tmp, ".pi-remote.999998.y")
			plantDir(t, others700, 0o700, uid, gid, map[string]string{
				"temp.a": canary("b") + "\n",
				// The canary named through a link of the other user's.
				"via":    "->" + canaries,
				"temp.b": filepath.Join(others700, "via", filepath.Base(canary("c"))) + "\n",
			})
			link := filepath.Join(tmp, ".pi-remote.999997.z")
			require.NoError(t, os.Symlink(rootsDir, link))
			require.NoError(t, os.Lchown(link, uid, gid))
			otherHost := filepath.Join(tmp, ".pi-remote.999996.v")
			plantDir(t, otherHost, 0o700, 0, 0, map[string]string{"host": "elsewhere " + otherBoot + "\n", "temp.a": canary("d") + "\n"})
			dead := filepath.Join(tmp, ".pi-remote.999995.w")
			plantDir(t, dead, 0o700, 0, 0, map[string]string{"temp.0123": ownTemp + "\n"})
			rebooted := filepath.Join(tmp, ".pi-remote.999994.u")
			plantDir(t, rebooted, 0o700, 0, 0, map[string]string{"host": name + " " + otherBoot + "\n"})

			// The sweep is over once the server is ready.
			startLocalIn(t, sh, true, tmp, nil)

			for _, p := range []string{others755, others700, filepath.Join(others700, "temp.a"), link, rootsDir, filepath.Join(rootsDir, "temp.a"), otherHost} {
				_, err := os.Lstat(p)
				assert.NoError(t, err, "%s is left alone", p)
			}
			entries, err := os.ReadDir(canaries)
			require.NoError(t, err)
			assert.Len(t, entries, 5, "every canary survives")
			assert.NoDirExists(t, dead, "a dead server's own directory is swept")
			assert.NoDirExists(t, rebooted, "so is one of this host before it rebooted")
		})
	}
}

// A pid that belongs to another user (kill -0 fails with EPERM) is a live
// server's: its directory stays.
func TestServerStartKeepsTheDirectoryOfAPidOfAnotherUser(t *testing.T) {
	t.Parallel()
	unprivileged.RequireRoot(t, "running a server as another user")
	uid, gid := unprivileged.IDs(t)
	name, boot := thisHost(t)
	// A process of root's, alive, that the server may not signal.
	alive := exec.Command("sleep", "300")
	require.NoError(t, alive.Start())
	t.Cleanup(func() {
		alive.Process.Kill()
		alive.Wait()
	})
	for _, sh := range testShells(t) {
		t.Run(strings.Join(sh, " "), func(t *testing.T) {
			t.Parallel()
			// A TMPDIR the other user owns, in a directory it may enter.
			base, err := os.MkdirTemp("", "pi-remote-sweep-")
			require.NoError(t, err)
			t.Cleanup(func() { os.RemoveAll(base) })
			require.NoError(t, os.Chmod(base, 0o755))
			tmp := filepath.Join(base, "tmp")
			plantDir(t, tmp, 0o700, uid, gid, nil)
			canary := filepath.Join(tmp, "canary")
			require.NoError(t, os.WriteFile(canary, []byte("precious"), 0o600))
			require.NoError(t, os.Chown(canary, uid, gid))
			live := filepath.Join(tmp, ".pi-remote."+strconv.Itoa(alive.Process.Pid)+".x")
			plantDir(t, live, 0o700, uid, gid, map[string]string{"host": name + " " + boot + "\n", "temp.a": canary + "\n"})

			startLocalIn(t, sh, true, tmp, &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, "XDG_CACHE_HOME="+filepath.Join(tmp, "cache"))

			assert.DirExists(t, live)
			assert.FileExists(t, canary)
		})
	}
}
