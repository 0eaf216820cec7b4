package local

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/pi-remote/pi-remote/ops"
)

// Between a write's steps another user exchanges the file for a link to
// a file that everyone may read (renameat2 RENAME_EXCHANGE): the new
// content never gets that file's mode. Before the target is held the
// write is refused; after, the attributes come from the file held.
func TestWriteTakesAttributesFromTheFileItHolds(t *testing.T) {
	for _, step := range []string{"resolved", "held"} {
		t.Run(step, func(t *testing.T) {
			dir := t.TempDir()
			target, link := filepath.Join(dir, "secret.txt"), filepath.Join(dir, "link")
			require.NoError(t, os.WriteFile(target, []byte("SECRET 0\n"), 0o600))
			require.NoError(t, os.WriteFile(filepath.Join(dir, "bait"), []byte("bait\n"), 0o666))
			require.NoError(t, os.Chmod(filepath.Join(dir, "bait"), 0o666))
			require.NoError(t, os.Symlink("bait", link))
			exchange := func(string) {
				require.NoError(t, unix.Renameat2(unix.AT_FDCWD, target, unix.AT_FDCWD, link, unix.RENAME_EXCHANGE))
			}
			hook := &testHookResolved
			if step == "held" {
				hook = &testHookHeld
			}
			*hook = exchange
			t.Cleanup(func() { *hook = func(string) {} })

			err := New().WriteFile(t.Context(), target, strings.NewReader("SECRET 1\n"), ops.WriteOptions{})
			for _, name := range []string{target, link, filepath.Join(dir, "bait")} {
				fi, lerr := os.Lstat(name)
				require.NoError(t, lerr)
				content, _ := os.ReadFile(name)
				if fi.Mode().IsRegular() && strings.HasPrefix(string(content), "SECRET") {
					assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm(), "%s holds %q", filepath.Base(name), content)
				}
			}
			if step == "resolved" {
				require.ErrorIs(t, err, ops.ErrMoved)
				return
			}
			require.NoError(t, err)
			got, err := os.ReadFile(target)
			require.NoError(t, err)
			assert.Equal(t, "SECRET 1\n", string(got))
		})
	}
}
