package workspace

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pi-remote/pi-remote/agent/permission"
	"github.com/pi-remote/pi-remote/env"
	"github.com/pi-remote/pi-remote/loop"
	"github.com/pi-remote/pi-remote/ops"
	"github.com/pi-remote/pi-remote/tools"
)

// stampTool appends "stamp" to the file its path names, queued on that
// path; readOnly says what its definition claims (a lie, for the test of
// a tool that says it only reads).
func stampTool(readOnly bool) func(e *env.ExecutionEnv) []tools.Definition {
	type in struct {
		Path string `json:"path"`
	}
	return func(e *env.ExecutionEnv) []tools.Definition {
		return []tools.Definition{tools.Define(tools.Definition{
			Name:          "stamp",
			Description:   "Append a stamp to a file.",
			PromptSnippet: "Stamp a file",
			ReadOnly:      readOnly,
			Admit:         tools.AdmitPath(e),
		}, func(ctx context.Context, in in, _ func(loop.Result)) (loop.Result, error) {
			abs, err := e.Resolve(ctx, in.Path)
			if err != nil {
				return loop.ErrorResult(err.Error()), nil
			}
			err = tools.Mutate(ctx, e, in.Path, func(canonical string) error {
				old, err := e.ReadFile(ctx, abs)
				if err != nil {
					return err
				}
				return e.WriteFile(ctx, abs, strings.NewReader(string(old)+"stamp on "+e.Name()+"\n"), ops.WriteOptions{Canonical: canonical})
			})
			if err != nil {
				return loop.ErrorResult(err.Error()), nil
			}
			return loop.TextResult("stamped"), nil
		})}
	}
}

func openWith(t *testing.T, dir string, hosts []string, o Options) *Workspace {
	t.Helper()
	hs, err := OpenHosts(t.Context(), HostOptions{Cwd: dir, Hosts: hosts}, OneShot, nil, nil)
	require.NoError(t, err)
	w, err := Open(t.Context(), hs, o)
	require.NoError(t, err)
	t.Cleanup(w.Close)
	return w
}

// A program's own tool is one more tool of the workspace: in its
// definitions, the system prompt of the active tools, and with several
// hosts it acts on the host its "host" argument names.
func TestProgramTools(t *testing.T) {
	dir := t.TempDir()
	f := filepath.Join(dir, "f.txt")
	require.NoError(t, os.WriteFile(f, []byte("start\n"), 0o644))
	w := openWith(t, dir, []string{"a=local", "b=local"}, Options{Active: []string{"read", "stamp"}, Tools: stampTool(false)})
	require.Contains(t, w.ByName, "stamp")
	assert.Contains(t, string(w.ByName["stamp"].Parameters), `"host"`, "the tool takes the host argument")
	prompt := w.Config.SystemPrompt(tools.WrapAll([]tools.Definition{w.ByName["read"], w.ByName["stamp"]}))
	assert.Contains(t, prompt, "- stamp: Stamp a file")

	res := tools.Call(t.Context(), w.Config, "stamp", json.RawMessage(`{"path":"f.txt","host":"b"}`), nil)
	require.False(t, res.IsError, text(res))
	got, err := os.ReadFile(f)
	require.NoError(t, err)
	assert.Equal(t, "start\nstamp on b\n", string(got))
}

// The permission gate decides a program's tool by what its definition
// says: one that does not say it only reads is refused on a read-only
// host, and asked about on an asking host; one that says so runs.
func TestGateDecidesProgramTools(t *testing.T) {
	for _, tc := range []struct {
		name     string
		mode     permission.Mode
		readOnly bool
		refused  string
	}{
		{"read-only refuses a tool that changes files", permission.ReadOnly, false, "host local is read-only: stamp is refused"},
		{"ask asks about it (nobody here: refused)", permission.Ask, false, "host local asks before stamp, and nobody is here to approve it"},
		{"auto runs it", permission.Auto, false, ""},
		{"read-only runs a tool that says it only reads", permission.ReadOnly, true, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			f := filepath.Join(dir, "f.txt")
			require.NoError(t, os.WriteFile(f, []byte("start\n"), 0o644))
			gate := permission.NewGate(permission.Policy{Mode: tc.mode})
			w := openWith(t, dir, nil, Options{Gate: gate, Tools: stampTool(tc.readOnly)})
			res := tools.Call(t.Context(), w.Config, "stamp", json.RawMessage(`{"path":"f.txt"}`), nil)
			got, err := os.ReadFile(f)
			require.NoError(t, err)
			if tc.refused != "" {
				assert.True(t, res.IsError)
				assert.Contains(t, text(res), tc.refused)
				assert.Equal(t, "start\n", string(got), "the refused call changed nothing")
				return
			}
			require.False(t, res.IsError, text(res))
			assert.Equal(t, "start\nstamp on local\n", string(got))
		})
	}
}

// A program's tool may not take a name another tool has.
func TestProgramToolNamesAreUnique(t *testing.T) {
	for _, name := range []string{"edit", ""} {
		hs, err := OpenHosts(t.Context(), HostOptions{Cwd: t.TempDir()}, OneShot, nil, nil)
		require.NoError(t, err)
		_, err = Open(t.Context(), hs, Options{Tools: func(e *env.ExecutionEnv) []tools.Definition {
			return []tools.Definition{{Name: name, Execute: func(context.Context, string, json.RawMessage, func(loop.Result)) (loop.Result, error) {
				return loop.TextResult("x"), nil
			}}}
		}})
		var ue *UsageError
		require.ErrorAs(t, err, &ue, "%q", name)
		assert.ErrorContains(t, err, "a tool named")
	}
}
