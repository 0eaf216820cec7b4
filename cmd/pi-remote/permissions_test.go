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

// With nobody to ask (print mode), ask fails closed: the write is an
// error result saying it needs approval and which rule would allow it;
// the run goes on to its end and exits as it would, the file untouched.
func TestPrintModeAskFailsClosed(t *testing.T) {
	t.Setenv("HOME", t.TempDir())
	t.Chdir(t.TempDir())
	dir := t.TempDir()
	script := writeScript(t, writeThenAnswer)
	code, out, stderr := runCLI(t, "", "run", "--cwd", dir, "--model", "scripted/"+script, "--permissions", "ask", "write a greeting")
	require.Equal(t, 0, code, stderr)
	assert.Equal(t, "Writing it.\nDone: notes/hello.txt says hi.\n", out)
	assert.Contains(t, stderr, "Permission needed: host local asks before write, and nobody is here to approve it")
	assert.Contains(t, stderr, "`write("+filepath.Join(dir, "notes", "hello.txt")+")`")
	assert.Contains(t, stderr, "Permission needed: host local asks before bash")
	assert.NoFileExists(t, filepath.Join(dir, "notes", "hello.txt"))

	// The same in JSON mode: the refusals are tool results with isError.
	code, out, stderr = runCLI(t, "", "run", "--cwd", dir, "--model", "scripted/"+script, "--permissions", "ask", "--mode", "json", "go")
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, out, `"isError":true`)
	assert.Contains(t, out, "nobody is here to approve it")
	assert.NoFileExists(t, filepath.Join(dir, "notes", "hello.txt"))
}

// A read-only host of two refuses edit, from the flag or from the
// settings' host entry (whatever the session names the host); the same
// edit on the other host runs.
func TestReadOnlyHostOfTwo(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Chdir(t.TempDir())
	dir := t.TempDir()
	edits := writeScript(t, `{"turns":[
		{"toolCalls":[{"id":"c1","name":"edit","arguments":{"host":"prod","path":"f.txt","edits":[{"oldText":"one","newText":"two"}]}}]},
		{"toolCalls":[{"id":"c2","name":"edit","arguments":{"host":"dev","path":"g.txt","edits":[{"oldText":"one","newText":"two"}]}}]},
		{"text":"done"}
	]}`)
	for _, tc := range []struct {
		name     string
		settings string
		args     []string
	}{
		{"flag", `{}`, []string{"--host", "prod=local", "--host-permissions", "prod=read-only"}},
		{"settings", `{"hosts": {"production": {"spec": "local", "permissions": "read-only"}}}`, []string{"--host", "prod=production"}},
		{"mode and a host's own", `{"permissions": {"mode": "read-only"}}`, []string{"--host", "prod=local", "--host-permissions", "dev=auto"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			writeJSON(t, filepath.Join(home, ".pi-remote", "settings.json"), tc.settings)
			for _, f := range []string{"f.txt", "g.txt"} {
				require.NoError(t, os.WriteFile(filepath.Join(dir, f), []byte("one\n"), 0o644))
			}
			args := append(append([]string{"run", "--cwd", dir, "--model", "scripted/" + edits}, tc.args...), "--host", "dev=local", "go")
			code, _, stderr := runCLI(t, "", args...)
			require.Equal(t, 0, code, stderr)
			assert.Contains(t, stderr, "host prod is read-only: edit is refused")
			assert.Equal(t, "one\n", readFileT(t, filepath.Join(dir, "f.txt")))
			assert.Equal(t, "two\n", readFileT(t, filepath.Join(dir, "g.txt")))
		})
	}
}

// A repository's settings that try to loosen the user's policy change
// nothing and say so; their deny rules and a stricter mode apply.
func TestProjectSettingsCannotLoosenPolicy(t *testing.T) {
	home, project, dir := t.TempDir(), t.TempDir(), t.TempDir()
	t.Setenv("HOME", home)
	t.Chdir(project)
	writeJSON(t, filepath.Join(home, ".pi-remote", "settings.json"), `{"permissions": {"mode": "ask"}}`)
	projectFile := filepath.Join(project, ".pi-remote", "settings.json")
	writeJSON(t, projectFile, `{"permissions": {"mode": "auto", "allow": ["bash(*)"], "deny": ["write(**/hello.txt)"]},
		"hooks": {"PreToolUse": [{"command": "true"}]}}`)
	script := writeScript(t, writeThenAnswer)
	code, _, stderr := runCLI(t, "", "run", "--cwd", dir, "--model", "scripted/"+script, "go")
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, stderr, "ignoring settings in "+projectFile)
	assert.Contains(t, stderr, "  permissions.mode: it sets a permission mode less strict than yours\n")
	assert.Contains(t, stderr, "  permissions.allow: ")
	assert.Contains(t, stderr, "  hooks: ")
	assert.Contains(t, stderr, "denied by rule `write(**/hello.txt)`", "the project's deny rule applies")
	assert.Contains(t, stderr, "Permission needed: host local asks before bash", "the user's mode holds")
	assert.NoFileExists(t, filepath.Join(dir, "notes", "hello.txt"))

	// A stricter mode is the project's to set.
	writeJSON(t, filepath.Join(home, ".pi-remote", "settings.json"), `{}`)
	writeJSON(t, projectFile, `{"permissions": {"mode": "read-only"}}`)
	code, _, stderr = runCLI(t, "", "run", "--cwd", dir, "--model", "scripted/"+script, "go")
	require.Equal(t, 0, code, stderr)
	assert.NotContains(t, stderr, "ignoring settings")
	assert.Contains(t, stderr, "host local is read-only: write is refused")

	// Trusted, the project's mode and allow rules apply.
	writeJSON(t, projectFile, `{"permissions": {"mode": "ask", "allow": ["write", "bash(cat *)"]}}`)
	code, _, stderr = runCLI(t, "", "--trust-project", "run", "--cwd", dir, "--model", "scripted/"+script, "go")
	require.Equal(t, 0, code, stderr)
	assert.NotContains(t, stderr, "Permission needed")
	assert.Equal(t, "hi\n", readFileT(t, filepath.Join(dir, "notes", "hello.txt")))
}

// Bad permission flags and settings are usage errors that say what is
// wrong, before any host is reached.
func TestPermissionUsageErrors(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Chdir(t.TempDir())
	script := writeScript(t, `{"turns":[{"text":"ok"}]}`)
	for _, tc := range []struct {
		args     []string
		settings string
		want     string
	}{
		{[]string{"--permissions", "yolo"}, `{}`, `permission mode "yolo": want auto, ask or read-only`},
		{[]string{"--host-permissions", "prod"}, `{}`, "want NAME=MODE"},
		{[]string{"--host-permissions", "prod=ask"}, `{}`, `no host is named "prod"`},
		{nil, `{"permissions": {"allow": ["bash(git status"]}}`, "no closing parenthesis"},
		{nil, `{"permissions": {"mode": "sometimes"}}`, `permission mode "sometimes"`},
		{nil, `{"hooks": {"Stop": [{"command": "true"}]}}`, `event "Stop" is not one pi-remote runs`},
		{nil, `{"hosts": {"prod": {"spec": "local", "permissions": "maybe"}}}`, `prod: permission mode "maybe"`},
	} {
		writeJSON(t, filepath.Join(home, ".pi-remote", "settings.json"), tc.settings)
		args := append(append([]string{"run", "--model", "scripted/" + script}, tc.args...), "go")
		code, _, stderr := runCLI(t, "", args...)
		assert.Equal(t, exitUsage, code, "%v %s: %s", tc.args, tc.settings, stderr)
		assert.Contains(t, stderr, tc.want, "%v %s", tc.args, tc.settings)
		assert.False(t, strings.Contains(stderr, "panic"))
	}
}

// check shows each host's mode and the rules in force there, with where
// each came from.
func TestCheckShowsPermissions(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	project := t.TempDir()
	t.Chdir(project)
	userFile := filepath.Join(home, ".pi-remote", "settings.json")
	projectFile := filepath.Join(project, ".pi-remote", "settings.json")
	writeJSON(t, userFile, `{"hosts": {"production": {"spec": "local", "permissions": "read-only"}},
		"permissions": {"mode": "ask", "allow": ["prod:bash(systemctl status *)", "bash(git status*)"]}}`)
	writeJSON(t, projectFile, `{"permissions": {"deny": ["write(**/.env)"]}}`)
	code, out, stderr := runCLI(t, "", "--host", "prod=production", "--host", "dev=local", "--host", "ci=local", "--host-permissions", "ci=auto", "check", "--json")
	require.Equal(t, 0, code, stderr)
	var reports []struct {
		Name        string
		Permissions struct {
			Mode, From string
			Rules      []struct{ Kind, Rule, From string }
		}
	}
	require.NoError(t, json.Unmarshal([]byte(out), &reports))
	require.Len(t, reports, 3)
	prod, dev, ci := reports[0].Permissions, reports[1].Permissions, reports[2].Permissions
	assert.Equal(t, "read-only", prod.Mode)
	assert.Equal(t, "settings hosts.production", prod.From)
	assert.Equal(t, "ask", dev.Mode)
	assert.Equal(t, "user settings "+userFile, dev.From)
	assert.Equal(t, "auto", ci.Mode)
	assert.Equal(t, "--host-permissions", ci.From)
	require.Len(t, prod.Rules, 3)
	assert.Equal(t, "deny", prod.Rules[0].Kind)
	assert.Equal(t, "write(**/.env)", prod.Rules[0].Rule)
	assert.Equal(t, "project settings "+projectFile, prod.Rules[0].From)
	assert.Equal(t, "prod:bash(systemctl status *)", prod.Rules[1].Rule)
	assert.Len(t, dev.Rules, 2, "a rule for prod is not dev's")

	code, out, stderr = runCLI(t, "", "--host", "prod=production", "check")
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, out, "permissions: read-only (settings hosts.production)\n  deny  write(**/.env)  (project settings "+projectFile+")\n")
}

// The MCP server enforces the hosts' policy with nobody to ask: a
// read-only host refuses a write, and ask fails closed, as tool results
// with isError; reads run.
func TestMCPEnforcesPermissions(t *testing.T) {
	t.Setenv("HOME", t.TempDir())
	t.Chdir(t.TempDir())
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "hello.txt"), []byte("hi\n"), 0o644))
	p := startMCP(t, "--cwd", dir, "--host", "prod=local", "--host", "dev=local", "--host-permissions", "prod=read-only", "--permissions", "ask")
	require.Nil(t, p.call(t, 1, "initialize", mcpInitialize).Error)
	p.send(t, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)

	res := p.call(t, 2, "tools/call", `{"name":"write","arguments":{"host":"prod","path":"new.txt","content":"x"}}`)
	require.Nil(t, res.Error)
	assert.Contains(t, string(res.Result), `"isError":true`)
	assert.Contains(t, string(res.Result), "host prod is read-only")
	res = p.call(t, 3, "tools/call", `{"name":"bash","arguments":{"host":"dev","command":"touch made.txt"}}`)
	require.Nil(t, res.Error)
	assert.Contains(t, string(res.Result), `"isError":true`)
	assert.Contains(t, string(res.Result), "nobody is here to approve it")
	assert.NoFileExists(t, filepath.Join(dir, "new.txt"))
	assert.NoFileExists(t, filepath.Join(dir, "made.txt"))
	res = p.call(t, 4, "tools/call", `{"name":"read","arguments":{"host":"prod","path":"hello.txt"}}`)
	require.Nil(t, res.Error)
	assert.Contains(t, string(res.Result), `"text":"hi\n"`)
	assert.Equal(t, 0, p.end(), p.stderr.String())
}

// Rules written for a settings host ("prod:…") follow the machine as its
// mode does: the host named x in the session, that is the settings'
// prod, is held to them; another host is not.
func TestHostRulesFollowTheSettingsEntry(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Chdir(t.TempDir())
	dir := t.TempDir()
	writeJSON(t, filepath.Join(home, ".pi-remote", "settings.json"), `{"hosts": {"prod": {"spec": "local"}}, "permissions": {"deny": ["prod:bash(touch *)"]}}`)
	script := writeScript(t, `{"turns":[
		{"toolCalls":[{"id":"c1","name":"bash","arguments":{"host":"x","command":"touch on-x"}}]},
		{"toolCalls":[{"id":"c2","name":"bash","arguments":{"host":"dev","command":"touch on-dev"}}]},
		{"text":"done"}
	]}`)
	code, _, stderr := runCLI(t, "", "run", "--cwd", dir, "--model", "scripted/"+script, "--host", "x=prod", "--host", "dev=local", "go")
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, stderr, "denied by rule `prod:bash(touch *)`")
	assert.NoFileExists(t, filepath.Join(dir, "on-x"))
	assert.FileExists(t, filepath.Join(dir, "on-dev"))

	code, out, stderr := runCLI(t, "", "--host", "x=prod", "--host", "dev=local", "check")
	require.Equal(t, 0, code, stderr)
	assert.Equal(t, 1, strings.Count(out, "deny  prod:bash(touch *)"), "listed for x only:\n%s", out)
}
