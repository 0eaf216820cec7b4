package env

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

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
	var mu sync.Mutex
	var order []int
	var wg sync.WaitGroup
	// Start the goroutines in reverse: they still run in reservation order.
	for i := len(rs) - 1; i >= 0; i-- {
		wg.Go(func() {
			require.NoError(t, rs[i].Do(ctx, func() error {
				mu.Lock()
				order = append(order, i)
				mu.Unlock()
				return nil
			}))
		})
	}
	wg.Wait()
	for i := range order {
		assert.Equal(t, i, order[i])
	}
	assert.Equal(t, 0, e.queue.pending(), "idle entries are removed")
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
	assert.ErrorIs(t, second.Do(cctx, func() error { t.Error("cancelled reservation ran"); return nil }), context.Canceled)

	firstDone := make(chan struct{})
	ran := make(chan struct{})
	thirdReturned := make(chan error, 1)
	go func() {
		thirdReturned <- third.Do(ctx, func() error {
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
	require.NoError(t, first.Do(ctx, func() error { close(firstDone); return nil }))
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
	require.NoError(t, b.Do(ctx, func() error { close(done); return nil }))
	<-done
}

func TestCapabilitiesProbe(t *testing.T) {
	e := New(local.New(), Options{Cwd: "/", Home: "/"})
	c, err := e.Capabilities(t.Context())
	require.NoError(t, err)
	assert.NotEmpty(t, c.Home)
	assert.NotEmpty(t, c.TmpDir)
	assert.NotEmpty(t, c.Bash, "this machine has bash")
}
