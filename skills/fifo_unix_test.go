//go:build unix

package skills_test

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pi-remote/pi-remote/skills"
)

// A FIFO named SKILL.md, with no writer, is refused, not waited on; of a
// 1 GiB SKILL.md the first 64 KiB are read.
func TestLoadDoesNotWaitOnAFIFO(t *testing.T) {
	dir := t.TempDir()
	for _, d := range []string{"hang", "big"} {
		require.NoError(t, os.Mkdir(filepath.Join(dir, d), 0o755))
	}
	require.NoError(t, syscall.Mkfifo(filepath.Join(dir, "hang", "SKILL.md"), 0o644))
	big := filepath.Join(dir, "big", "SKILL.md")
	require.NoError(t, os.WriteFile(big, []byte("---\nname: big\ndescription: d\n---\nbody\n"), 0o644))
	require.NoError(t, os.Truncate(big, 1<<30))
	found, problems := skills.Load(dir)
	require.Len(t, found, 1)
	assert.Equal(t, "big", found[0].Name)
	assert.Len(t, found[0].Body, skills.MaxFile-len("---\nname: big\ndescription: d\n---\n"))
	require.Len(t, problems, 1)
	assert.ErrorContains(t, problems[0], "not a regular file")
}
