package ssh

import (
	"context"
	"io"
)

// ErrProtocol is errProtocol for the tests of package ssh_test.
var ErrProtocol = errProtocol

// RequestForTest sends the request fn words on a server of h's connection,
// as every request goes, whatever fn names (a function server.sh does not
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
	return c.serve(ctx, s, query, io.Discard, call(fn, words...))
}
