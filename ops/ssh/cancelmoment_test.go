//go:build unix

package ssh_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pi-remote/pi-remote/ops"
	rssh "github.com/pi-remote/pi-remote/ops/ssh"
	"github.com/pi-remote/pi-remote/ops/ssh/sshtest"
)

// A command cancelled at any moment of its batch of one (before its
// waiter says it runs on, just after, once its output streams, once its
// server was asked to let go of it for a neighbour) is killed on the
// host before Exec returns, or at the latest a moment later, on a host
// of one or two sessions; the neighbour and the next command are served.
func TestCancelAtAnyMomentKills(t *testing.T) {
	t.Parallel()
	for _, sessions := range []int{1, 2} {
		t.Run(fmt.Sprintf("MaxSessions %d", sessions), func(t *testing.T) {
			t.Parallel()
			srv := sshtest.Start(t, sshtest.Options{})
			srv.SetMaxSessions(sessions)
			h := rssh.New(srv.Config(), rssh.HostOptions{MaxSessions: sessions})
			t.Cleanup(func() { h.Close() })
			require.NoError(t, h.Exec(t.Context(), ops.Command{Script: "true"}))
			arg := fmt.Sprintf("33.%06d", rand.IntN(1000000))
			t.Cleanup(func() {
				for _, pid := range sleepersOf(t, arg) {
					syscall.Kill(pid, syscall.SIGKILL)
				}
			})
			for _, pause := range []time.Duration{0, time.Millisecond, 10 * time.Millisecond, 50 * time.Millisecond, 150 * time.Millisecond, 400 * time.Millisecond, 800 * time.Millisecond} {
				neighbour := make(chan error, 1)
				var out strings.Builder
				go func() {
					neighbour <- h.Exec(t.Context(), ops.Command{Script: "sleep 0.3; echo neighbour", Output: &out})
				}()
				ctx, cancel := context.WithCancel(t.Context())
				done := make(chan error, 1)
				go func() {
					done <- h.Exec(ctx, ops.Command{Script: "echo started; sleep " + arg + "; echo never"})
				}()
				time.Sleep(pause)
				cancel()
				select {
				case err := <-done:
					require.ErrorIs(t, err, context.Canceled, "after %v", pause)
				case <-time.After(20 * time.Second):
					t.Fatalf("after %v: the cancelled call did not return", pause)
				}
				assert.Eventually(t, func() bool { return len(sleepersOf(t, arg)) == 0 }, 15*time.Second, 20*time.Millisecond, "after %v: killed on the host", pause)
				select {
				case err := <-neighbour:
					require.NoError(t, err, "after %v", pause)
					assert.Equal(t, "neighbour\n", out.String())
				case <-time.After(20 * time.Second):
					t.Fatalf("after %v: the neighbour did not return", pause)
				}
			}
			var out strings.Builder
			require.NoError(t, h.Exec(t.Context(), ops.Command{Script: "echo next", Output: &out}))
			assert.Equal(t, "next\n", out.String())
		})
	}
}

// sleepersOf lists the pids of the processes running `sleep arg`.
func sleepersOf(t *testing.T, arg string) []int {
	out, err := exec.Command("ps", "-eo", "pid=,args=").Output()
	require.NoError(t, err)
	var found []int
	for line := range strings.Lines(string(out)) {
		pid, args, _ := strings.Cut(strings.TrimSpace(line), " ")
		if strings.TrimSpace(args) == "sleep "+arg {
			n, _ := strconv.Atoi(pid)
			found = append(found, n)
		}
	}
	return found
}
