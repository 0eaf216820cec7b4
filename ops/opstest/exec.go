package opstest

import (
	"bytes"
	"context"
	"crypto/rand"
	"fmt"
	"io/fs"
	"path"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pi-remote/pi-remote/ops"

	"github.com/pi-remote/pi-remote/internal/slowio"
)

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
	t.Run("the command's signals are not ignored", func(t *testing.T) {
		// A shell that ignored SIGPIPE or SIGHUP would survive them and
		// print its line: `yes | head` would then run for ever.
		got := run(t, o, `sh -c 'kill -s PIPE $$; echo PIPE ignored'; sh -c 'kill -s HUP $$; echo HUP ignored'; echo done`)
		assert.NotContains(t, got, "ignored")
		assert.True(t, strings.HasSuffix(got, "done\n"), "%q", got) // (after the shell's "Hangup", if it says so)
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
	t.Run("a script longer than one argument may be", func(t *testing.T) {
		// Linux refuses a single argument over 128 KiB (E2BIG).
		long := strings.Repeat("a", 300<<10)
		got := run(t, o, "x='"+long+"'\necho \"${#x} $1\"; f() { echo \"fn $1\"; }; f ok")
		assert.Equal(t, fmt.Sprintf("%d \nfn ok\n", len(long)), got)
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
	t.Run("a background child's output stays with its command", func(t *testing.T) {
		// A returns ops.GraceAfterExit after its exit; its child writes
		// while B runs. The child waits 2 s, not just past the grace: on
		// a host whose load is many times its cores, the waiter may see
		// A's end and set its grace timer a second later.
		assert.Equal(t, "A-done\n", run(t, o, "(sleep 2; echo LEAKED-FROM-A) & echo A-done"))
		assert.Equal(t, "B-done\n", run(t, o, "sleep 3; echo B-done"), "nothing of the first command's child")
	})
	t.Run("a slow reader gets all of the output", func(t *testing.T) {
		// The command is done long before its output is read: the reader
		// takes 10 ms a write, and 150 ms a write over the last 200 KB, so
		// what a pipe or a channel still holds when the command exits
		// takes longer than ops.GraceAfterExit to be read. (A slow link,
		// where a remote host's 2 MB channel window matters, is
		// integration's TestSlowLinkGetsAllOutput.)
		const lines = 400000 // 2.6 MB
		total := 0
		for i := 1; i <= lines; i++ {
			total += len(fmt.Sprint(i)) + 1
		}
		w := &slowio.Writer{Pause: 10 * time.Millisecond, SlowAfter: total - 200<<10, SlowPause: 150 * time.Millisecond}
		require.NoError(t, o.Exec(ctx, ops.Command{Script: fmt.Sprintf("awk 'BEGIN { for (i = 1; i <= %d; i++) print i }'; echo END-MARKER", lines), Output: w}))
		out := w.String()
		require.Equal(t, lines+1, strings.Count(out, "\n"), "every line arrived")
		assert.True(t, strings.HasSuffix(out, fmt.Sprintf("\n%d\nEND-MARKER\n", lines)), "ends with %q", out[max(0, len(out)-40):])
	})
	t.Run("SaveOutput keeps long output on the host", func(t *testing.T) {
		for _, tc := range []struct {
			name, script string
			saved        bool
		}{
			{"short", "echo one; echo two", false},
			{"over the lines", "i=0; while [ $i -lt 150 ]; do echo line$i; i=$((i+1)); done", true},
			{"over the bytes", "awk 'BEGIN { for (i = 0; i < 3000; i++) printf \"x\" }'", true},
			{"a last line without newline counts", "i=0; while [ $i -lt 100 ]; do echo line$i; i=$((i+1)); done; printf tail", true},
			{"exactly at the limit", "i=0; while [ $i -lt 100 ]; do echo line$i; i=$((i+1)); done", false},
		} {
			t.Run(tc.name, func(t *testing.T) {
				save := &ops.SaveOutput{Path: path.Join(root, "saved-"+strings.ReplaceAll(tc.name, " ", "-")), OverBytes: 2000, OverLines: 100}
				var out bytes.Buffer
				require.NoError(t, o.Exec(ctx, ops.Command{Script: tc.script, Output: &out, SaveOutput: save}))
				assert.Equal(t, tc.saved, save.Saved)
				_, err := o.Stat(ctx, save.Path)
				if tc.saved {
					require.NoError(t, err)
					assert.Equal(t, out.String(), read(t, o, save.Path))
					assert.Equal(t, "600", strings.TrimSpace(run(t, o, "ls -ln "+q(save.Path)+" | awk '{print $1}' | sed 's/^-rw-------.*/600/'")))
				} else {
					assert.ErrorIs(t, err, fs.ErrNotExist, "no file for short output")
				}
			})
		}
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

// procsWith lists the processes on the host whose command line contains
// "sleep marker", reading /proc so that no ps is needed. The scan's own
// errors (a process that exits between the glob and the read is normal on
// a busy host) go to /dev/null, and only lines the scan prints on purpose
// count: nothing else can be mistaken for a surviving process.
func procsWith(ctx context.Context, o ops.ExecOperations, marker string) ([]string, error) {
	script := fmt.Sprintf(`exec 2>/dev/null
for p in /proc/[0-9]*; do
  [ "$p" = "/proc/$$" ] && continue
  c=$(tr '\0' ' ' < "$p/cmdline") || continue
  case "$c" in *'sleep %s'*) echo "proc ${p#/proc/}: $c";; esac
done`, marker)
	var out bytes.Buffer
	if err := o.Exec(ctx, ops.Command{Script: script, Output: &out}); err != nil {
		return nil, err
	}
	var procs []string
	for line := range strings.Lines(out.String()) {
		if strings.HasPrefix(line, "proc ") {
			procs = append(procs, strings.TrimSpace(line))
		}
	}
	return procs, nil
}

func killMarker(o ops.ExecOperations, marker string) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	// Best effort cleanup of a test's own sleeper; failures only leak a sleep.
	o.Exec(ctx, ops.Command{Script: fmt.Sprintf(`exec 2>/dev/null; for p in /proc/[0-9]*; do [ "$p" = "/proc/$$" ] && continue; case "$(tr '\0' ' ' < $p/cmdline)" in *'sleep %s'*) kill ${p#/proc/};; esac; done`, marker)})
}

func testKill(t *testing.T, h Harness) {
	o, _ := h.New(t)
	t.Run("cancel just after another command", func(t *testing.T) {
		// The group to kill is the second command's, not the first's.
		for range 5 {
			marker := uniqueSleep()
			t.Cleanup(func() { killMarker(o, marker) })
			run(t, o, "echo first")
			ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
			err := o.Exec(ctx, ops.Command{Script: fmt.Sprintf("sleep %s & sleep %s", marker, marker)})
			cancel()
			require.ErrorIs(t, err, context.DeadlineExceeded)
			require.EventuallyWithT(t, func(c *assert.CollectT) {
				procs, err := procsWith(t.Context(), o, marker)
				require.NoError(c, err)
				assert.Empty(c, procs, "every process of the group is gone")
			}, 10*time.Second, 100*time.Millisecond)
		}
	})
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
				// Watched over another connection: on a host that allows
				// one session per connection, the command holds this one's.
				observer, _ := h.New(t)
				watcher.Go(func() {
					// Cancel once the processes exist.
					for ctx.Err() == nil {
						if procs, err := procsWith(t.Context(), observer, marker); err == nil && len(procs) >= 3 {
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
