package session

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pi-remote/pi-remote/loop"
)

func TestHistory(t *testing.T) {
	path := filepath.Join(t.TempDir(), "dir", "history.jsonl")
	assert.Empty(t, LoadHistory(path, 10), "no file yet")
	for _, p := range []string{"one", "two\nlines", "three"} {
		AppendHistory(path, p)
	}
	fi, err := os.Stat(path)
	require.NoError(t, err)
	if runtime.GOOS != "windows" {
		assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm(), "private")
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	require.NoError(t, err)
	_, err = f.WriteString("not json\n\"  \"\n")
	require.NoError(t, err)
	require.NoError(t, f.Close())
	AppendHistory(path, "four")
	assert.Equal(t, []string{"one", "two\nlines", "three", "four"}, LoadHistory(path, 10), "junk and blank lines skipped")
	assert.Equal(t, []string{"three", "four"}, LoadHistory(path, 2), "the last n")
	AppendHistory("", "nowhere")
}

func TestExportFile(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "s.jsonl")
	s, err := Create(src, Header{Host: "local", Cwd: dir})
	require.NoError(t, err)
	_, err = s.Append(loop.NewUserText("hello"))
	require.NoError(t, err)
	require.NoError(t, s.Close())
	for _, name := range []string{"t.md", "t.html"} {
		require.NoError(t, ExportFile(src, filepath.Join(dir, name)))
		b, err := os.ReadFile(filepath.Join(dir, name))
		require.NoError(t, err)
		assert.Contains(t, string(b), "hello", name)
	}
	b, err := os.ReadFile(filepath.Join(dir, "t.html"))
	require.NoError(t, err)
	assert.Contains(t, string(b), "<html")
	assert.Error(t, ExportFile(filepath.Join(dir, "missing.jsonl"), filepath.Join(dir, "x.md")))
}
