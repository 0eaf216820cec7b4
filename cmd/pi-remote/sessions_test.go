package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pi-remote/pi-remote/internal/shellquote"
	"github.com/pi-remote/pi-remote/loop"
	"github.com/pi-remote/pi-remote/session"
)

// sessions, --resume, --fork and export, round trip.
func TestSessionsResumeForkExport(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("PI_REMOTE_MODEL", "")
	t.Chdir(t.TempDir())
	work := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(work, "notes.txt"), []byte("remember ```fences```\n"), 0o644))
	script := func(text string) string {
		p := filepath.Join(t.TempDir(), "script.json")
		require.NoError(t, os.WriteFile(p, []byte(`{"turns":[`+
			`{"toolCalls":[{"id":"c1","name":"read","arguments":{"path":"notes.txt"}}],"usage":{"input":1000,"output":10}},`+
			`{"text":"`+text+`","usage":{"input":2000,"output":30,"cacheRead":500}}]}`), 0o644))
		return "scripted/" + p
	}
	runAt := func(args ...string) (int, string, string) {
		return runCLI(t, "", append([]string{"--cwd", work, "run"}, args...)...)
	}

	code, out, errOut := runAt("--model", script("first answer"), "first prompt")
	require.Equal(t, 0, code, errOut)
	assert.Equal(t, "first answer\n", out)

	code, out, _ = runCLI(t, "", "sessions", "--json")
	require.Equal(t, 0, code)
	var info struct {
		session.Info
		Cost float64
	}
	require.NoError(t, json.Unmarshal([]byte(out), &info))
	assert.Equal(t, "first prompt", info.FirstPrompt)
	assert.Equal(t, 4, info.Messages)
	assert.Equal(t, work, info.Cwd)
	code, out, _ = runCLI(t, "", "sessions")
	require.Equal(t, 0, code)
	assert.Contains(t, out, info.ID[:8])
	assert.Contains(t, out, "first prompt")

	// --resume with a prefix continues that file.
	code, _, errOut = runAt("--model", script("second answer"), "--resume", info.ID[:6], "second prompt")
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, errOut, "session: "+info.Path)
	// The answers name no model the table knows: tokens, and no price.
	assert.Contains(t, errOut, "usage: 3,000 in, 40 out, cache 500 read / 0 written, $0.0000 (session 6,000 in, 80 out, cache 1,000 read / 0 written, $0.0000)", "the session's totals count the first run")
	_, saved, err := session.Open(info.Path)
	require.NoError(t, err)
	assert.Len(t, saved.Messages, 8)
	code, _, errOut = runAt("--model", script("x"), "--resume", "zzzz", "p")
	assert.Equal(t, exitUsage, code)
	assert.Contains(t, errOut, `no session "zzzz"`)

	// --fork from the first answer: a new file holding the branch up to it.
	_, entries, err := session.Branch(info.Path)
	require.NoError(t, err)
	firstAnswer := entries[3].ID
	code, _, errOut = runAt("--model", script("forked answer"), "--fork", firstAnswer, "a different second prompt")
	require.Equal(t, 0, code, errOut)
	forked := strings.TrimSpace(errOut[strings.LastIndex(errOut, "session: ")+len("session: "):])
	assert.NotEqual(t, info.Path, forked)
	h, branch, err := session.Branch(forked)
	require.NoError(t, err)
	assert.Equal(t, info.ID+":"+firstAnswer, h.ForkedFrom)
	require.Len(t, branch, 8)
	assert.Equal(t, firstAnswer, branch[3].ID, "the entries up to the fork point, with their ids")
	prompt, ok := branch[4].Message.(*loop.UserMessage)
	require.True(t, ok)
	assert.Equal(t, "a different second prompt", prompt.Content.Text(), "the new prompt follows the fork point")
	_, saved, err = session.Open(info.Path)
	require.NoError(t, err)
	assert.Len(t, saved.Messages, 8, "the original is untouched")

	// export: Markdown on stdout, HTML to a file, by ID prefix or path.
	code, out, errOut = runCLI(t, "", "export", info.ID[:6])
	require.Equal(t, 0, code, errOut)
	for _, want := range []string{"# Session " + info.ID, "## User\n\nfirst prompt", "**→ read** (`c1`)", "````\nremember ```fences```\n````", "second answer"} {
		assert.Contains(t, out, want)
	}
	page := filepath.Join(t.TempDir(), "s.html")
	code, _, errOut = runCLI(t, "", "export", "--html", "-o", page, forked)
	require.Equal(t, 0, code, errOut)
	b, err := os.ReadFile(page)
	require.NoError(t, err)
	assert.Contains(t, string(b), "forked answer")
	assert.Contains(t, string(b), "a different second prompt")
	assert.NotContains(t, string(b), "second answer")
	code, _, errOut = runCLI(t, "", "export", "nope")
	assert.Equal(t, exitUsage, code)
	assert.Contains(t, errOut, `no session "nope"`)
}

// sessions --entries lists where a session can be forked (the entry
// before each prompt, the latest first), and run --fork takes what it
// shows; the terminal's exit line is a command that resumes the session
// on the same hosts.
func TestSessionsEntriesFeedFork(t *testing.T) {
	t.Setenv("HOME", t.TempDir())
	t.Chdir(t.TempDir())
	dir := t.TempDir()
	script := writeScript(t, `{"turns":[{"text":"ok"},{"text":"ok"},{"text":"ok"}]}`)
	run := func(args ...string) string {
		t.Helper()
		code, out, stderr := runCLI(t, "", append([]string{"run", "--cwd", dir, "--model", "scripted/" + script}, args...)...)
		require.Equal(t, 0, code, stderr)
		return out
	}
	run("first prompt")
	run("--continue", "second prompt")
	code, out, stderr := runCLI(t, "", "sessions", "--json")
	require.Equal(t, 0, code, stderr)
	var s struct{ ID string }
	require.NoError(t, json.Unmarshal([]byte(strings.SplitN(out, "\n", 2)[0]), &s))

	code, out, stderr = runCLI(t, "", "sessions", "--entries", s.ID[:6])
	require.Equal(t, 0, code, stderr)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	require.Len(t, lines, 2, out)
	assert.Equal(t, "ENTRY     PROMPT AFTER IT", lines[0])
	assert.True(t, strings.HasSuffix(lines[1], "  second prompt"), lines[1])
	entry := strings.Fields(lines[1])[0]

	code, out, stderr = runCLI(t, "", "sessions", "--entries", s.ID[:6], "--json")
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, out, `"prompt":"second prompt"`)

	run("--resume", s.ID[:6], "--fork", entry, "another second prompt")
	code, _, stderr = runCLI(t, "", "sessions", "--entries", "nosuchid")
	assert.Equal(t, exitUsage, code, stderr)

	root := filepath.Join(string(filepath.Separator)+"home", "al", ".pi-remote", "sessions")
	inRoot := filepath.Join(root, "0123abcd", "20261205T001007.000Z-aaaaaa.jsonl")
	assert.Equal(t, "pi-remote run --host 'prod=alice@prod' --cwd '/srv/my app' --resume c19108d0", resumeCommand([]string{"prod=alice@prod"}, "/srv/my app", "c19108d0eb2e6db7d828d48fe458f626", inRoot, root))
	assert.Equal(t, "pi-remote run --resume c19108d0", resumeCommand(nil, "", "c19108d0eb2e", inRoot, root))
	// A file elsewhere (run --session FILE), which --resume does not
	// search: named by its path, made absolute.
	elsewhere := filepath.Join(t.TempDir(), "my session.jsonl")
	assert.Equal(t, shellquote.Join("pi-remote", "run", "--cwd", "/srv", "--session", elsewhere), resumeCommand(nil, "/srv", "c19108d0eb2e", elsewhere, root))
	wd, err := os.Getwd()
	require.NoError(t, err)
	assert.Equal(t, shellquote.Join("pi-remote", "run", "--session", filepath.Join(wd, "s.jsonl")), resumeCommand(nil, "", "c19108d0eb2e", "s.jsonl", root))
}
