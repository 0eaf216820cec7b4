package canonpath_test

import (
	"context"
	"io/fs"
	"path"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pi-remote/pi-remote/canonpath"
)

// fakeHost is a Resolver over a table: real maps an existing path to its
// canonical form, fail maps a path to the error resolving it gives, and any
// other path is missing.
type fakeHost struct {
	real map[string]string
	fail map[string]error
	asks []string
}

func (h *fakeHost) RealPath(_ context.Context, name string) (string, error) {
	h.asks = append(h.asks, name)
	if err, ok := h.fail[name]; ok {
		return "", err
	}
	if p, ok := h.real[name]; ok {
		return p, nil
	}
	return "", &fs.PathError{Op: "realpath", Path: name, Err: fs.ErrNotExist}
}

func TestOfWithFakeResolver(t *testing.T) {
	host := func() *fakeHost {
		return &fakeHost{
			real: map[string]string{
				"/":             "/",
				"/home":         "/home",
				"/home/me":      "/data/me", // a symlinked home
				"/home/me/file": "/data/me/file",
			},
			fail: map[string]error{
				"/home/me/file/x": &fs.PathError{Op: "realpath", Path: "/home/me/file/x", Err: errNotDirMissing},
				"/home/me/locked": &fs.PathError{Op: "realpath", Path: "/home/me/locked", Err: fs.ErrPermission},
			},
		}
	}
	tests := []struct {
		name, spelling, want string
		asks                 []string
	}{
		{"existing", "/home/me/file", "/data/me/file", []string{"/home/me/file"}},
		{"unclean", "/home//me/./file", "/data/me/file", []string{"/home/me/file"}},
		{"missing below a symlink", "/home/me/new/deeper.txt", "/data/me/new/deeper.txt",
			[]string{"/home/me/new/deeper.txt", "/home/me/new", "/home/me"}},
		{"below a non-directory walks up", "/home/me/file/x/y", "/data/me/file/x/y",
			[]string{"/home/me/file/x/y", "/home/me/file/x", "/home/me/file"}},
		{"other failure keeps the lexical path", "/home/me/locked/a", "/home/me/locked/a",
			[]string{"/home/me/locked/a", "/home/me/locked"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := host()
			k, err := canonpath.Of(t.Context(), "fake", h, tc.spelling)
			require.NoError(t, err)
			assert.Equal(t, tc.want, k.Path())
			assert.Equal(t, "fake", k.Env())
			assert.Equal(t, tc.asks, h.asks)
		})
	}

	t.Run("nothing resolves, not even the root", func(t *testing.T) {
		h := host()
		delete(h.real, "/")
		k, err := canonpath.Of(t.Context(), "fake", h, "/nowhere/a")
		require.NoError(t, err)
		assert.Equal(t, "/nowhere/a", k.Path())
		assert.Equal(t, []string{"/nowhere/a", "/nowhere", "/"}, h.asks)
	})
	t.Run("cancelled while walking up", func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		_, err := canonpath.Of(ctx, "fake", host(), "/home/me/new/x")
		assert.ErrorIs(t, err, context.Canceled)
	})
	t.Run("relative path rejected before asking the host", func(t *testing.T) {
		h := host()
		_, err := canonpath.Of(t.Context(), "fake", h, path.Join("rel", "x"))
		assert.Error(t, err)
		assert.Empty(t, h.asks)
	})
}

// errNotDirMissing is how a resolver reports a component that is not a
// directory: the path does not exist.
var errNotDirMissing = notDirError{}

type notDirError struct{}

func (notDirError) Error() string        { return "not a directory" }
func (notDirError) Is(target error) bool { return target == fs.ErrNotExist }
