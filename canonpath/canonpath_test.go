package canonpath_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pi-remote/pi-remote/canonpath"
	"github.com/pi-remote/pi-remote/ops/local"
)

func TestOf(t *testing.T) {
	root, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	require.NoError(t, os.MkdirAll(filepath.Join(root, "real", "dir"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(root, "real", "dir", "f"), []byte("x"), 0o644))
	require.NoError(t, os.Symlink(filepath.Join(root, "real", "dir"), filepath.Join(root, "via")))
	require.NoError(t, os.Symlink("f", filepath.Join(root, "real", "dir", "alias")))
	require.NoError(t, os.WriteFile(filepath.Join(root, "plainfile"), []byte("x"), 0o644))
	fs := local.New()
	ctx := t.Context()

	key := func(p string) canonpath.Key {
		t.Helper()
		k, err := canonpath.Of(ctx, "env1", fs, p)
		require.NoError(t, err)
		return k
	}
	existing := filepath.Join(root, "real", "dir", "f")
	missing := filepath.Join(root, "real", "dir", "new", "deeper.txt")
	tests := []struct {
		name, spelling, want string
	}{
		{"existing file", existing, existing},
		{"dot dot", filepath.Join(root, "real", "..", "real", "dir", "f"), existing},
		{"unclean", root + "//real/./dir/f", existing},
		{"through symlinked dir", filepath.Join(root, "via", "f"), existing},
		{"symlinked file", filepath.Join(root, "real", "dir", "alias"), existing},
		{"missing file", missing, missing},
		{"missing file under symlinked dir", filepath.Join(root, "via", "new", "deeper.txt"), missing},
		{"missing with dot dot", filepath.Join(root, "via", "new", "..", "new", "deeper.txt"), missing},
		{"below a regular file", filepath.Join(root, "plainfile", "x"), filepath.Join(root, "plainfile", "x")},
		{"root", "/", "/"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			k := key(tc.spelling)
			assert.Equal(t, tc.want, k.Path())
			assert.Equal(t, "env1", k.Env())
		})
	}

	t.Run("environment is part of the key", func(t *testing.T) {
		a, err := canonpath.Of(ctx, "a", fs, existing)
		require.NoError(t, err)
		b, err := canonpath.Of(ctx, "b", fs, existing)
		require.NoError(t, err)
		assert.NotEqual(t, a, b)
		assert.Equal(t, a.Path(), b.Path())
	})
	t.Run("relative path rejected", func(t *testing.T) {
		_, err := canonpath.Of(ctx, "a", fs, "rel/x")
		assert.Error(t, err)
	})
}
