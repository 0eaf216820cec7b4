package workspace

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pi-remote/pi-remote/agent/permission"
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
	assert.Equal(t, []string{"mod/main_test.go", "mod/deep/major.txt"}, w.CompletePath(t.Context(), "mod/ma"), "in prefix's directory")
	assert.Equal(t, "", w.GitBranch(t.Context()), "no repository")
}

// @path completion offers directories and files under the host's working
// directory whose names hold the typed letters in order, the best matches
// first; nothing when nothing matches (never the find tool's message).
func TestCompletePathDirectoriesFuzzy(t *testing.T) {
	dir := t.TempDir()
	for _, p := range []string{"pkg/pkgutil/util.go", "pkg/parse.go", "cmd/pi/main.go", "README.md"} {
		require.NoError(t, os.MkdirAll(filepath.Dir(filepath.Join(dir, p)), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(dir, p), nil, 0o644))
	}
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "pkg", "empty"), 0o755))
	hs, err := OpenHosts(t.Context(), HostOptions{Cwd: dir}, Session, nil, nil)
	require.NoError(t, err)
	w, err := Open(t.Context(), hs, Options{Active: []string{"read"}, MaxTurns: 1})
	require.NoError(t, err)
	defer w.Close()
	for _, tc := range []struct {
		prefix string
		want   []string
	}{
		{"pk", []string{"pkg/", "pkg/pkgutil/"}},
		{"pkg/", []string{"pkg/empty/", "pkg/parse.go", "pkg/pkgutil/"}},
		{"pkg/e", []string{"pkg/empty/", "pkg/parse.go"}},
		{"mn", []string{"cmd/pi/main.go"}},
		{"readme", []string{"README.md"}},
		{"zzz", nil},
		{"nosuch/", nil},
		{"nosuch/x", nil},
	} {
		t.Run(tc.prefix, func(t *testing.T) {
			assert.Equal(t, tc.want, w.CompletePath(t.Context(), tc.prefix))
		})
	}
	abs := filepath.ToSlash(dir) + "/"
	assert.Equal(t, []string{abs + "pkg/"}, w.CompletePath(t.Context(), abs+"pk"), "an absolute directory: its own entries only")
}

// The front end's own queries pass no permission gate: in ask mode
// nobody is asked about the footer's git branch, and a deny rule on find
// leaves @path completion alone.
func TestQueriesPassNoGate(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "main.go"), nil, 0o644))
	deny, err := permission.ParseRule("find")
	require.NoError(t, err)
	gate := permission.NewGate(permission.Policy{Mode: permission.Ask, Deny: []permission.Rule{deny}})
	asked := 0
	gate.SetAsker(func(context.Context, permission.Request) (permission.Answer, error) {
		asked++
		return permission.Answer{Decision: permission.Deny}, nil
	})
	hs, err := OpenHosts(t.Context(), HostOptions{Cwd: dir}, Session, nil, nil)
	require.NoError(t, err)
	w, err := Open(t.Context(), hs, Options{Active: []string{"read"}, MaxTurns: 1, Gate: gate})
	require.NoError(t, err)
	defer w.Close()
	assert.Equal(t, []string{"main.go"}, w.CompletePath(t.Context(), "mai"))
	assert.Equal(t, "", w.GitBranch(t.Context()))
	assert.Zero(t, asked, "nobody was asked")
}
