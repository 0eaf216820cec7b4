// Package opstest is the conformance suite of the ops contract. Every backend
// runs it: ops/local directly, ops/ssh against an in-process server and
// against a real OpenSSH sshd.
//
//	func TestConformance(t *testing.T) {
//		opstest.Run(t, opstest.Harness{New: func(t *testing.T) (ops.Operations, string) { ... }})
//	}
package opstest

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pi-remote/pi-remote/ops"
)

// Harness connects the suite to one backend.
type Harness struct {
	// New returns the backend under test and an empty scratch directory on
	// its host (absolute, slash-separated) that the test may fill. It
	// registers its own cleanup with t.
	New func(t *testing.T) (ops.Operations, string)
}

// Run runs the whole suite as subtests of t.
func Run(t *testing.T, h Harness) {
	t.Run("Read", func(t *testing.T) { testRead(t, h) })
	t.Run("ReadDir", func(t *testing.T) { testReadDir(t, h) })
	t.Run("Write", func(t *testing.T) { testWrite(t, h) })
	t.Run("Exec", func(t *testing.T) { testExec(t, h) })
	t.Run("Kill", func(t *testing.T) { testKill(t, h) })
	t.Run("RealPath", func(t *testing.T) { testRealPath(t, h) })
}

func write(t *testing.T, o ops.Operations, name, content string) {
	t.Helper()
	require.NoError(t, o.WriteFile(t.Context(), name, strings.NewReader(content), ops.WriteOptions{}))
}

func read(t *testing.T, o ops.Operations, name string) string {
	t.Helper()
	rc, err := o.Open(t.Context(), name)
	require.NoError(t, err)
	defer rc.Close()
	b, err := io.ReadAll(rc)
	require.NoError(t, err)
	return string(b)
}

func run(t *testing.T, o ops.Operations, script string) string {
	t.Helper()
	var out bytes.Buffer
	require.NoError(t, o.Exec(t.Context(), ops.Command{Script: script, Output: &out}), "script %q output %q", script, out.String())
	return out.String()
}

func requirePathError(t *testing.T, err error, target error) {
	t.Helper()
	require.Error(t, err)
	var pe *fs.PathError
	assert.True(t, errors.As(err, &pe), "got %T (%v), want *fs.PathError", err, err)
	assert.ErrorIs(t, err, target)
}

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

	_, err = o.ReadDir(ctx, path.Join(root, "nope"))
	requirePathError(t, err, fs.ErrNotExist)
	_, err = o.ReadDir(ctx, path.Join(root, "d", "f.txt"))
	requirePathError(t, err, ops.ErrNotDir)

	require.NoError(t, o.MkdirAll(ctx, path.Join(root, "empty")))
	entries, err = o.ReadDir(ctx, path.Join(root, "empty"))
	require.NoError(t, err)
	assert.Empty(t, entries)
}

// failingReader yields n bytes, then fails.
type failingReader struct{ n int }

var errBoom = errors.New("boom")

func (f *failingReader) Read(p []byte) (int, error) {
	if f.n <= 0 {
		return 0, errBoom
	}
	k := min(len(p), f.n)
	for i := range p[:k] {
		p[i] = 'N'
	}
	f.n -= k
	return k, nil
}

// cancelReader cancels its context after n bytes and then blocks until the
// context is done, so the write is interrupted mid-way.
type cancelReader struct {
	ctx    context.Context
	cancel context.CancelFunc
	n      int
}

func (c *cancelReader) Read(p []byte) (int, error) {
	if c.n <= 0 {
		c.cancel()
		<-c.ctx.Done()
		return 0, c.ctx.Err()
	}
	k := min(len(p), c.n)
	for i := range p[:k] {
		p[i] = 'C'
	}
	c.n -= k
	return k, nil
}

func listNames(t *testing.T, o ops.Operations, dir string) []string {
	t.Helper()
	entries, err := o.ReadDir(t.Context(), dir)
	require.NoError(t, err)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name)
	}
	slices.Sort(names)
	return names
}

func mode(t *testing.T, o ops.Operations, name string) fs.FileMode {
	t.Helper()
	fi, err := o.Stat(t.Context(), name)
	require.NoError(t, err)
	return fi.Mode().Perm()
}

func testWrite(t *testing.T, h Harness) {
	o, root := h.New(t)
	ctx := t.Context()

	t.Run("create and overwrite", func(t *testing.T) {
		name := path.Join(root, "a.txt")
		write(t, o, name, "one")
		assert.Equal(t, "one", read(t, o, name))
		assert.Equal(t, ops.DefaultPerm, mode(t, o, name))
		write(t, o, name, "two, longer")
		assert.Equal(t, "two, longer", read(t, o, name))
		write(t, o, name, "")
		assert.Equal(t, "", read(t, o, name))
	})
	t.Run("mode of existing file kept", func(t *testing.T) {
		name := path.Join(root, "script.sh")
		write(t, o, name, "#!/bin/sh\n")
		run(t, o, fmt.Sprintf("chmod 0751 '%s'", name))
		write(t, o, name, "#!/bin/sh\necho hi\n")
		assert.Equal(t, fs.FileMode(0o751), mode(t, o, name))
	})
	t.Run("new file perm", func(t *testing.T) {
		name := path.Join(root, "private")
		require.NoError(t, o.WriteFile(ctx, name, strings.NewReader("s"), ops.WriteOptions{Perm: 0o600}))
		assert.Equal(t, fs.FileMode(0o600), mode(t, o, name))
	})
	t.Run("missing parent", func(t *testing.T) {
		err := o.WriteFile(ctx, path.Join(root, "no", "such", "f"), strings.NewReader("x"), ops.WriteOptions{})
		requirePathError(t, err, fs.ErrNotExist)
	})
	t.Run("create parents", func(t *testing.T) {
		for _, size := range []int{10, 200 << 10} { // inline and bulk paths of remote backends
			name := path.Join(root, fmt.Sprintf("made%d", size), "x", "f")
			content := strings.Repeat("p", size)
			require.NoError(t, o.WriteFile(ctx, name, strings.NewReader(content), ops.WriteOptions{CreateParents: true}))
			assert.Equal(t, content, read(t, o, name))
		}
		write(t, o, path.Join(root, "afile"), "x")
		err := o.WriteFile(ctx, path.Join(root, "afile", "sub", "f"), strings.NewReader("x"), ops.WriteOptions{CreateParents: true})
		require.Error(t, err)
		assert.ErrorIs(t, err, ops.ErrNotDir)
	})
	t.Run("mkdirall", func(t *testing.T) {
		dir := path.Join(root, "p", "q", "r")
		require.NoError(t, o.MkdirAll(ctx, dir))
		require.NoError(t, o.MkdirAll(ctx, dir), "existing directory is fine")
		write(t, o, path.Join(dir, "f"), "deep")
		assert.Equal(t, "deep", read(t, o, path.Join(dir, "f")))
		write(t, o, path.Join(root, "plain"), "x")
		err := o.MkdirAll(ctx, path.Join(root, "plain", "sub"))
		require.Error(t, err)
		assert.ErrorIs(t, err, ops.ErrNotDir)
	})
	t.Run("directory target", func(t *testing.T) {
		require.NoError(t, o.MkdirAll(ctx, path.Join(root, "isdir")))
		err := o.WriteFile(ctx, path.Join(root, "isdir"), strings.NewReader("x"), ops.WriteOptions{})
		requirePathError(t, err, ops.ErrIsDir)
	})
	t.Run("non-UTF-8 bytes", func(t *testing.T) {
		name := path.Join(root, "latin1")
		content := "caf\xe9 \xff\xfe\x00\x01 end"
		write(t, o, name, content)
		assert.Equal(t, content, read(t, o, name))
	})
	t.Run("failed write keeps old file", func(t *testing.T) {
		dir := path.Join(root, "fail")
		require.NoError(t, o.MkdirAll(ctx, dir))
		name := path.Join(dir, "keep.txt")
		write(t, o, name, "original")
		run(t, o, fmt.Sprintf("chmod 0640 '%s'", name))
		err := o.WriteFile(ctx, name, &failingReader{n: 100 << 10}, ops.WriteOptions{})
		require.ErrorIs(t, err, errBoom)
		assert.Equal(t, "original", read(t, o, name))
		assert.Equal(t, fs.FileMode(0o640), mode(t, o, name))
		assert.Equal(t, []string{"keep.txt"}, listNames(t, o, dir), "no temporary file left behind")
	})
	t.Run("cancelled write keeps old file", func(t *testing.T) {
		dir := path.Join(root, "cancel")
		require.NoError(t, o.MkdirAll(ctx, dir))
		name := path.Join(dir, "keep.txt")
		write(t, o, name, "original")
		cctx, cancel := context.WithCancel(ctx)
		defer cancel()
		err := o.WriteFile(cctx, name, &cancelReader{ctx: cctx, cancel: cancel, n: 256 << 10}, ops.WriteOptions{})
		require.ErrorIs(t, err, context.Canceled)
		assert.Equal(t, "original", read(t, o, name))
		assert.Equal(t, []string{"keep.txt"}, listNames(t, o, dir), "no temporary file left behind")
	})
	t.Run("Guard refuses a changed file", func(t *testing.T) {
		dir := path.Join(root, "guard")
		require.NoError(t, o.MkdirAll(ctx, dir))
		name := path.Join(dir, "g.txt")
		write(t, o, name, "theirs")
		for _, size := range []int{10, 200 << 10} { // inline and bulk paths of remote backends
			write(t, o, name, "theirs")
			mine := strings.Repeat("m", size)
			err := o.WriteFile(ctx, name, strings.NewReader(mine), ops.WriteOptions{Guard: &ops.Guard{Content: []byte("what I read")}})
			requirePathError(t, err, ops.ErrModified)
			assert.Equal(t, "theirs", read(t, o, name))
			assert.Equal(t, []string{"g.txt"}, listNames(t, o, dir), "no temporary file left behind")
			err = o.WriteFile(ctx, name, strings.NewReader(mine), ops.WriteOptions{Guard: &ops.Guard{Content: []byte("theirs")}})
			require.NoError(t, err)
			assert.Equal(t, mine, read(t, o, name))
		}
	})
	t.Run("write through symlink keeps link", func(t *testing.T) {
		dir := path.Join(root, "link")
		require.NoError(t, o.MkdirAll(ctx, dir))
		write(t, o, path.Join(dir, "target.txt"), "old")
		run(t, o, fmt.Sprintf("cd '%s' && ln -s target.txt alias.txt", dir))
		write(t, o, path.Join(dir, "alias.txt"), "new")
		assert.Equal(t, "new", read(t, o, path.Join(dir, "target.txt")))
		entries, err := o.ReadDir(ctx, dir)
		require.NoError(t, err)
		for _, e := range entries {
			if e.Name == "alias.txt" {
				assert.True(t, e.IsSymlink, "alias.txt is still a symlink")
			}
		}
	})
	t.Run("concurrent writers never tear", func(t *testing.T) {
		name := path.Join(root, "race.txt")
		a, b := strings.Repeat("a", 1<<20), strings.Repeat("b", 1<<20)
		errs := make(chan error, 2)
		go func() { errs <- o.WriteFile(ctx, name, strings.NewReader(a), ops.WriteOptions{}) }()
		go func() { errs <- o.WriteFile(ctx, name, strings.NewReader(b), ops.WriteOptions{}) }()
		require.NoError(t, <-errs)
		require.NoError(t, <-errs)
		got := read(t, o, name)
		assert.True(t, got == a || got == b, "file is one of the two writes, never a mix")
	})
}

func testExec(t *testing.T, h Harness) {
	o, root := h.New(t)
	ctx := t.Context()

	t.Run("exit codes", func(t *testing.T) {
		for _, code := range []int{1, 3, 42, 127} {
			err := o.Exec(ctx, ops.Command{Script: fmt.Sprintf("exit %d", code)})
			var ee *ops.ExitError
			require.ErrorAs(t, err, &ee)
			assert.Equal(t, code, ee.Code)
		}
		require.NoError(t, o.Exec(ctx, ops.Command{Script: "true"}))
	})
	t.Run("killed by signal", func(t *testing.T) {
		err := o.Exec(ctx, ops.Command{Script: "kill -TERM $$"})
		var ee *ops.ExitError
		require.ErrorAs(t, err, &ee)
		assert.Equal(t, 143, ee.Code)
	})
	t.Run("merged output order", func(t *testing.T) {
		got := run(t, o, "echo 1; echo 2 >&2; echo 3; echo 4 >&2; printf 5")
		assert.Equal(t, "1\n2\n3\n4\n5", got)
	})
	t.Run("stdin closed", func(t *testing.T) {
		got := run(t, o, "cat; if read x; then echo got; else echo eof; fi")
		assert.Equal(t, "eof\n", got)
	})
	t.Run("dir and env", func(t *testing.T) {
		var out bytes.Buffer
		require.NoError(t, o.Exec(ctx, ops.Command{Script: `pwd; echo "$PI_A|$PI_B"`, Dir: root, Env: []string{"PI_A=x y", "PI_B=it's"}, Output: &out}))
		assert.Equal(t, root+"\nx y|it's\n", out.String())
	})
	t.Run("missing dir", func(t *testing.T) {
		err := o.Exec(ctx, ops.Command{Script: "true", Dir: path.Join(root, "nope")})
		requirePathError(t, err, fs.ErrNotExist)
	})
	t.Run("runs sh not the login shell", func(t *testing.T) {
		// POSIX syntax that csh and fish reject.
		got := run(t, o, `x=1; if [ "$x" = 1 ]; then echo posix; fi; f() { echo "fn $1"; }; f ok`)
		assert.Equal(t, "posix\nfn ok\n", got)
	})
	t.Run("large output", func(t *testing.T) {
		got := run(t, o, "i=0; while [ $i -lt 20000 ]; do echo line$i; i=$((i+1)); done")
		assert.Equal(t, 20000, strings.Count(got, "\n"))
		assert.True(t, strings.HasSuffix(got, "line19999\n"))
	})
	t.Run("non-UTF-8 output", func(t *testing.T) {
		got := run(t, o, `printf 'caf\351\377\n'`)
		assert.Equal(t, "caf\xe9\xff\n", got)
	})
	t.Run("background child holding stdout", func(t *testing.T) {
		marker := uniqueSleep()
		t.Cleanup(func() { killMarker(o, marker) })
		start := time.Now()
		var out bytes.Buffer
		err := o.Exec(ctx, ops.Command{Script: fmt.Sprintf("sleep %s & echo started; exit 7", marker), Output: &out})
		elapsed := time.Since(start)
		var ee *ops.ExitError
		require.ErrorAs(t, err, &ee)
		assert.Equal(t, 7, ee.Code)
		assert.Equal(t, "started\n", out.String())
		assert.Less(t, elapsed, 10*time.Second, "returned on exit status, not when the child let go of stdout")
	})
	t.Run("cancelled before start", func(t *testing.T) {
		cctx, cancel := context.WithCancel(ctx)
		cancel()
		err := o.Exec(cctx, ops.Command{Script: "echo never"})
		assert.ErrorIs(t, err, context.Canceled)
	})
}

// uniqueSleep returns a sleep duration that identifies one test's processes
// in the host's process table.
func uniqueSleep() string {
	var b [4]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err)
	}
	return fmt.Sprintf("300.%d", uint32(b[0])<<24|uint32(b[1])<<16|uint32(b[2])<<8|uint32(b[3]))
}

// procsWith lists the command lines of processes on the host whose command
// line contains marker, reading /proc so that no ps is needed.
func procsWith(ctx context.Context, o ops.ExecOperations, marker string) ([]string, error) {
	script := fmt.Sprintf(`for p in /proc/[0-9]*; do
  [ "$p" = "/proc/$$" ] && continue
  c=$(tr '\0' ' ' < "$p/cmdline" 2>/dev/null) || continue
  case "$c" in *'sleep %s'*) echo "$p: $c";; esac
done`, marker)
	var out bytes.Buffer
	if err := o.Exec(ctx, ops.Command{Script: script, Output: &out}); err != nil {
		return nil, err
	}
	return strings.Fields(strings.TrimSpace(out.String())), nil
}

func killMarker(o ops.ExecOperations, marker string) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	// Best effort cleanup of a test's own sleeper; failures only leak a sleep.
	o.Exec(ctx, ops.Command{Script: fmt.Sprintf(`for p in /proc/[0-9]*; do case "$(tr '\0' ' ' < $p/cmdline 2>/dev/null)" in *'sleep %s'*) kill ${p#/proc/};; esac; done`, marker)})
}

func testKill(t *testing.T, h Harness) {
	o, _ := h.New(t)
	for _, tc := range []struct {
		name   string
		cancel bool
	}{{"timeout", false}, {"cancel", true}} {
		t.Run(tc.name, func(t *testing.T) {
			marker := uniqueSleep()
			t.Cleanup(func() { killMarker(o, marker) })
			script := fmt.Sprintf("sleep %s & sleep %s & sleep %s", marker, marker, marker)

			ctx, cancel := context.WithTimeout(t.Context(), time.Second)
			defer cancel()
			var watcher sync.WaitGroup
			defer watcher.Wait()
			if tc.cancel {
				ctx, cancel = context.WithCancel(t.Context())
				defer cancel()
				watcher.Go(func() {
					// Cancel once the processes exist.
					for ctx.Err() == nil {
						if procs, err := procsWith(t.Context(), o, marker); err == nil && len(procs) >= 3 {
							cancel()
							return
						}
					}
				})
			}
			start := time.Now()
			err := o.Exec(ctx, ops.Command{Script: script})
			require.Error(t, err)
			assert.ErrorIs(t, err, ctx.Err())
			assert.Less(t, time.Since(start), 30*time.Second)
			require.EventuallyWithT(t, func(c *assert.CollectT) {
				procs, err := procsWith(t.Context(), o, marker)
				require.NoError(c, err)
				assert.Empty(c, procs, "every process of the group is gone")
			}, 10*time.Second, 100*time.Millisecond)
		})
	}
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
}
