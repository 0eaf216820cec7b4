package workspace

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestCompletePathAndGitBranch(t *testing.T) {
	dir := t.TempDir()
	for _, p := range []string{"main.go", "mod/main_test.go", "mod/deep/major.txt", "other.txt"} {
		require.NoError(t, os.MkdirAll(filepath.Dir(filepath.Join(dir, p)), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(dir, p), nil, 0o644))
	}
	hs, err := OpenHosts(t.Context(), HostOptions{Cwd: dir}, Session, nil, nil)
	require.NoError(t, err)
	w, err := Open(t.Context(), hs, Options{Active: []string{"read"}, MaxTurns: 1})
	require.NoError(t, err)
	defer w.Close()
	assert.Equal(t, []string{"main.go", "mod/main_test.go"}, w.CompletePath(t.Context(), "mai"), "shallow first, through the whole tree")
	assert.Equal(t, []string{"mod/main_test.go"}, w.CompletePath(t.Context(), "mod/ma"), "in prefix's directory")
	assert.Equal(t, "", w.GitBranch(t.Context()), "no repository")
}
