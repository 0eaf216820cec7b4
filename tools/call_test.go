package tools_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pi-remote/pi-remote/env"
	"github.com/pi-remote/pi-remote/loop"
	"github.com/pi-remote/pi-remote/ops/local"
	"github.com/pi-remote/pi-remote/tools"
)

// Call runs one tool through the whole pipeline: empty arguments are {},
// bad ones an error result, an inactive tool is refused, and its events
// reach emit.
func TestCall(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "a.txt"), []byte("hello\n"), 0o644))
	defs := tools.Definitions(env.New(local.New(), env.Options{Cwd: dir, Home: dir}), tools.Options{})
	cfg := loop.Config{Tools: tools.WrapAll(defs)}

	var events []string
	m := tools.Call(t.Context(), cfg, "read", []byte(`{"path":"a.txt"}`), func(e loop.Event) {
		b, err := loop.MarshalEvent(e)
		require.NoError(t, err)
		events = append(events, string(b))
	})
	assert.False(t, m.IsError)
	assert.Equal(t, "hello\n", m.Content.Text())
	assert.Len(t, events, 2, "start and end")

	m = tools.Call(t.Context(), cfg, "ls", nil, nil)
	assert.False(t, m.IsError, m.Content.Text())
	assert.Contains(t, m.Content.Text(), "a.txt", "no arguments are {}")

	m = tools.Call(t.Context(), cfg, "read", []byte(`{"path":`), nil)
	assert.True(t, m.IsError)
	assert.Contains(t, m.Content.Text(), "not valid JSON")

	cfg.Active = []string{"ls"}
	m = tools.Call(t.Context(), cfg, "read", []byte(`{"path":"a.txt"}`), nil)
	assert.True(t, m.IsError, "only the active tools run")
}
