package ops_test

import (
	"context"
	"io"
	"io/fs"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pi-remote/pi-remote/ops"
)

// statOnly is a backend without the Resolver ability: every path fails to
// stat with err (nil: it exists).
type statOnly struct{ err error }

func (s statOnly) Stat(context.Context, string) (fs.FileInfo, error) { return nil, s.err }
func (statOnly) Open(context.Context, string) (io.ReadCloser, error) { return nil, fs.ErrInvalid }
func (statOnly) ReadDir(context.Context, string) ([]ops.DirEntry, error) {
	return nil, fs.ErrInvalid
}

func TestResolverOf(t *testing.T) {
	ctx := t.Context()
	t.Run("fallback returns an existing path unchanged", func(t *testing.T) {
		p, err := ops.ResolverOf(statOnly{}).RealPath(ctx, "/a/b")
		require.NoError(t, err)
		assert.Equal(t, "/a/b", p)
	})
	t.Run("below a non-directory: missing, and still ErrNotDir", func(t *testing.T) {
		notDir := &fs.PathError{Op: "stat", Path: "/f/x", Err: ops.ErrNotDir}
		_, err := ops.ResolverOf(statOnly{notDir}).RealPath(ctx, "/f/x")
		assert.ErrorIs(t, err, fs.ErrNotExist)
		assert.ErrorIs(t, err, ops.ErrNotDir)
		var pe *fs.PathError
		require.ErrorAs(t, err, &pe)
		assert.Equal(t, "/f/x", pe.Path)
		assert.Equal(t, notDir.Error(), err.Error())
	})
	t.Run("other errors pass unchanged", func(t *testing.T) {
		denied := &fs.PathError{Op: "stat", Path: "/d/x", Err: fs.ErrPermission}
		_, err := ops.ResolverOf(statOnly{denied}).RealPath(ctx, "/d/x")
		assert.Same(t, denied, err)
		assert.NotErrorIs(t, err, fs.ErrNotExist)
	})
}
