//go:build unix

package prompts_test

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pi-remote/pi-remote/prompts"
)

// A FIFO named like a template, with no writer, is refused, not waited
// on; so is a file of 1 GiB. The templates beside them load.
func TestLoadDoesNotWaitOnAFIFO(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, syscall.Mkfifo(filepath.Join(dir, "hang.md"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "big.md"), []byte("big\n"), 0o644))
	require.NoError(t, os.Truncate(filepath.Join(dir, "big.md"), 1<<30))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "ok.md"), []byte("fine\n"), 0o644))
	found, problems := prompts.Load(dir, true, nil) // a hang is the test's timeout
	require.Len(t, found, 1)
	assert.Equal(t, "ok", found[0].Name)
	require.Len(t, problems, 2)
	assert.ErrorContains(t, problems[0], "big.md: larger than 64 KiB")
	assert.ErrorContains(t, problems[1], "hang.md: not a regular file")
}
