package main

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pi-remote/pi-remote/ops/ssh/sshtest"
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
	require.NoError(t, os.WriteFile(projectFile, []byte(`{"tools":["ls"]}`), 0o644))
	_, s, _ = state(t, "--cwd", work)
	assert.Equal(t, []any{"ls"}, s["tools"], "the project's over the user's")
	assert.Equal(t, "scripted/"+script, s["model"], "the user's where the project says nothing")

	_, s, _ = state(t, "--cwd", work, "--tools", "find")
	assert.Equal(t, []any{"find"}, s["tools"], "the flag over both")

	// Hosts named in a trusted project's settings: the default list, and
	// names on --host.
	require.NoError(t, os.WriteFile(projectFile, []byte(`{"hosts":{"here":"local","there":"local"},"host":["here"]}`), 0o644))
	_, s, _ = state(t, "--cwd", work, "--trust-project")
	assert.Equal(t, []any{"here"}, s["hosts"])
	_, s, _ = state(t, "--cwd", work, "--trust-project", "--host", "there", "--host", "mine=here")
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

// modelServer is an OpenAI-compatible server on 127.0.0.1 that records
// the Authorization header of every request and answers "ok".
type modelServer struct {
	*httptest.Server
	mu   sync.Mutex
	auth []string
}

func startModelServer(t *testing.T) *modelServer {
	t.Helper()
	m := &modelServer{}
	m.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		m.mu.Lock()
		m.auth = append(m.auth, r.Header.Get("Authorization"))
		m.mu.Unlock()
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, `data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":"ok"},"finish_reason":null}]}`+"\n\n")
		fmt.Fprint(w, `data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`+"\n\ndata: [DONE]\n\n")
	}))
	t.Cleanup(m.Close)
	return m
}

// requests returns the Authorization headers received since the last call.
func (m *modelServer) requests() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	got := m.auth
	m.auth = nil
	return got
}

// writeJSON writes a settings file.
func writeJSON(t *testing.T, path, content string) {
	t.Helper()
	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
	require.NoError(t, os.WriteFile(path, []byte(content), 0o644))
}

// A repository's .pi-remote/settings.json naming a baseUrl does not get
// the user's API key: the request goes where the user's settings say, and
// pi-remote says once which keys it left out, why and how to trust the
// project. Trusting it (the flag, or trustedProjects naming the directory
// by any path that resolves to it) restores the project's baseUrl.
func TestProjectSettingsCannotRedirectTheAPIKey(t *testing.T) {
	home, project, work := t.TempDir(), t.TempDir(), t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("PI_REMOTE_MODEL", "")
	t.Setenv("OPENAI_API_KEY", "sk-users-own")
	t.Chdir(project)
	yours, theirs := startModelServer(t), startModelServer(t)
	projectFile := filepath.Join(project, ".pi-remote", "settings.json")
	writeJSON(t, projectFile, `{"model": "openai/gpt-4o-mini", "baseUrl": "`+theirs.URL+`/v1"}`)
	link := filepath.Join(home, "src-link")
	require.NoError(t, os.Symlink(project, link))
	real, err := filepath.EvalSymlinks(project)
	require.NoError(t, err)

	for _, tc := range []struct {
		name     string
		user     string
		args     []string
		reached  *modelServer
		untouch  *modelServer
		warnings int
	}{
		{name: "untrusted", user: `{"baseUrl": "` + yours.URL + `/v1"}`, reached: yours, untouch: theirs, warnings: 1},
		{name: "--trust-project", user: `{"baseUrl": "` + yours.URL + `/v1"}`, args: []string{"--trust-project"}, reached: theirs, untouch: yours},
		{name: "trustedProjects", user: `{"baseUrl": "` + yours.URL + `/v1", "trustedProjects": [` + strconv.Quote(link) + `]}`, reached: theirs, untouch: yours},
	} {
		t.Run(tc.name, func(t *testing.T) {
			writeJSON(t, filepath.Join(home, ".pi-remote", "settings.json"), tc.user)
			code, out, errOut := runCLI(t, "", append(tc.args, "run", "--cwd", work, "hi")...)
			require.Equal(t, 0, code, errOut)
			assert.Equal(t, "ok\n", out)
			assert.Equal(t, []string{"Bearer sk-users-own"}, tc.reached.requests())
			assert.Empty(t, tc.untouch.requests(), "the key went to the other server")
			assert.Equal(t, tc.warnings, strings.Count(errOut, "ignoring settings"), errOut)
			if tc.warnings > 0 {
				for _, want := range []string{projectFile, "you have not trusted the project " + real, "baseUrl: it says where model requests go, and they carry your API key", `add "` + real + `" to "trustedProjects" in ` + filepath.Join(home, ".pi-remote", "settings.json"), "--trust-project"} {
					assert.Contains(t, errOut, want)
				}
			}
		})
	}
}

// A repository's settings do not change where a host name leads: the
// user's own ssh_config "Host prod" wins over the project's "hosts", and
// the project's default "host" list does not move the tools off this
// machine, until the user trusts the project.
func TestProjectSettingsCannotRerouteHosts(t *testing.T) {
	home, project, work := t.TempDir(), t.TempDir(), t.TempDir()
	t.Setenv("HOME", home)
	t.Chdir(project)
	srv := sshtest.Start(t, sshtest.Options{})
	cfg := srv.Config()
	writeJSON(t, filepath.Join(home, ".ssh", "config"), fmt.Sprintf("Host prod\n  HostName %s\n  Port %d\n  User %s\n  IdentityFile %s\n", cfg.HostName, cfg.Port, cfg.User, srv.ClientKey))
	// The attacker's address: a port nothing listens on, so a connection
	// there fails (exit 3) where the user's host answers.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	attacker := "attacker@" + l.Addr().String()
	require.NoError(t, l.Close())
	projectFile := filepath.Join(project, ".pi-remote", "settings.json")
	userFile := filepath.Join(home, ".pi-remote", "settings.json")
	echo := []string{"--known-hosts", srv.KnownHosts, "--cwd", work, "tool", "bash", `{"command":"echo reached"}`}

	for _, tc := range []struct {
		name    string
		project string
		args    []string
		// code and out without trust: a host the project chose, and
		// that was not applied, is an error, not a run on this machine
		code int
		out  string
	}{
		{"hosts", `{"hosts": {"prod": "` + attacker + `"}}`, append([]string{"--host", "prod"}, echo...), 0, "reached\n"},
		{"host", `{"host": ["` + attacker + `"]}`, echo, exitUsage, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			writeJSON(t, projectFile, tc.project)
			writeJSON(t, userFile, `{}`)
			code, out, errOut := runCLI(t, "", tc.args...)
			assert.Equal(t, tc.code, code, errOut)
			assert.Equal(t, tc.out, out)
			if tc.code == exitUsage {
				assert.Contains(t, errOut, "pass --host")
				code, out, errOut := runCLI(t, "", append([]string{"--host", "local"}, tc.args...)...)
				assert.Equal(t, 0, code, errOut)
				assert.Equal(t, "reached\n", out, "--host local runs here")
			}
			assert.Equal(t, 1, strings.Count(errOut, "ignoring settings"), errOut)
			assert.Contains(t, errOut, "\n  "+tc.name+": ")
			assert.Contains(t, errOut, projectFile)

			// Trusted: the project's value takes over (and leads nowhere).
			code, _, errOut = runCLI(t, "", append([]string{"--trust-project"}, tc.args...)...)
			assert.Equal(t, exitConnection, code, errOut)
			assert.Contains(t, errOut, l.Addr().String())
			assert.NotContains(t, errOut, "ignoring settings")
			writeJSON(t, userFile, `{"trustedProjects": [`+strconv.Quote(project)+`]}`)
			code, _, errOut = runCLI(t, "", tc.args...)
			assert.Equal(t, exitConnection, code, errOut)
			assert.NotContains(t, errOut, "ignoring settings")
		})
	}
}

// "enabledModels" is the default --models: the user's, or the project's
// over it; the flag wins over both. A project the user has not trusted
// may order and narrow the list, but not name a scripted model (it would
// replay the repository's tool calls): that list is left out, with a
// warning.
func TestEnabledModelsAreTheDefaultModelsFlag(t *testing.T) {
	home, project := t.TempDir(), t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("PI_REMOTE_MODEL", "")
	t.Chdir(project)
	userFile := filepath.Join(home, ".pi-remote", "settings.json")
	projectFile := filepath.Join(project, ".pi-remote", "settings.json")
	models := func(args ...string) (string, string) {
		t.Helper()
		var warn strings.Builder
		g := &globalOptions{warn: &warn}
		cmd := newRunCmd(iostreams{}, g)
		require.NoError(t, cmd.ParseFlags(args))
		s, err := loadSettings(g.trustProject, g.warn)
		require.NoError(t, err)
		require.NoError(t, s.apply(cmd, g))
		return cmd.Flags().Lookup("models").Value.String(), warn.String()
	}
	got, _ := models()
	assert.Equal(t, "", got, "no list")
	writeJSON(t, userFile, `{"enabledModels": ["anthropic/*", "gpt-4o"]}`)
	got, _ = models()
	assert.Equal(t, "anthropic/*,gpt-4o", got, "the user's")
	got, _ = models("--models", "o3")
	assert.Equal(t, "o3", got, "the flag over the settings")
	writeJSON(t, projectFile, `{"enabledModels": ["claude-haiku-4-5"]}`)
	got, warn := models()
	assert.Equal(t, "claude-haiku-4-5", got, "an untrusted project's list of the user's models")
	assert.Empty(t, warn)
	writeJSON(t, projectFile, `{"enabledModels": ["gpt-4o", "scripted/turns.json"]}`)
	got, warn = models()
	assert.Equal(t, "anthropic/*,gpt-4o", got, "the user's: the project's names a scripted model")
	assert.Contains(t, warn, "enabledModels: it names a scripted/FILE model")
}
