package opstest

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"fmt"
	"io"
	"io/fs"
	"math/big"
	"path"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pi-remote/pi-remote/ops"
)

// spawnDeadline bounds every wait of the Spawn tests for something to
// happen on the host: generous, for a loaded machine.
const spawnDeadline = 30 * time.Second

func testSpawn(t *testing.T, h Harness) {
	o, root := h.New(t)
	if _, ok := o.(ops.Spawner); !ok {
		t.Skip("the backend has no Spawner ability")
	}
	ctx := t.Context()

	t.Run("echo round trip", func(t *testing.T) {
		p := spawn(t, o, ops.SpawnCommand{Args: []string{"sh", "-c", `while IFS= read -r l; do printf 'got %s\n' "$l"; done`}})
		out := bufio.NewReader(p.Stdout())
		for _, line := range []string{"one", "two words", "it's \"quoted\""} {
			_, err := io.WriteString(p.Stdin(), line+"\n")
			require.NoError(t, err)
			got, err := out.ReadString('\n')
			require.NoError(t, err)
			assert.Equal(t, "got "+line+"\n", got)
		}
		require.NoError(t, p.Stdin().Close())
		require.NoError(t, p.Wait())
		rest, err := io.ReadAll(out)
		require.NoError(t, err, "the end of stdout is io.EOF")
		assert.Empty(t, rest)
	})

	t.Run("large data both ways", func(t *testing.T) {
		p := spawn(t, o, ops.SpawnCommand{Args: []string{"cat"}})
		data := make([]byte, 8<<20)
		rand.Read(data)
		var werr error
		var wg sync.WaitGroup
		wg.Go(func() {
			_, werr = p.Stdin().Write(data)
			if werr == nil {
				werr = p.Stdin().Close()
			}
		})
		got, err := io.ReadAll(p.Stdout())
		wg.Wait()
		require.NoError(t, werr)
		require.NoError(t, err)
		assert.Equal(t, len(data), len(got))
		assert.Equal(t, sha256.Sum256(data), sha256.Sum256(got), "what came back is what went")
		require.NoError(t, p.Wait())
	})

	t.Run("stderr apart from stdout", func(t *testing.T) {
		var stderr lockedBuffer
		p := spawn(t, o, ops.SpawnCommand{Args: []string{"sh", "-c", "echo to-stderr >&2; echo to-stdout"}, Stderr: &stderr})
		got, err := io.ReadAll(p.Stdout())
		require.NoError(t, err)
		require.NoError(t, p.Wait())
		assert.Equal(t, "to-stdout\n", string(got))
		assert.Equal(t, "to-stderr\n", stderr.String())
	})

	t.Run("dir args and env", func(t *testing.T) {
		p := spawn(t, o, ops.SpawnCommand{
			Args: []string{"sh", "-c", `pwd; printf '%s|' "$@"; echo "$PI_A|$PI_B"`, "sh", "a b", "it's", "$HOME", "x\ny"},
			Dir:  root, Env: []string{"PI_A=x y", "PI_B=$(nope)"},
		})
		got, err := io.ReadAll(p.Stdout())
		require.NoError(t, err)
		require.NoError(t, p.Wait())
		assert.Equal(t, root+"\na b|it's|$HOME|x\ny|x y|$(nope)\n", string(got))
	})

	t.Run("exits on its own", func(t *testing.T) {
		p := spawn(t, o, ops.SpawnCommand{Args: []string{"sh", "-c", "echo bye; exit 3"}})
		got, err := io.ReadAll(p.Stdout())
		require.NoError(t, err)
		assert.Equal(t, "bye\n", string(got))
		var ee *ops.ExitError
		require.ErrorAs(t, p.Wait(), &ee)
		assert.Equal(t, 3, ee.Code)
		require.ErrorAs(t, p.Wait(), &ee, "Wait again says the same")
		// Killing a process that has exited does nothing.
		require.ErrorAs(t, p.Kill(), &ee)
		assert.Equal(t, 3, ee.Code)
	})

	t.Run("missing program or dir", func(t *testing.T) {
		_, err := o.(ops.Spawner).Spawn(ctx, ops.SpawnCommand{Args: []string{"pi-remote-no-such-program"}})
		assert.ErrorIs(t, err, fs.ErrNotExist)
		_, err = o.(ops.Spawner).Spawn(ctx, ops.SpawnCommand{Args: []string{"sh", "-c", "true"}, Dir: path.Join(root, "nope")})
		assert.ErrorIs(t, err, fs.ErrNotExist)
		// And the helper refuses nothing to run.
		_, err = ops.Spawn(ctx, o, ops.SpawnCommand{})
		assert.Error(t, err)
	})

	t.Run("kill leaves no process", func(t *testing.T) {
		token := sleepToken(t)
		p := spawn(t, o, ops.SpawnCommand{Args: []string{"sh", "-c", "sleep " + token + " & echo started; sleep " + token}})
		awaitLine(t, p, "started")
		awaitProcesses(t, o, isArgs("sleep "+token), 2)
		var ee *ops.ExitError
		require.ErrorAs(t, p.Kill(), &ee)
		awaitProcesses(t, o, isArgs("sleep "+token), 0)
	})

	t.Run("ctx cancel kills", func(t *testing.T) {
		token := sleepToken(t)
		pctx, cancel := context.WithCancel(ctx)
		p, err := o.(ops.Spawner).Spawn(pctx, ops.SpawnCommand{Args: []string{"sh", "-c", "sleep " + token + " & echo started; sleep " + token}})
		require.NoError(t, err)
		awaitLine(t, p, "started")
		awaitProcesses(t, o, isArgs("sleep "+token), 2)
		cancel()
		require.Error(t, p.Wait())
		awaitProcesses(t, o, isArgs("sleep "+token), 0)
	})

	t.Run("closing stdin stops a process that ignores it", func(t *testing.T) {
		// One ends at SIGTERM; one ignores that too and ends at SIGKILL.
		for _, script := range []string{"echo started; sleep %s", "trap '' TERM; echo started; sleep %s"} {
			token := sleepToken(t)
			p := spawn(t, o, ops.SpawnCommand{Args: []string{"sh", "-c", fmt.Sprintf(script, token)}, StopGrace: time.Second})
			awaitLine(t, p, "started")
			awaitProcesses(t, o, isArgs("sleep "+token), 1)
			require.NoError(t, p.Stdin().Close())
			var ee *ops.ExitError
			require.ErrorAs(t, p.Wait(), &ee, script)
			assert.Contains(t, []int{143, 137}, ee.Code, script)
			awaitProcesses(t, o, isArgs("sleep "+token), 0)
		}
	})

	t.Run("its group ends with it", func(t *testing.T) {
		token := sleepToken(t)
		p := spawn(t, o, ops.SpawnCommand{Args: []string{"sh", "-c", "sleep " + token + " >/dev/null 2>&1 & read x; exit 0"}, StopGrace: time.Second})
		awaitProcesses(t, o, isArgs("sleep "+token), 1)
		_, err := io.WriteString(p.Stdin(), "go\n")
		require.NoError(t, err)
		require.NoError(t, p.Wait())
		awaitProcesses(t, o, isArgs("sleep "+token), 0)
	})

	if h.Drop == nil {
		return
	}
	t.Run("connection drop", func(t *testing.T) {
		token := sleepToken(t)
		p := spawn(t, o, ops.SpawnCommand{Args: []string{"sh", "-c", `while IFS= read -r l; do echo "$l"; done; exit 0`, token}})
		out := bufio.NewReader(p.Stdout())
		_, err := io.WriteString(p.Stdin(), "before\n")
		require.NoError(t, err)
		line, err := out.ReadString('\n')
		require.NoError(t, err)
		require.Equal(t, "before\n", line)
		awaitProcesses(t, o, endsWith(" "+token), 1)

		h.Drop(t, o)
		err = p.Wait()
		require.ErrorIs(t, err, ops.ErrConnectionLost)
		_, err = io.ReadAll(out)
		assert.ErrorIs(t, err, ops.ErrConnectionLost, "stdout ends with the loss, not a clean EOF")
		assert.ErrorIs(t, p.Kill(), ops.ErrConnectionLost)

		// A new process, over a new connection; the old one is gone.
		q := spawn(t, o, ops.SpawnCommand{Args: []string{"cat"}})
		_, err = io.WriteString(q.Stdin(), "after\n")
		require.NoError(t, err)
		line, err = bufio.NewReader(q.Stdout()).ReadString('\n')
		require.NoError(t, err)
		assert.Equal(t, "after\n", line)
		require.NoError(t, q.Stdin().Close())
		require.NoError(t, q.Wait())
		awaitProcesses(t, o, endsWith(" "+token), 0)
	})
}

// spawn starts cmd on o, killed when the test ends.
func spawn(t *testing.T, o ops.Operations, cmd ops.SpawnCommand) ops.Process {
	t.Helper()
	p, err := ops.Spawn(t.Context(), o, cmd)
	require.NoError(t, err)
	t.Cleanup(func() { p.Kill() })
	return p
}

// sleepToken is a number of seconds no other process sleeps: "sleep
// TOKEN" in a process list is this test's.
func sleepToken(t *testing.T) string {
	t.Helper()
	n, err := rand.Int(rand.Reader, big.NewInt(1e9))
	require.NoError(t, err)
	return fmt.Sprint(1e9 + n.Int64())
}

// awaitLine reads p's stdout up to want's line.
func awaitLine(t *testing.T, p ops.Process, want string) {
	t.Helper()
	got := make(chan string, 1)
	go func() {
		line, _ := bufio.NewReader(p.Stdout()).ReadString('\n')
		got <- line
	}()
	select {
	case line := <-got:
		require.Equal(t, want+"\n", line)
	case <-time.After(spawnDeadline):
		t.Fatalf("no line %q from the process", want)
	}
}

// isArgs matches a process whose command line is args.
func isArgs(args string) func(string) bool {
	return func(s string) bool { return s == args }
}

// endsWith matches a process whose command line ends with suffix.
func endsWith(suffix string) func(string) bool {
	return func(s string) bool { return strings.HasSuffix(s, suffix) }
}

// awaitProcesses waits until the host's process list has n processes
// whose command line matches.
func awaitProcesses(t *testing.T, o ops.Operations, match func(args string) bool, n int) {
	t.Helper()
	deadline := time.Now().Add(spawnDeadline)
	for {
		got := hostProcesses(t, o, match)
		if len(got) == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d processes on the host match, want %d:\n%s", len(got), n, strings.Join(got, "\n"))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// hostProcesses lists the processes of the host whose command line
// matches, with ps -e -o (POSIX; BusyBox's takes it too).
func hostProcesses(t *testing.T, o ops.Operations, match func(string) bool) []string {
	t.Helper()
	var out bytes.Buffer
	err := o.Exec(t.Context(), ops.Command{Script: "ps -e -o pid= -o args=", Output: &out})
	require.NoError(t, err, "ps: %s", out.String())
	var found []string
	for line := range strings.Lines(out.String()) {
		_, args, _ := strings.Cut(strings.TrimSpace(line), " ")
		if match(strings.TrimSpace(args)) {
			found = append(found, strings.TrimSpace(line))
		}
	}
	return found
}

// lockedBuffer is a bytes.Buffer safe for a writer and a reader.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
