package toolstest

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pi-remote/pi-remote/internal/shellquote"
	"github.com/pi-remote/pi-remote/loop"
	"github.com/pi-remote/pi-remote/ops"
	"github.com/pi-remote/pi-remote/tools"
)

func testBash(t *testing.T, h Harness) {
	f := newFixture(t, h)
	t.Run("output and cwd", func(t *testing.T) {
		assert.Equal(t, f.root+"\n", f.ok("bash", map[string]any{"command": "pwd"}))
	})
	t.Run("bash when present", func(t *testing.T) {
		assert.Equal(t, "ok\n", f.ok("bash", map[string]any{"command": `[[ 1 == 1 ]] && echo ok`}))
	})
	t.Run("merged in order", func(t *testing.T) {
		assert.Equal(t, "out\nerr\nout2\n", f.ok("bash", map[string]any{"command": "echo out; echo err >&2; echo out2"}))
	})
	t.Run("no output", func(t *testing.T) {
		assert.Equal(t, "(no output)", f.ok("bash", map[string]any{"command": "true"}))
	})
	t.Run("non-zero exit", func(t *testing.T) {
		out := f.fails("bash", map[string]any{"command": "echo partial; exit 3"})
		assert.Equal(t, "partial\n\n[Command exited with code 3.]", out)
		m := f.call("bash", map[string]any{"command": "exit 3"})
		assert.Equal(t, 3, *m.Details.(tools.BashDetails).ExitCode)
	})
	t.Run("non-interactive", func(t *testing.T) {
		out := f.ok("bash", map[string]any{"command": `echo "$GIT_TERMINAL_PROMPT $PAGER $GIT_EDITOR $DEBIAN_FRONTEND"; cat; read x || echo stdin-closed; [ -t 1 ] || echo no-tty`})
		assert.Equal(t, "0 cat true noninteractive\nstdin-closed\nno-tty\n", out)
	})
	t.Run("timeout kills the group", func(t *testing.T) {
		marker := fmt.Sprintf("30%d.5", time.Now().UnixNano()%100000)
		start := time.Now()
		out := f.fails("bash", map[string]any{"command": fmt.Sprintf("echo begun; sleep %s & sleep %s", marker, marker), "timeout": 1})
		assert.Less(t, time.Since(start), 20*time.Second)
		assert.Contains(t, out, "begun")
		assert.Contains(t, out, "Command timed out after 1s.")
		require.EventuallyWithT(t, func(c *assert.CollectT) {
			assert.NotContains(c, processTable(f), "sleep "+marker)
		}, 10*time.Second, 50*time.Millisecond)
	})
	t.Run("abort", func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		go func() {
			time.Sleep(200 * time.Millisecond) // let the command start
			cancel()
		}()
		m := loop.ExecuteTool(ctx, loop.Config{Tools: tools.WrapAll(f.defs)}, &loop.ToolCall{ID: "1", Name: "bash", Arguments: []byte(`{"command":"echo started; sleep 60"}`)}, nil)
		assert.True(t, m.IsError)
		assert.Contains(t, text(m), "Command aborted.")
	})
	t.Run("background child does not hang", func(t *testing.T) {
		start := time.Now()
		out := f.ok("bash", map[string]any{"command": "sleep 5 & echo launched"})
		assert.Equal(t, "launched\n", out)
		assert.Less(t, time.Since(start), 4*time.Second)
	})
	t.Run("tail kept, full output spilled on the host", func(t *testing.T) {
		m := f.call("bash", map[string]any{"command": "seq 1 5000"})
		require.False(t, m.IsError)
		out := text(m)
		assert.True(t, strings.HasPrefix(out, "3001\n"), out[:20])
		d := m.Details.(tools.BashDetails)
		// (The result's last lines say why, when it was not saved.)
		require.NotEmpty(t, d.FullOutputPath, "no full output path; the result ends %q", out[max(0, len(out)-200):])
		assert.Contains(t, out, "\n5000\n\n[Showing lines 3001-5000 of 5000. Full output (")
		assert.Contains(t, out, d.FullOutputPath)
		full := readHost(t, f.o, d.FullOutputPath)
		t.Cleanup(func() { f.run("rm -f " + shellquote.Quote(d.FullOutputPath)) })
		assert.Equal(t, 5000, strings.Count(string(full), "\n"))
		assert.True(t, strings.HasPrefix(string(full), "1\n2\n"))
		page := f.ok("read", map[string]any{"path": d.FullOutputPath, "offset": 10, "limit": 2})
		assert.True(t, strings.HasPrefix(page, "10\n11\n"), "read pages through the saved output")
	})
	t.Run("byte limit on a long line", func(t *testing.T) {
		m := f.call("bash", map[string]any{"command": "head -c 70000 /dev/zero | tr '\\0' a; echo"})
		require.False(t, m.IsError)
		d := m.Details.(tools.BashDetails)
		t.Cleanup(func() { f.run("rm -f " + shellquote.Quote(d.FullOutputPath)) })
		assert.Contains(t, text(m), "Showing the last 50.0KB of line 1")
	})
	t.Run("progress updates", func(t *testing.T) {
		var updates []string
		emit := func(e loop.Event) {
			if u, ok := e.(loop.ToolExecutionUpdate); ok {
				updates = append(updates, text(&loop.ToolResultMessage{Content: u.PartialResult.Content}))
			}
		}
		// (Output streams once the command has run for its stream delay,
		// up to a second when many commands are in flight: the first
		// line is alone for longer than that.)
		m := loop.ExecuteTool(t.Context(), loop.Config{Tools: tools.WrapAll(f.defs)}, &loop.ToolCall{ID: "1", Name: "bash", Arguments: []byte(`{"command":"echo one; sleep 1.6; echo two; sleep 0.4; echo three"}`)}, emit)
		require.False(t, m.IsError)
		require.NotEmpty(t, updates)
		assert.Equal(t, "one\n", updates[0], "each update carries the current tail")
	})
	t.Run("invalid", func(t *testing.T) {
		f.fails("bash", map[string]any{"command": "true", "timeout": 0}, `field "timeout"`)
		f.fails("bash", map[string]any{"command": "true", "timeout": 999999}, "Invalid timeout")
		f.fails("bash", map[string]any{}, "command")
	})
}

// processTable returns the command lines of the host's processes (read
// from /proc on the host, so no ps is needed).
// It does not fail the test itself: it runs inside EventuallyWithT.
func processTable(f *fixture) string {
	var out strings.Builder
	f.o.Exec(f.t.Context(), ops.Command{Output: &out,
		Script: `exec 2>/dev/null; for p in /proc/[0-9]*; do [ "$p" = "/proc/$$" ] || tr '\0' ' ' < "$p/cmdline"; echo; done`})
	return out.String()
}
