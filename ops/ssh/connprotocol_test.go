package ssh_test

import (
	"bytes"
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pi-remote/pi-remote/ops"
	rssh "github.com/pi-remote/pi-remote/ops/ssh"
	"github.com/pi-remote/pi-remote/ops/ssh/sshtest"
)

// An answer the client cannot match with its request closes the whole
// connection, not only the call: the call fails with the protocol error
// (it is not retried, as a lost connection would be); a command running
// on that connection goes on over a new one, as after a drop, and later
// calls get a new connection.
func TestProtocolErrorClosesTheConnection(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		fn    string
		words []string
	}{
		{"an unknown request", "no_such_function", nil},
		{"an unknown file function", "call", []string{"no_such_function"}},
		{"a malformed request", "run_jobs", []string{"60", "", "", "not-a-job-id", "true", "", "", "", "", "label"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := sshtest.Start(t, sshtest.Options{})
			h := rssh.New(srv.Config(), rssh.HostOptions{})
			t.Cleanup(func() { h.Close() })
			require.NoError(t, h.Exec(t.Context(), ops.Command{Script: "true"}))
			require.Equal(t, 1, srv.Connections())

			// A command in flight on the connection, its output streaming.
			out := &firstWrite{seen: make(chan struct{})}
			running := make(chan error, 1)
			go func() {
				running <- h.Exec(t.Context(), ops.Command{Script: "echo started; sleep 1; echo done", Output: out})
			}()
			select {
			case <-out.seen:
			case <-time.After(10 * time.Second):
				t.Fatal("the command's output did not start")
			}

			ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
			defer cancel()
			_, err := rssh.RequestForTest(ctx, h, tc.fn, tc.words...)
			require.ErrorIs(t, err, rssh.ErrProtocol)
			assert.NotErrorIs(t, err, ops.ErrConnectionLost, "the call is not retried")
			assert.NoError(t, ctx.Err(), "answered, not timed out")

			_, err = h.Stat(t.Context(), "/")
			require.NoError(t, err, "a later call gets a new connection")
			assert.Equal(t, 2, srv.Connections(), "the connection was closed")
			require.NoError(t, <-running, "the command went on over the new connection")
			assert.Equal(t, "started\ndone\n", out.String())
		})
	}
}

// firstWrite keeps what is written to it, and closes seen at the first
// write.
type firstWrite struct {
	mu   sync.Mutex
	buf  bytes.Buffer
	seen chan struct{}
	once sync.Once
}

func (w *firstWrite) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.once.Do(func() { close(w.seen) })
	return w.buf.Write(p)
}

func (w *firstWrite) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}
