package opstest

import (
	"bytes"
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"io/fs"
	"path"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pi-remote/pi-remote/ops"
)

func testRead(t *testing.T, h Harness) {
	o, root := h.New(t)
	ctx := t.Context()

	t.Run("missing", func(t *testing.T) {
		_, err := o.Stat(ctx, path.Join(root, "nope"))
		requirePathError(t, err, fs.ErrNotExist)
		_, err = o.Open(ctx, path.Join(root, "nope"))
		requirePathError(t, err, fs.ErrNotExist)
	})
	t.Run("directory", func(t *testing.T) {
		_, err := o.Open(ctx, root)
		requirePathError(t, err, ops.ErrIsDir)
		fi, err := o.Stat(ctx, root)
		require.NoError(t, err)
		assert.True(t, fi.IsDir())
	})
	t.Run("stat", func(t *testing.T) {
		name := path.Join(root, "stat.txt")
		write(t, o, name, "12345")
		fi, err := o.Stat(ctx, name)
		require.NoError(t, err)
		assert.Equal(t, int64(5), fi.Size())
		assert.False(t, fi.IsDir())
		assert.Equal(t, "stat.txt", fi.Name())
	})
	t.Run("streaming head of large file", func(t *testing.T) {
		name := path.Join(root, "big.bin")
		data := make([]byte, 8<<20)
		_, err := rand.Read(data)
		require.NoError(t, err)
		require.NoError(t, o.WriteFile(ctx, name, bytes.NewReader(data), ops.WriteOptions{}))
		rc, err := o.Open(ctx, name)
		require.NoError(t, err)
		head := make([]byte, 1000)
		_, err = io.ReadFull(rc, head)
		require.NoError(t, err)
		require.NoError(t, rc.Close())
		assert.Equal(t, data[:1000], head)
		assert.Equal(t, string(data), read(t, o, name), "full round trip of 8 MiB")
	})
	t.Run("a FIFO or a device is not opened", func(t *testing.T) {
		// Reads of those may block or never end (a FIFO nobody writes,
		// /dev/zero): an edit of one would hang. Open answers at once,
		// without waiting for a writer; a writer that comes after 5 s
		// (opening the FIFO read-write, which does not wait) is what
		// ends a wait that should not have begun.
		fifo := path.Join(root, "fifo")
		run(t, o, "mkfifo "+q(fifo))
		run(t, o, fmt.Sprintf("(sleep 5; : <>%s) >/dev/null 2>&1 &", q(fifo)))
		for _, name := range []string{fifo, "/dev/null", "/dev/zero"} {
			rc, err := o.Open(ctx, name)
			if err == nil {
				rc.Close()
			}
			requirePathError(t, err, ops.ErrNotRegular)
		}
	})
	t.Run("a pseudo file larger than the first chunk comes whole", func(t *testing.T) {
		if run(t, o, "[ -r /proc/kallsyms ] && echo yes || echo no") != "yes\n" {
			t.Skip("the host has no readable /proc/kallsyms")
		}
		want := strings.TrimSpace(run(t, o, "wc -c </proc/kallsyms"))
		got := read(t, o, "/proc/kallsyms")
		assert.Equal(t, want, fmt.Sprint(len(got)), "bytes read")
		assert.Greater(t, len(got), 1<<20, "more than one chunk")
	})
	t.Run("a file replaced while it is read is read as it was", func(t *testing.T) {
		name := path.Join(root, "replaced")
		old := strings.Repeat("a", 3<<20)
		write(t, o, name, old)
		rc, err := o.Open(ctx, name)
		require.NoError(t, err)
		defer rc.Close()
		head := make([]byte, 10)
		_, err = io.ReadFull(rc, head)
		require.NoError(t, err)
		// Another connection replaces it: on a host that allows one
		// session per connection, the open reader holds this one's.
		other, _ := h.New(t)
		write(t, other, name, strings.Repeat("b", 3<<20))
		rest, err := io.ReadAll(rc)
		require.NoError(t, err)
		got := string(head) + string(rest)
		assert.Equal(t, len(old), len(got))
		assert.True(t, got == old, "only the old version's bytes (%d of them 'b')", strings.Count(got, "b"))
	})
	t.Run("a parent that may not be searched is a permission error", func(t *testing.T) {
		needNonRoot(t, o)
		dir := path.Join(root, "nox")
		require.NoError(t, o.MkdirAll(ctx, dir))
		write(t, o, path.Join(dir, "f"), "x")
		restrict(t, o, dir, "0666")
		_, err := o.Open(ctx, path.Join(dir, "f"))
		requirePathError(t, err, fs.ErrPermission)
		_, err = o.Stat(ctx, path.Join(dir, "f"))
		requirePathError(t, err, fs.ErrPermission)
	})
	t.Run("a pseudo file that refuses its reader is a permission error", func(t *testing.T) {
		needNonRoot(t, o)
		if run(t, o, "[ -e /proc/1/smaps ] && echo yes || echo no") != "yes\n" {
			t.Skip("the host has no /proc/1/smaps")
		}
		rc, err := o.Open(ctx, "/proc/1/smaps")
		if err == nil {
			_, err = io.ReadAll(rc)
			rc.Close()
		}
		requirePathError(t, err, fs.ErrPermission)
	})
	t.Run("reads stop when ctx ends", func(t *testing.T) {
		name := path.Join(root, "ctx.txt")
		write(t, o, name, strings.Repeat("x", 1<<16))
		cctx, cancel := context.WithCancel(ctx)
		rc, err := o.Open(cctx, name)
		require.NoError(t, err)
		defer rc.Close()
		cancel()
		_, err = io.ReadAll(rc)
		assert.ErrorIs(t, err, context.Canceled)
	})
}

func testReadDir(t *testing.T, h Harness) {
	o, root := h.New(t)
	ctx := t.Context()
	require.NoError(t, o.MkdirAll(ctx, path.Join(root, "d", "sub")))
	write(t, o, path.Join(root, "d", "f.txt"), "abc")
	run(t, o, fmt.Sprintf("cd '%s' && ln -s sub linkdir && ln -s f.txt linkfile && ln -s missing dangling", path.Join(root, "d")))

	entries, err := o.ReadDir(ctx, path.Join(root, "d"))
	require.NoError(t, err)
	slices.SortFunc(entries, func(a, b ops.DirEntry) int { return strings.Compare(a.Name, b.Name) })
	type row struct {
		Name             string
		IsDir, IsSymlink bool
	}
	var got []row
	for _, e := range entries {
		got = append(got, row{e.Name, e.IsDir, e.IsSymlink})
	}
	assert.Equal(t, []row{
		{"dangling", false, true},
		{"f.txt", false, false},
		{"linkdir", true, true},
		{"linkfile", false, true},
		{"sub", true, false},
	}, got)
	for _, e := range entries {
		if e.Name == "f.txt" {
			assert.Equal(t, int64(3), e.Size)
		}
	}

	t.Run("odd names, modes and sizes", func(t *testing.T) {
		dir := path.Join(root, "odd")
		require.NoError(t, o.MkdirAll(ctx, dir))
		names := []string{"-dash", ".hidden", "it's here", "new\nline", "tab\tx", "caf\xe9", "a -> b"}
		for i, n := range names {
			write(t, o, path.Join(dir, n), strings.Repeat("x", i))
		}
		run(t, o, "chmod 4750 "+q(path.Join(dir, "-dash"))+" && mkdir "+q(path.Join(dir, "new\ndir")))
		entries, err := o.ReadDir(ctx, dir)
		require.NoError(t, err)
		got := map[string]ops.DirEntry{}
		for _, e := range entries {
			got[e.Name] = e
		}
		require.Len(t, got, len(names)+1, "%q", entries)
		for i, n := range names {
			assert.Equal(t, int64(i), got[n].Size, "%q", n)
			assert.False(t, got[n].IsDir, "%q", n)
		}
		assert.Equal(t, fs.ModeSetuid|0o750, got["-dash"].Mode, "%v", got["-dash"].Mode)
		assert.True(t, got["new\ndir"].IsDir)
		assert.True(t, got["new\ndir"].Mode.IsDir())
	})

	_, err = o.ReadDir(ctx, path.Join(root, "nope"))
	requirePathError(t, err, fs.ErrNotExist)
	_, err = o.ReadDir(ctx, path.Join(root, "d", "f.txt"))
	requirePathError(t, err, ops.ErrNotDir)

	require.NoError(t, o.MkdirAll(ctx, path.Join(root, "empty")))
	entries, err = o.ReadDir(ctx, path.Join(root, "empty"))
	require.NoError(t, err)
	assert.Empty(t, entries)

	t.Run("readable but not searchable", func(t *testing.T) {
		needNonRoot(t, o)
		dir := path.Join(root, "noexec")
		require.NoError(t, o.MkdirAll(ctx, dir))
		write(t, o, path.Join(dir, "f"), "x")
		restrict(t, o, dir, "0444")
		_, err := o.ReadDir(ctx, dir)
		requirePathError(t, err, fs.ErrPermission)
	})
}

func testRealPath(t *testing.T, h Harness) {
	o, root := h.New(t)
	ctx := t.Context()
	require.NoError(t, o.MkdirAll(ctx, path.Join(root, "real", "dir")))
	write(t, o, path.Join(root, "real", "dir", "f"), "x")
	run(t, o, fmt.Sprintf("cd '%s' && ln -s real/dir via", root))

	want, err := ops.RealPath(ctx, o, path.Join(root, "real", "dir", "f"))
	require.NoError(t, err)
	got, err := ops.RealPath(ctx, o, path.Join(root, "via", "f"))
	require.NoError(t, err)
	if _, ok := o.(ops.Resolver); ok {
		assert.Equal(t, want, got, "symlinked directory resolves to the same path")
	}
	_, err = ops.RealPath(ctx, o, path.Join(root, "missing", "f"))
	assert.ErrorIs(t, err, fs.ErrNotExist)

	// Names with a newline are names like any other: two directories
	// "d" and "d\nx" must not share a key.
	nl := path.Join(root, "d\nx", "f")
	require.NoError(t, o.WriteFile(ctx, nl, strings.NewReader("x"), ops.WriteOptions{CreateParents: true}))
	require.NoError(t, o.MkdirAll(ctx, path.Join(root, "d")))
	got, err = ops.RealPath(ctx, o, nl)
	require.NoError(t, err)
	if _, ok := o.(ops.Resolver); ok {
		realRoot, err := ops.RealPath(ctx, o, root)
		require.NoError(t, err)
		assert.Equal(t, path.Join(realRoot, "d\nx", "f"), got)
	}
}
