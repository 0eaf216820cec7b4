package env

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pi-remote/pi-remote/ops"
	"github.com/pi-remote/pi-remote/ops/local"
)

func TestResolve(t *testing.T) {
	e := New(local.New(), Options{Cwd: "/work/proj", Home: "/home/dev"})
	ctx := t.Context()
	for in, want := range map[string]string{
		"a/b.go":             "/work/proj/a/b.go",
		"./a/../a/b.go":      "/work/proj/a/b.go",
		"/abs/x":             "/abs/x",
		"/abs//y/./z/":       "/abs/y/z",
		"@src/main.go":       "/work/proj/src/main.go",
		"~":                  "/home/dev",
		"~/notes.md":         "/home/dev/notes.md",
		"~other/x":           "/work/proj/~other/x",
		"my\u00a0file.txt":   "/work/proj/my file.txt",
		"a\u2003b\u3000c":    "/work/proj/a b c",
		"../sibling/file.go": "/work/sibling/file.go",
	} {
		got, err := e.Resolve(ctx, in)
		require.NoError(t, err, in)
		assert.Equal(t, want, got, "Resolve(%q)", in)
	}
	for _, bad := range []string{"", "@", "a\x00b"} {
		_, err := e.Resolve(ctx, bad)
		assert.Error(t, err, "Resolve(%q)", bad)
	}
}

func TestHomeAndCwdFromHost(t *testing.T) {
	t.Setenv("HOME", "/tmp")
	e := New(local.New(), Options{})
	home, err := e.Home(t.Context())
	require.NoError(t, err)
	assert.Equal(t, "/tmp", home, "the host's $HOME")
	cwd, err := e.Cwd(t.Context())
	require.NoError(t, err)
	assert.Equal(t, "/tmp", cwd, "cwd defaults to home")
}

func TestQueueOrdersByReservation(t *testing.T) {
	e := New(local.New(), Options{Cwd: t.TempDir(), Home: "/"})
	ctx := t.Context()
	var rs []*Reservation
	for range 50 {
		r, err := e.Reserve(ctx, "f.txt")
		require.NoError(t, err)
		rs = append(rs, r)
	}
	// Started in reverse, they still run in reservation order.
	order := doInReverse(t, rs)
	for i := range order {
		assert.Equal(t, i, order[i])
	}
	assert.Equal(t, 0, e.queue.pending(), "idle entries are removed")
}

// doInReverse runs every reservation's Do, starting the goroutines last
// first, and returns the order (indexes in rs) in which they ran.
func doInReverse(t *testing.T, rs []*Reservation) []int {
	var mu sync.Mutex
	var order []int
	var wg sync.WaitGroup
	for i := len(rs) - 1; i >= 0; i-- {
		wg.Go(func() {
			require.NoError(t, rs[i].Do(t.Context(), func(string) error {
				mu.Lock()
				order = append(order, i)
				mu.Unlock()
				return nil
			}))
		})
	}
	wg.Wait()
	return order
}

func TestQueueGivingUpKeepsOrder(t *testing.T) {
	e := New(local.New(), Options{Cwd: t.TempDir(), Home: "/"})
	ctx := t.Context()
	first, err := e.Reserve(ctx, "f")
	require.NoError(t, err)
	second, err := e.Reserve(ctx, "./f")
	require.NoError(t, err)
	third, err := e.Reserve(ctx, "x/../f")
	require.NoError(t, err)
	assert.Equal(t, first.Key(), third.Key())

	// second gives up while first still runs: third must still wait for first.
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	assert.ErrorIs(t, second.Do(cctx, func(string) error { t.Error("cancelled reservation ran"); return nil }), context.Canceled)

	firstDone := make(chan struct{})
	ran := make(chan struct{})
	thirdReturned := make(chan error, 1)
	go func() {
		thirdReturned <- third.Do(ctx, func(string) error {
			select {
			case <-firstDone:
			default:
				t.Error("third ran before first finished")
			}
			close(ran)
			return nil
		})
	}()
	select {
	case <-ran:
		t.Fatal("third ran while first held the file")
	case <-time.After(50 * time.Millisecond):
	}
	require.NoError(t, first.Do(ctx, func(string) error { close(firstDone); return nil }))
	<-ran
	require.NoError(t, <-thirdReturned)
	assert.Equal(t, 0, e.queue.pending(), "idle entries are removed")
}

func TestQueueDifferentFilesDoNotWait(t *testing.T) {
	e := New(local.New(), Options{Cwd: t.TempDir(), Home: "/"})
	ctx := t.Context()
	a, err := e.Reserve(ctx, "a")
	require.NoError(t, err)
	defer a.Release()
	b, err := e.Reserve(ctx, "b")
	require.NoError(t, err)
	done := make(chan struct{})
	require.NoError(t, b.Do(ctx, func(string) error { close(done); return nil }))
	<-done
}

// slowResolver answers RealPath after a delay per path, counting the
// calls in flight: a host a round trip away.
type slowResolver struct {
	*local.FS
	delay func(name string) time.Duration

	mu       sync.Mutex
	inFlight int
	most     int
	calls    int
}

func (s *slowResolver) RealPath(ctx context.Context, name string) (string, error) {
	s.mu.Lock()
	s.calls++
	s.inFlight++
	s.most = max(s.most, s.inFlight)
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		s.inFlight--
		s.mu.Unlock()
	}()
	time.Sleep(s.delay(name))
	return s.FS.RealPath(ctx, name)
}

// A batch's keys are asked for all at once, not one after another, and the
// order of the reservations still holds for one file: the first
// reservation, whose key comes last, runs first.
func TestQueueResolvesKeysConcurrently(t *testing.T) {
	dir := t.TempDir()
	slow := &slowResolver{FS: local.New(), delay: func(name string) time.Duration {
		if strings.HasSuffix(name, "/first") {
			return 300 * time.Millisecond
		}
		return 50 * time.Millisecond
	}}
	e := New(slow, Options{Cwd: dir, Home: "/"})
	ctx := t.Context()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "first"), nil, 0o644))
	require.NoError(t, os.Symlink("first", filepath.Join(dir, "alias")))
	var rs []*Reservation
	rs = append(rs, must(e.Reserve(ctx, "first")))
	for i := range 15 {
		rs = append(rs, must(e.Reserve(ctx, fmt.Sprintf("f%d", i))))
	}
	rs = append(rs, must(e.Reserve(ctx, "alias")))
	order := doInReverse(t, rs)
	assert.Less(t, slices.Index(order, 0), slices.Index(order, len(rs)-1), "the same file through a symlink: in reservation order")
	assert.Equal(t, rs[0].Key(), rs[len(rs)-1].Key())
	assert.GreaterOrEqual(t, slow.most, 10, "keys asked for concurrently")
	assert.Equal(t, 0, e.queue.pending(), "idle entries are removed")
}

// slowResolver counts its answers too.
func (s *slowResolver) asked() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls
}

// A file mutated again takes its place without asking the host, and its
// write is told which file the key names.
func TestQueueRemembersKeys(t *testing.T) {
	dir, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	slow := &slowResolver{FS: local.New(), delay: func(string) time.Duration { return 0 }}
	e := New(slow, Options{Cwd: dir, Home: "/"})
	ctx := t.Context()
	var got []string
	record := func(canonical string) error { got = append(got, canonical); return nil }
	require.NoError(t, e.Mutate(ctx, "f", record))
	asked := slow.asked()
	require.Positive(t, asked)
	require.NoError(t, e.Mutate(ctx, "./f", record))
	require.NoError(t, e.Mutate(ctx, filepath.Join(dir, "f"), record))
	assert.Equal(t, asked, slow.asked(), "no question to the host for a path it answered")
	assert.Equal(t, []string{"", filepath.Join(dir, "f"), filepath.Join(dir, "f")}, got)
	assert.Equal(t, 0, e.queue.pending())
}

// A remembered key that no longer holds (the symlink on the way now leads
// elsewhere) fails the write before it happens; the mutation runs again
// with the key the host gives now, and that one is remembered.
func TestQueueMovedKeyRunsAgain(t *testing.T) {
	dir, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	for _, d := range []string{"a", "b"} {
		require.NoError(t, os.Mkdir(filepath.Join(dir, d), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(dir, d, "f"), []byte(d), 0o644))
	}
	require.NoError(t, os.Symlink("a", filepath.Join(dir, "via")))
	e := New(local.New(), Options{Cwd: dir, Home: "/"})
	ctx := t.Context()
	var got []string
	write := func(content string) func(string) error {
		return func(canonical string) error {
			got = append(got, canonical)
			return e.WriteFile(ctx, filepath.Join(dir, "via", "f"), strings.NewReader(content), ops.WriteOptions{Canonical: canonical})
		}
	}
	require.NoError(t, e.Mutate(ctx, "via/f", write("one")))
	require.NoError(t, os.Remove(filepath.Join(dir, "via")))
	require.NoError(t, os.Symlink("b", filepath.Join(dir, "via")))
	require.NoError(t, e.Mutate(ctx, "via/f", write("two")))
	require.NoError(t, e.Mutate(ctx, "via/f", write("three")))
	assert.Equal(t, []string{"", filepath.Join(dir, "a", "f"), "", filepath.Join(dir, "b", "f")}, got)
	for file, want := range map[string]string{"a/f": "one", "b/f": "three"} {
		b, err := os.ReadFile(filepath.Join(dir, file))
		require.NoError(t, err)
		assert.Equal(t, want, string(b), file)
	}
	assert.Equal(t, 0, e.queue.pending())
}

// A pinned reservation (one a decision was made on) commits to its key:
// the mutation gets the key even when the host gave it just now, and a
// write that finds the path moved fails instead of running again under
// the new key; the stale key is forgotten, so the next call asks the host.
func TestQueuePinnedKeyDoesNotMove(t *testing.T) {
	dir, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	for _, d := range []string{"a", "b"} {
		require.NoError(t, os.Mkdir(filepath.Join(dir, d), 0o755))
	}
	via := filepath.Join(dir, "via")
	require.NoError(t, os.Symlink("a", via))
	e := New(local.New(), Options{Cwd: dir, Home: "/"})
	ctx := t.Context()
	var got []string
	pinned := func(content string) error {
		r, err := e.Reserve(ctx, "via/f")
		require.NoError(t, err)
		assert.Equal(t, filepath.Join(dir, "a", "f"), r.Key().Path(), "decided on a/f")
		r.Pin()
		// (Swapped after the decision, before the write.)
		require.NoError(t, os.Remove(via))
		require.NoError(t, os.Symlink("b", via))
		return r.Do(ctx, func(canonical string) error {
			got = append(got, canonical)
			return e.WriteFile(ctx, filepath.Join(via, "f"), strings.NewReader(content), ops.WriteOptions{Canonical: canonical})
		})
	}
	// The key from the host just now, and then the remembered one.
	for _, remembered := range []bool{false, true} {
		require.NoError(t, os.Remove(via))
		require.NoError(t, os.Symlink("a", via))
		if remembered {
			require.NoError(t, e.Mutate(ctx, "via/f", func(string) error { return nil }))
		}
		err := pinned("x")
		assert.ErrorIs(t, err, ops.ErrMoved, "remembered %v", remembered)
		assert.NoFileExists(t, filepath.Join(dir, "b", "f"), "nothing written where nobody decided")
	}
	assert.Equal(t, []string{filepath.Join(dir, "a", "f"), filepath.Join(dir, "a", "f")}, got, "each ran once, with the key decided on")
	r, err := e.Reserve(ctx, "via/f")
	require.NoError(t, err)
	assert.Equal(t, filepath.Join(dir, "b", "f"), r.Key().Path(), "the stale key was forgotten")
	r.Release()
	assert.Equal(t, 0, e.queue.pending())
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// A reservation given up before the host said which file it names never
// enters a queue.
func TestQueueReleaseBeforeKey(t *testing.T) {
	slow := &slowResolver{FS: local.New(), delay: func(string) time.Duration { return 100 * time.Millisecond }}
	e := New(slow, Options{Cwd: t.TempDir(), Home: "/"})
	r := must(e.Reserve(t.Context(), "f"))
	r.Release()
	next := must(e.Reserve(t.Context(), "f"))
	require.NoError(t, next.Do(t.Context(), func(string) error { return nil }), "not held up by the released one")
	assert.Equal(t, 0, e.queue.pending())
}

// A Do whose context ends about when the host says which file the path
// names either runs or gives up, and does not touch what the answer sets
// meanwhile (run with -race: CI caught Do reading it as the answer came).
func TestQueueDoGivesUpAsTheKeyComes(t *testing.T) {
	slow := &slowResolver{FS: local.New(), delay: func(string) time.Duration { return 20 * time.Millisecond }}
	e := New(slow, Options{Cwd: t.TempDir(), Home: "/"})
	gaveUp := 0
	for i := range 50 {
		r := must(e.Reserve(t.Context(), fmt.Sprintf("f%d", i)))
		ctx, cancel := context.WithTimeout(t.Context(), time.Duration(16+i%8)*time.Millisecond)
		err := r.Do(ctx, func(string) error { return nil })
		cancel()
		if err != nil {
			require.ErrorIs(t, err, context.DeadlineExceeded)
			gaveUp++
		}
		r.Key() // the answer came meanwhile
	}
	assert.Positive(t, gaveUp, "some gave up waiting for the host")
	assert.Equal(t, 0, e.queue.pending())
}

func TestCapabilitiesProbe(t *testing.T) {
	e := New(local.New(), Options{Cwd: "/", Home: "/"})
	c, err := e.Capabilities(t.Context())
	require.NoError(t, err)
	assert.NotEmpty(t, c.Home)
	assert.NotEmpty(t, c.TmpDir)
	assert.NotEmpty(t, c.Bash, "this machine has bash")
}
