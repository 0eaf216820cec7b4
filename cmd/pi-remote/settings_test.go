package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// state starts rpc with args in a home and project of the test's and
// returns get_state's data.
func state(t *testing.T, args ...string) (int, map[string]any, string) {
	t.Helper()
	code, out, errOut := runCLI(t, `{"id":1,"type":"get_state"}`+"\n", append(args, "rpc")...)
	if code != 0 {
		return code, nil, errOut
	}
	var resp struct{ Data map[string]any }
	require.NoError(t, json.Unmarshal([]byte(strings.TrimSpace(out)), &resp), out)
	return code, resp.Data, errOut
}

// Flags win over the project's settings, which win over the user's, which
// win over the defaults.
func TestSettingsPrecedenceOnTheCommandLine(t *testing.T) {
	home, project := t.TempDir(), t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("PI_REMOTE_MODEL", "")
	t.Chdir(project)
	script := filepath.Join(project, "script.json")
	require.NoError(t, os.WriteFile(script, []byte(`{"turns":[{"text":"hi"}]}`), 0o644))
	work := t.TempDir()

	_, s, _ := state(t, "--cwd", work)
	assert.Equal(t, "", s["model"], "default: no model")
	assert.Equal(t, []any{"read", "bash", "edit", "write"}, s["tools"])
	assert.Equal(t, 128000.0, s["contextWindow"])

	userFile := filepath.Join(home, ".pi-remote", "settings.json")
	require.NoError(t, os.MkdirAll(filepath.Dir(userFile), 0o755))
	require.NoError(t, os.WriteFile(userFile, []byte(`{"model":"scripted/`+script+`","tools":["read","ls"],
		"models":{"scripted/`+script+`":{"contextWindow":8000}}}`), 0o644))
	_, s, _ = state(t, "--cwd", work)
	assert.Equal(t, "scripted/"+script, s["model"], "the user's")
	assert.Equal(t, []any{"read", "ls"}, s["tools"])
	assert.Equal(t, 8000.0, s["contextWindow"], "the user's model table")

	projectFile := filepath.Join(project, ".pi-remote", "settings.json")
	require.NoError(t, os.MkdirAll(filepath.Dir(projectFile), 0o755))
	require.NoError(t, os.WriteFile(projectFile, []byte(`{"tools":["grep"]}`), 0o644))
	_, s, _ = state(t, "--cwd", work)
	assert.Equal(t, []any{"grep"}, s["tools"], "the project's over the user's")
	assert.Equal(t, "scripted/"+script, s["model"], "the user's where the project says nothing")

	_, s, _ = state(t, "--cwd", work, "--tools", "find")
	assert.Equal(t, []any{"find"}, s["tools"], "the flag over both")

	// Hosts named in the settings: the default list, and names on --host.
	require.NoError(t, os.WriteFile(projectFile, []byte(`{"hosts":{"here":"local","there":"local"},"host":["here"]}`), 0o644))
	_, s, _ = state(t, "--cwd", work)
	assert.Equal(t, []any{"here"}, s["hosts"])
	_, s, _ = state(t, "--cwd", work, "--host", "there", "--host", "mine=here")
	assert.Equal(t, []any{"there", "mine"}, s["hosts"])

	// A broken file stops the command with its name and line.
	require.NoError(t, os.WriteFile(projectFile, []byte("{\n  \"tools\": [\"grep\"],\n  \"thinking\": \"max\"\n}"), 0o644))
	code, _, errOut := state(t, "--cwd", work)
	assert.Equal(t, exitUsage, code)
	assert.Contains(t, errOut, projectFile+":3: thinking \"max\"")
	require.NoError(t, os.WriteFile(projectFile, []byte("{\n  \"tools\": [\"grep\"]\n  \"model\": \"x\"\n}"), 0o644))
	code, _, errOut = state(t, "--cwd", work)
	assert.Equal(t, exitUsage, code)
	assert.Contains(t, errOut, projectFile+":3: invalid character")
	// version does not need them.
	code, _, _ = runCLI(t, "", "version")
	assert.Equal(t, 0, code)
}
