package tools_test

import (
	"context"
	"fmt"
	"io"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/pi-remote/pi-remote/env"
	"github.com/pi-remote/pi-remote/loop"
	"github.com/pi-remote/pi-remote/ops"
	"github.com/pi-remote/pi-remote/ops/local"
	"github.com/pi-remote/pi-remote/tools"
)

// lostFS reports a dead transport for every operation.
type lostFS struct{ *local.FS }

func (lostFS) Stat(ctx context.Context, name string) (os.FileInfo, error) {
	return nil, fmt.Errorf("ssh devbox: stat %s: %w", name, ops.ErrConnectionLost)
}

func (lostFS) Open(ctx context.Context, name string) (io.ReadCloser, error) {
	return nil, fmt.Errorf("ssh devbox: open %s: %w", name, ops.ErrConnectionLost)
}

func TestConnectionLostIsAnErrorResult(t *testing.T) {
	e := env.New(lostFS{local.New()}, env.Options{Cwd: "/", Home: "/"})
	defs := tools.Definitions(e, tools.Options{})
	m := loop.ExecuteTool(t.Context(), loop.Config{Tools: tools.WrapAll(defs)}, &loop.ToolCall{ID: "1", Name: "read", Arguments: []byte(`{"path":"/etc/hostname"}`)}, nil)
	assert.True(t, m.IsError)
	assert.Contains(t, text(m), "Connection to the host was lost")
	assert.Contains(t, text(m), "The next call reconnects")
}
