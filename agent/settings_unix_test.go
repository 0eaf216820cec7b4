//go:build unix

package agent

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pi-remote/pi-remote/internal/unprivileged"
)

// A project's settings file another user could have written is not read
// at all (issue 29 review: a file planted in /tmp/.pi-remote chose the
// model and the tools silently), and a FIFO in its place does not hang
// pi-remote.
func TestProjectSettingsOtherUsersCouldWriteAreNotRead(t *testing.T) {
	unprivileged.RequireRoot(t, "planting another user's files")
	uid, gid := unprivileged.IDs(t)
	const planted = `{"model": "anthropic/claude-opus-4-1", "thinking": "high"}`

	for _, tc := range []struct {
		name    string
		plant   func(t *testing.T, project, dir, file string)
		refused bool
	}{
		{"the user's own", func(*testing.T, string, string, string) {}, false},
		{"a file of another user's", func(t *testing.T, _, _, file string) {
			require.NoError(t, os.Lchown(file, uid, gid))
		}, true},
		{"a .pi-remote directory of another user's", func(t *testing.T, _, dir, _ string) {
			require.NoError(t, os.Lchown(dir, uid, gid))
		}, true},
		{"a project directory of another user's", func(t *testing.T, project, _, _ string) {
			require.NoError(t, os.Lchown(project, uid, gid))
		}, true},
		{"a file others may write", func(t *testing.T, _, _, file string) {
			require.NoError(t, os.Chmod(file, 0o666))
		}, true},
		{"a file another group may write", func(t *testing.T, _, _, file string) {
			require.NoError(t, os.Lchown(file, -1, gid))
			require.NoError(t, os.Chmod(file, 0o664))
		}, true},
		{"a project directory others may write", func(t *testing.T, project, _, _ string) {
			require.NoError(t, os.Chmod(project, 0o777))
		}, true},
		{"the user's own in a sticky shared directory", func(t *testing.T, project, _, _ string) {
			require.NoError(t, os.Chmod(project, 0o777|os.ModeSticky))
		}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			home, project := t.TempDir(), t.TempDir()
			dir := filepath.Join(project, ".pi-remote")
			require.NoError(t, os.Mkdir(dir, 0o755))
			file := filepath.Join(dir, "settings.json")
			require.NoError(t, os.WriteFile(file, []byte(planted), 0o644))
			tc.plant(t, project, dir, file)

			l, err := LoadSettings(home, project, false)
			require.NoError(t, err)
			assert.Equal(t, file, l.ProjectFile)
			if !tc.refused {
				assert.Empty(t, l.Refused)
				assert.Equal(t, "anthropic/claude-opus-4-1", l.Model)
				return
			}
			assert.NotEmpty(t, l.Refused)
			assert.Empty(t, l.Model, "nothing of the file is applied")
			assert.Empty(t, l.Thinking)
			// Not even trust reads a file someone else could have written.
			l, err = LoadSettings(home, project, true)
			require.NoError(t, err)
			assert.NotEmpty(t, l.Refused)
			assert.Empty(t, l.Model)
		})
	}

	t.Run("a FIFO", func(t *testing.T) {
		for _, owner := range []int{os.Geteuid(), uid} {
			home, project := t.TempDir(), t.TempDir()
			dir := filepath.Join(project, ".pi-remote")
			require.NoError(t, os.Mkdir(dir, 0o755))
			file := filepath.Join(dir, "settings.json")
			require.NoError(t, syscall.Mkfifo(file, 0o644))
			require.NoError(t, os.Lchown(file, owner, -1))
			type loaded struct {
				l   LoadedSettings
				err error
			}
			done := make(chan loaded, 1)
			go func() {
				l, err := LoadSettings(home, project, false)
				done <- loaded{l, err}
			}()
			select {
			case got := <-done:
				if owner == uid {
					require.NoError(t, got.err)
					assert.NotEmpty(t, got.l.Refused, "another user's FIFO is refused")
				} else {
					assert.ErrorContains(t, got.err, "not a regular file")
				}
			case <-time.After(10 * time.Second):
				t.Fatal("LoadSettings blocked on a FIFO")
			}
		}
	})
}
