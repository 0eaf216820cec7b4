package integration

import (
	"fmt"
	"os"
	"os/exec"
	"path"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pi-remote/pi-remote/integration/sshd"
	"github.com/pi-remote/pi-remote/ops"
	"github.com/pi-remote/pi-remote/ops/opstest"
	rssh "github.com/pi-remote/pi-remote/ops/ssh"
)

// usersMu serializes useradd and usermod, which lock /etc/passwd.
var usersMu sync.Mutex

// ensureUser creates (or updates) a local user with the given login shell,
// unlocked for public-key login.
func ensureUser(t testing.TB, name, shell string) string {
	t.Helper()
	usersMu.Lock()
	defer usersMu.Unlock()
	sshd.RequireRoot(t, "creating a user with a non-POSIX login shell")
	if _, err := os.Stat(shell); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("%s is not installed; .ci/run installs fish and csh", shell)
		}
		t.Skipf("%s is not installed", shell)
	}
	if exec.Command("id", name).Run() != nil {
		out, err := exec.Command("useradd", "-m", "-s", shell, name).CombinedOutput()
		require.NoError(t, err, "%s", out)
	}
	out, err := exec.Command("usermod", "-s", shell, "-p", "*", name).CombinedOutput()
	require.NoError(t, err, "%s", out)
	return "/home/" + name
}

// Every operation and every tool works for a user whose login shell is
// fish or csh: nothing pi-remote sends is parsed as POSIX by the login
// shell except one quoted word.
func TestNonPOSIXLoginShells(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ user, shell string }{
		{"pi-fish", "/usr/bin/fish"},
		{"pi-csh", "/bin/csh"},
	} {
		t.Run(path.Base(tc.shell), func(t *testing.T) {
			t.Parallel()
			home := ensureUser(t, tc.user, tc.shell)
			srv := sshd.Start(t, sshd.Options{User: tc.user})
			scratch := func(t *testing.T, h *rssh.Host) string {
				dir := path.Join(home, fmt.Sprintf("pi-test-%d", time.Now().UnixNano()))
				require.NoError(t, h.MkdirAll(t.Context(), dir))
				t.Cleanup(func() { os.RemoveAll(dir) })
				return dir
			}
			t.Run("login shell is really "+path.Base(tc.shell), func(t *testing.T) {
				t.Parallel()
				out, err := exec.Command("getent", "passwd", tc.user).Output()
				require.NoError(t, err)
				assert.True(t, strings.HasSuffix(strings.TrimSpace(string(out)), tc.shell))
			})
			t.Run("ops", func(t *testing.T) {
				t.Parallel()
				opstest.Run(t, opstest.Harness{New: func(t *testing.T) (ops.Operations, string) {
					h := host(t, srv, rssh.HostOptions{})
					return h, scratch(t, h)
				}})
			})
			t.Run("tools", func(t *testing.T) {
				t.Parallel()
				h := host(t, srv, rssh.HostOptions{})
				dir := scratch(t, h)
				te := newToolEnv(t, h, tc.user, dir)
				te.ok("write", map[string]any{"path": "src/main.c", "content": "int main() { return 0; }\n// TODO: more\n"})
				assert.Contains(t, te.ok("read", map[string]any{"path": "src/main.c"}), "return 0;")
				te.ok("edit", map[string]any{"path": "src/main.c", "edits": []map[string]string{{"oldText": "return 0;", "newText": "return 1;"}}})
				assert.Contains(t, te.ok("read", map[string]any{"path": "src/main.c"}), "return 1;")
				assert.Contains(t, te.ok("grep", map[string]any{"pattern": "TODO"}), "src/main.c:2:")
				assert.Contains(t, te.ok("find", map[string]any{"pattern": "*.c"}), "src/main.c")
				assert.Contains(t, te.ok("ls", map[string]any{}), "src/")
				// bash must not source the user's ~/.bashrc (it would when it
				// believes sshd started it as a top-level shell).
				te.ok("write", map[string]any{"path": path.Join(home, ".bashrc"), "content": "echo sourced-bashrc\n"})
				out := te.ok("bash", map[string]any{"command": `x=1; if [ "$x" = 1 ]; then echo "posix as $(id -un)"; fi`})
				assert.Equal(t, "posix as "+tc.user+"\n", out)
			})
		})
	}
}
