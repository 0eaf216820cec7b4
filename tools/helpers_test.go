package tools_test

import (
	"encoding/json"
	"flag"
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

var update = flag.Bool("update", false, "rewrite golden files")

// fixture is a local environment rooted in a fresh directory.
type fixture struct {
	t    *testing.T
	root string
	env  *env.ExecutionEnv
	defs []tools.Definition
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	root, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	home := filepath.Join(root, "home")
	require.NoError(t, os.MkdirAll(home, 0o755))
	e := env.New(local.New(), env.Options{Name: "local", Cwd: root, Home: home})
	return &fixture{t: t, root: root, env: e, defs: tools.Definitions(e, tools.Options{})}
}

func (f *fixture) path(rel string) string { return filepath.Join(f.root, rel) }

func (f *fixture) write(rel, content string) {
	f.t.Helper()
	p := f.path(rel)
	require.NoError(f.t, os.MkdirAll(filepath.Dir(p), 0o755))
	require.NoError(f.t, os.WriteFile(p, []byte(content), 0o644))
}

// call runs one tool through the loop's prepare → execute → finalize.
func (f *fixture) call(name string, args any) *loop.ToolResultMessage {
	f.t.Helper()
	var raw []byte
	if s, ok := args.(string); ok {
		raw = []byte(s)
	} else {
		var err error
		raw, err = json.Marshal(args)
		require.NoError(f.t, err)
	}
	return loop.ExecuteTool(f.t.Context(), loop.Config{Tools: tools.WrapAll(f.defs)}, &loop.ToolCall{ID: "t", Name: name, Arguments: raw}, nil)
}

func text(m *loop.ToolResultMessage) string { return m.Content.Text() }

func golden(t *testing.T, name string, got string) {
	t.Helper()
	p := filepath.Join("testdata", name)
	if *update {
		require.NoError(t, os.WriteFile(p, []byte(got), 0o644))
	}
	want, err := os.ReadFile(p)
	require.NoError(t, err, "run go test ./tools -update to create %s", p)
	assert.Equal(t, string(want), got)
}

// edits builds edit arguments from oldText/newText pairs.
func edits(path string, pairs ...string) map[string]any {
	var es []map[string]string
	for i := 0; i < len(pairs); i += 2 {
		es = append(es, map[string]string{"oldText": pairs[i], "newText": pairs[i+1]})
	}
	return map[string]any{"path": path, "edits": es}
}
