package main

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pi-remote/pi-remote/agent"
	"github.com/pi-remote/pi-remote/tui"
)

// The session's base URL goes with the provider of the model it was
// given for; a switch to another provider reaches that provider's own API.
func TestBaseURLFollowsItsProvider(t *testing.T) {
	const local = "http://127.0.0.1:8000/v1"
	assert.Equal(t, local, baseURLFor(local, "openai/qwen3-coder", "openai/gpt-4o"))
	assert.Equal(t, "", baseURLFor(local, "openai/qwen3-coder", "anthropic/claude-sonnet-4-5"))
	assert.Equal(t, "", baseURLFor("", "openai/x", "openai/y"))
}

// /model's picker lists the usable models first and says what the others
// need: a key, unless the session's base URL serves that provider.
func TestModelChoicesSayWhatTheyNeed(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "")
	t.Setenv("ANTHROPIC_API_KEY", "sk-ant-test")
	names := []string{"anthropic/claude-sonnet-4-5", "openai/gpt-4o", "scripted/demo.json"}
	assert.Equal(t, []tui.Choice{
		{Label: "anthropic/claude-sonnet-4-5", Value: "anthropic/claude-sonnet-4-5"},
		{Label: "scripted/demo.json", Value: "scripted/demo.json"},
		{Label: "openai/gpt-4o — needs OPENAI_API_KEY", Value: "openai/gpt-4o"},
	}, modelChoices(names, "", "anthropic/claude-sonnet-4-5"))
	t.Setenv("ANTHROPIC_API_KEY", "")
	got := modelChoices(names, "http://127.0.0.1:8000/v1", "openai/qwen")
	assert.Equal(t, "openai/gpt-4o", got[0].Label, "served at the session's base URL")
	assert.Equal(t, "anthropic/claude-sonnet-4-5 — needs ANTHROPIC_API_KEY", got[2].Label)
}

// A bad model says where it came from: the flag, or the settings file.
func TestBadModelNamesItsSource(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("PI_REMOTE_MODEL", "")
	t.Chdir(t.TempDir())
	code, _, stderr := runCLI(t, "", "run", "--model", "nope/x", "go")
	assert.Equal(t, exitUsage, code)
	assert.Contains(t, stderr, `--model "nope/x": unknown provider "nope"`)
	file := filepath.Join(home, ".pi-remote", "settings.json")
	writeJSON(t, file, `{"model": "nope/y"}`)
	code, _, stderr = runCLI(t, "", "run", "go")
	assert.Equal(t, exitUsage, code)
	require.Contains(t, stderr, `"model" in `+file+` "nope/y": unknown provider "nope"`)
	t.Setenv("PI_REMOTE_MODEL", "nope/z")
	writeJSON(t, file, `{}`)
	code, _, stderr = runCLI(t, "", "run", "go")
	assert.Equal(t, exitUsage, code)
	assert.Contains(t, stderr, `PI_REMOTE_MODEL "nope/z": unknown provider`)
}

// The scoped list (--models) picks from the model table and the model in
// use, in the list's order; models without their key are skipped and
// say what they need; no patterns is no list.
func TestModelScope(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "sk-test")
	t.Setenv("ANTHROPIC_API_KEY", "")
	table := agent.Models{"openai/gpt-4o": {}, "openai/gpt-4o-mini": {}, "anthropic/claude-haiku-4-5": {}, "openai/o3": {}}
	assert.Equal(t, tui.ModelScope{}, modelScope(" , ", table, "openai/gpt-4o", "", "openai/gpt-4o"))
	assert.Equal(t, tui.ModelScope{
		Set:     true,
		Models:  []string{"openai/local-qwen", "openai/gpt-4o", "openai/gpt-4o-mini"},
		Skipped: []string{"anthropic/claude-haiku-4-5 — needs ANTHROPIC_API_KEY"},
	}, modelScope("local-qwen, gpt-4o*,anthropic/*", table, "openai/local-qwen", "", "openai/local-qwen"))
	t.Setenv("OPENAI_API_KEY", "")
	got := modelScope("gpt-4o,claude-haiku-4-5", table, "openai/qwen", "http://127.0.0.1:8000/v1", "openai/qwen")
	assert.Equal(t, []string{"openai/gpt-4o"}, got.Models, "served at the session's base URL")
}
