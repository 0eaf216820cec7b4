package ssh

import (
	"context"
	"errors"
	"io"

	"github.com/pi-remote/pi-remote/ops/ssh/internal/hostproto"
)

// ErrProtocol is errProtocol for the tests of package ssh_test.
var ErrProtocol = errProtocol

// RequestForTest sends the request fn words on a server of h's connection,
// as every request goes, whatever fn names (a function the server does not
// have, too), and returns its answer's status.
func RequestForTest(ctx context.Context, h *Host, fn string, words ...string) (string, error) {
	c, err := h.ready(ctx)
	if err != nil {
		return "", err
	}
	s, err := c.server(ctx, false)
	if err != nil {
		return "", err
	}
	st, err := c.serve(ctx, s, query, io.Discard, call(fn, words...))
	return st.Text, err
}

// call is the request fn words, whatever fn names: the tests send requests
// the server does not have, and words no builder of hostproto would.
func call(fn string, words ...string) hostproto.Request {
	return hostproto.Request{Name: fn, Args: words}
}

// readAttach is readFrames for the tests of attach_jobs' and run_jobs'
// answers, with the statuses as the server sent them.
func readAttach(s *server, out func(id string) io.Writer, end func(id, status string)) (string, error) {
	st, err := readFrames(s, hostproto.Request{Name: "attach_jobs"}, out, func(id string, st hostproto.Status) { end(id, st.Text) })
	return st.Text, err
}

// DropForTest resets h's connection as a network reset would: the host
// sees the reset, the client a dead connection.
func DropForTest(h *Host) {
	h.mu.Lock()
	c := h.cur
	h.mu.Unlock()
	if c != nil {
		c.abort(errors.New("connection reset by the test"))
	}
}
