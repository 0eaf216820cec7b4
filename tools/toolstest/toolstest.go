// Package toolstest is the behaviour suite of the seven tools, run against
// any backend: ops/local, ops/ssh to an in-process server and to a real
// sshd. Like the tools, it touches the host only through the backend:
// fixtures are written, read and arranged with ops calls.
//
//	func TestTools(t *testing.T) {
//		toolstest.Run(t, toolstest.Harness{New: func(t *testing.T) ops.Operations { return local.New() }})
//	}
package toolstest

import (
	"context"
	"embed"
	"encoding/json"
	"io"
	"path"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pi-remote/pi-remote/env"
	"github.com/pi-remote/pi-remote/internal/shellquote"
	"github.com/pi-remote/pi-remote/loop"
	"github.com/pi-remote/pi-remote/ops"
	"github.com/pi-remote/pi-remote/tools"
)

// Harness connects the suite to a backend.
type Harness struct {
	// New returns a backend (each call a separate one, on the same host: a
	// new connection for remote backends). It registers its own cleanup
	// with t.
	New func(t *testing.T) ops.Operations
	// RequireEngines fails the search tests when the host lacks rg or fd
	// (CI installs both) instead of testing only the POSIX fallbacks.
	RequireEngines bool
	// UpdateGolden, when set, rewrites a golden file (testdata/NAME in this
	// package) with what the test produced.
	UpdateGolden func(name, content string)
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
		{"BatchSeesEarlierMutations", testBatchSeesEarlierMutations},
		{"IndependentCallsDoNotWait", testIndependentCallsDoNotWait},
		{"BadInputLeavesFilesAlone", testBadInputLeavesFilesAlone},
		{"Grep", testGrep},
		{"Find", testFind},
		{"IgnoreFiles", testIgnoreFiles},
		{"Ls", testLs},
		{"OptionShapedArguments", testOptionShapedArguments},
	} {
		t.Run(tc.name, func(t *testing.T) { tc.f(t, h) })
	}
}

// RunQueue runs the mutation-order tables alone: for a backend behind a
// slow link, where the rest of the suite would take long and say nothing
// new.
func RunQueue(t *testing.T, h Harness) {
	t.Run("SameFileEditsApplyInCallOrder", func(t *testing.T) { testSameFileEditsApplyInCallOrder(t, h) })
	t.Run("NoLostUpdates", func(t *testing.T) { testNoLostUpdates(t, h) })
	t.Run("EnvironmentsHaveSeparateQueues", func(t *testing.T) { testEnvironmentsHaveSeparateQueues(t, h) })
	t.Run("BatchSeesEarlierMutations", func(t *testing.T) { testBatchSeesEarlierMutations(t, h) })
}

// fixture is an environment rooted in a fresh directory.
type fixture struct {
	t    *testing.T
	h    Harness
	o    ops.Operations
	root string
	env  *env.ExecutionEnv
	defs []tools.Definition
}

func newFixture(t *testing.T, h Harness) *fixture {
	t.Helper()
	f := &fixture{t: t, h: h, o: h.New(t)}
	tmp := strings.TrimSpace(f.run("mktemp -d"))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		// Tests may leave directories closed to their user.
		f.o.Exec(ctx, ops.Command{Script: "chmod -R u+rwx " + shellquote.Quote(tmp) + "; rm -rf " + shellquote.Quote(tmp)})
	})
	root, err := ops.RealPath(t.Context(), f.o, tmp)
	require.NoError(t, err)
	f.root = root
	home := path.Join(root, "home")
	require.NoError(t, f.o.MkdirAll(t.Context(), home))
	f.env = env.New(f.o, env.Options{Name: "host", Cwd: root, Home: home})
	f.defs = tools.Definitions(f.env, tools.Options{})
	return f
}

func (f *fixture) path(rel string) string { return path.Join(f.root, rel) }

// write creates a file (and its parents) on the host.
func (f *fixture) write(rel, content string) {
	f.t.Helper()
	require.NoError(f.t, f.o.WriteFile(f.t.Context(), f.path(rel), strings.NewReader(content), ops.WriteOptions{CreateParents: true}))
}

// read returns a file's content on the host.
func (f *fixture) read(rel string) string {
	f.t.Helper()
	return readHost(f.t, f.o, f.path(rel))
}

func readHost(t *testing.T, o ops.Operations, name string) string {
	t.Helper()
	rc, err := o.Open(t.Context(), name)
	require.NoError(t, err)
	defer rc.Close()
	b, err := io.ReadAll(rc)
	require.NoError(t, err)
	return string(b)
}

// run runs a shell command on the host (symlinks, modes, process checks)
// and returns its output.
func (f *fixture) run(script string) string {
	f.t.Helper()
	var out strings.Builder
	require.NoError(f.t, f.o.Exec(f.t.Context(), ops.Command{Script: script, Output: &out}), "%s: %s", script, out.String())
	return out.String()
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
	return tools.Call(f.t.Context(), loop.Config{Tools: tools.WrapAll(f.defs)}, name, raw, nil)
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

// goldens are the expected outputs, embedded so that the suite finds them
// from any package that runs it.
//
//go:embed testdata
var goldens embed.FS

// golden compares got with testdata/name, or rewrites it.
func golden(t *testing.T, h Harness, name string, got string) {
	t.Helper()
	if h.UpdateGolden != nil {
		h.UpdateGolden(name, got)
		return
	}
	want, err := goldens.ReadFile("testdata/" + name)
	require.NoError(t, err, "run go test ./tools -update to create tools/toolstest/testdata/%s", name)
	assert.Equal(t, string(want), got)
}
