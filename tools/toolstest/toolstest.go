// Package toolstest is the behaviour suite of the seven tools, run against
// any backend whose host shares this machine's filesystem: ops/local, and
// ops/ssh talking to an sshd on a loopback port (integration tests). The
// fixtures are written with package os; the tools under test reach them
// through the backend.
//
//	func TestTools(t *testing.T) {
//		toolstest.Run(t, toolstest.Harness{New: func(t *testing.T) ops.Operations { return local.New() }})
//	}
package toolstest

import (
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pi-remote/pi-remote/env"
	"github.com/pi-remote/pi-remote/loop"
	"github.com/pi-remote/pi-remote/ops"
	"github.com/pi-remote/pi-remote/tools"
)

// Harness connects the suite to a backend.
type Harness struct {
	// New returns a backend acting on this machine's filesystem (each call
	// a separate one: a new connection for remote backends). It registers
	// its own cleanup with t.
	New func(t *testing.T) ops.Operations
	// Update rewrites the golden files instead of comparing.
	Update bool
}

// Run runs every table as subtests of t.
func Run(t *testing.T, h Harness) {
	for _, tc := range []struct {
		name string
		f    func(*testing.T, Harness)
	}{
		{"Read", testRead},
		{"ReadImagesAndBinaries", testReadImagesAndBinaries},
		{"ReadHeadOfHugeFileIsBounded", testReadHeadOfHugeFileIsBounded},
		{"Edit", testEdit},
		{"EditNeverClobbersConcurrentChange", testEditNeverClobbersConcurrentChange},
		{"Write", testWrite},
		{"Bash", testBash},
		{"SameFileEditsApplyInCallOrder", testSameFileEditsApplyInCallOrder},
		{"NoLostUpdates", testNoLostUpdates},
		{"EnvironmentsHaveSeparateQueues", testEnvironmentsHaveSeparateQueues},
		{"BadInputLeavesFilesAlone", testBadInputLeavesFilesAlone},
		{"Grep", testGrep},
		{"Find", testFind},
		{"Ls", testLs},
	} {
		t.Run(tc.name, func(t *testing.T) { tc.f(t, h) })
	}
}

// fixture is an environment rooted in a fresh directory.
type fixture struct {
	t    *testing.T
	h    Harness
	root string
	env  *env.ExecutionEnv
	defs []tools.Definition
}

func newFixture(t *testing.T, h Harness) *fixture {
	t.Helper()
	root, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	home := filepath.Join(root, "home")
	require.NoError(t, os.MkdirAll(home, 0o755))
	e := env.New(h.New(t), env.Options{Name: "host", Cwd: root, Home: home})
	return &fixture{t: t, h: h, root: root, env: e, defs: tools.Definitions(e, tools.Options{})}
}

func (f *fixture) path(rel string) string { return filepath.Join(f.root, rel) }

func (f *fixture) write(rel, content string) {
	f.t.Helper()
	p := f.path(rel)
	require.NoError(f.t, os.MkdirAll(filepath.Dir(p), 0o755))
	require.NoError(f.t, os.WriteFile(p, []byte(content), 0o644))
}

func (f *fixture) read(rel string) string {
	f.t.Helper()
	b, err := os.ReadFile(f.path(rel))
	require.NoError(f.t, err)
	return string(b)
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

func (f *fixture) ok(name string, args any) string {
	f.t.Helper()
	m := f.call(name, args)
	require.False(f.t, m.IsError, "%s failed: %s", name, text(m))
	return text(m)
}

func (f *fixture) fails(name string, args any, contains ...string) string {
	f.t.Helper()
	m := f.call(name, args)
	require.True(f.t, m.IsError, "%s should fail, got: %s", name, text(m))
	for _, c := range contains {
		assert.Contains(f.t, text(m), c)
	}
	return text(m)
}

// golden compares got with testdata/name next to this file, so that the
// suite finds its goldens from any package that runs it.
func golden(t *testing.T, h Harness, name string, got string) {
	t.Helper()
	_, self, _, ok := runtime.Caller(0)
	require.True(t, ok)
	p := filepath.Join(filepath.Dir(self), "testdata", name)
	if h.Update {
		require.NoError(t, os.WriteFile(p, []byte(got), 0o644))
	}
	want, err := os.ReadFile(p)
	require.NoError(t, err, "run go test ./tools -update to create %s", p)
	assert.Equal(t, string(want), got)
}
