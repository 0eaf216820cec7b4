package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pi-remote/pi-remote/agent"
)

// The user's templates always; the project's only when the user trusts
// it, and never over the user's or a built-in command; the user's own
// skills.
func TestLoadSkillsAndTemplates(t *testing.T) {
	home, project := t.TempDir(), t.TempDir()
	t.Setenv("HOME", home)
	write := func(p, text string) {
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(text), 0o644))
	}
	write(filepath.Join(home, ".pi-remote", "prompts", "review.md"), "Mine: review $1.")
	write(filepath.Join(home, ".pi-remote", "prompts", "model.md"), "Shadows /model.")
	write(filepath.Join(home, ".pi-remote", "skills", "notes", "SKILL.md"), "---\nname: notes\ndescription: Takes notes.\n---\nBody.\n")
	write(filepath.Join(project, ".pi-remote", "prompts", "review.md"), "Theirs.")
	write(filepath.Join(project, ".pi-remote", "prompts", "ship.md"), "---\ndescription: Ship it\n---\nShip $@.")

	var warn bytes.Buffer
	mine, templates := loadSkillsAndTemplates(settings{loaded: agent.LoadedSettings{ProjectDir: project}}, &warn)
	require.Len(t, mine, 1)
	assert.Equal(t, "notes", mine[0].Name)
	require.Len(t, templates, 1)
	assert.Equal(t, "Mine: review $1.", templates[0].Body)
	assert.Contains(t, warn.String(), "pi-remote: not using the prompt templates in "+filepath.Join(project, ".pi-remote", "prompts")+", as you have not trusted the project")
	assert.Contains(t, warn.String(), "pi-remote: prompt template "+filepath.Join(home, ".pi-remote", "prompts", "model.md")+" is not used: /model is a built-in command")

	warn.Reset()
	_, templates = loadSkillsAndTemplates(settings{loaded: agent.LoadedSettings{ProjectDir: project, Trusted: true}}, &warn)
	require.Len(t, templates, 2)
	assert.Equal(t, "Mine: review $1.", templates[0].Body, "the user's own first")
	assert.Equal(t, "ship", templates[1].Name)
	assert.Equal(t, "Ship it", templates[1].Description)
	assert.Contains(t, warn.String(), "/review is "+filepath.Join(home, ".pi-remote", "prompts", "review.md"))
}
