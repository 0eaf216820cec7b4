package env

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pi-remote/pi-remote/ops/local"
)

// waits reports whether b.Wait is still waiting after a moment.
func waits(t *testing.T, b *Barrier) bool {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	return b.Wait(ctx) != nil
}

// A barrier waits for the earlier mutations it overlaps — of its file, below
// its directory, through another spelling, or all of them for a command —
// and for nothing else.
func TestBarrierWaitsForEarlierOverlappingMutations(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "d", "sub"), 0o755))
	require.NoError(t, os.Mkdir(filepath.Join(dir, "other"), 0o755))
	require.NoError(t, os.Symlink(filepath.Join(dir, "d"), filepath.Join(dir, "link")))
	e := New(local.New(), Options{Cwd: dir, Home: "/"})
	ctx := t.Context()

	before := e.AfterUnder(ctx, "d/sub/f")
	r, err := e.Reserve(ctx, "d/sub/f")
	require.NoError(t, err)

	assert.False(t, waits(t, before), "a barrier taken before the mutation does not wait for it")
	assert.True(t, waits(t, e.AfterUnder(ctx, "d/sub/f")), "same file")
	assert.True(t, waits(t, e.AfterUnder(ctx, "d")), "a directory above it")
	assert.True(t, waits(t, e.AfterUnder(ctx, ".")), "the working directory")
	assert.True(t, waits(t, e.AfterUnder(ctx, "link/sub/f")), "another spelling of the file")
	assert.True(t, waits(t, e.After()), "a command")
	assert.False(t, waits(t, e.AfterUnder(ctx, "other")), "an unrelated directory")
	assert.False(t, waits(t, e.AfterUnder(ctx, "d/sub/f2")), "a sibling")
	assert.False(t, waits(t, e.AfterUnder(ctx, "d/sub/f/..x")), "a longer name")
	assert.False(t, waits(t, New(local.New(), Options{Cwd: dir, Home: "/"}).After()), "another environment")

	b := e.AfterUnder(ctx, "d")
	require.NoError(t, r.Do(ctx, func(string) error { return nil }))
	require.NoError(t, b.Wait(ctx), "over once the mutation is")
	assert.Empty(t, e.After().before, "finished mutations are forgotten")
}

// A mutation given up without running (Release) ends the wait too.
func TestBarrierReleasedReservation(t *testing.T) {
	e := New(local.New(), Options{Cwd: t.TempDir(), Home: "/"})
	r, err := e.Reserve(t.Context(), "f")
	require.NoError(t, err)
	b := e.After()
	r.Release()
	require.NoError(t, b.Wait(t.Context()))
}

// A reservation held for a decision is not waited for by the barriers taken
// meanwhile; once admitted, it is by the later ones.
func TestBarrierSkipsHeldReservation(t *testing.T) {
	e := New(local.New(), Options{Cwd: t.TempDir(), Home: "/"})
	r, err := e.Reserve(t.Context(), "f")
	require.NoError(t, err)
	defer r.Release()
	admitted := r.Hold()
	assert.False(t, waits(t, e.After()), "held for a decision")
	admitted()
	assert.True(t, waits(t, e.After()), "admitted")
}
