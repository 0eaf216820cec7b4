package workspace

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pi-remote/pi-remote/env"
	"github.com/pi-remote/pi-remote/loop"
	"github.com/pi-remote/pi-remote/ops/local"
	"github.com/pi-remote/pi-remote/prompts"
	"github.com/pi-remote/pi-remote/skills"
)

// writeSkill makes dir/.agents/skills/NAME/SKILL.md.
func writeSkill(t *testing.T, dir, name, text string) string {
	t.Helper()
	p := filepath.Join(dir, ".agents", "skills", name, "SKILL.md")
	require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
	require.NoError(t, os.WriteFile(p, []byte(text), 0o644))
	return p
}

// Skills of two hosts and the user's own: one of each name, the user's
// first, then the default host's; the system prompt lists those on a host
// with it; a malformed one is said and left out; /skill:NAME and
// templates expand; a new default host puts its skills first.
func TestSkillsAndTemplatesOfAWorkspace(t *testing.T) {
	dirA, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	dirB, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	lint := writeSkill(t, dirA, "lint", "---\nname: lint\ndescription: Lints the code.\n---\nRun make lint.\n")
	writeSkill(t, dirA, "broken", "---\nname: Broken\ndescription: x\n---\n")
	writeSkill(t, dirB, "lint", "---\nname: lint\ndescription: B's lint.\n---\nRun b-lint.\n")
	deploy := writeSkill(t, dirB, "deploy", "---\nname: deploy\ndescription: Ships it.\n---\nRun make ship.\n")
	mine := skills.Skill{Name: "deploy", Description: "My way.", Path: "/home/me/.pi-remote/skills/deploy/SKILL.md", User: true, Body: "Ask me first.\n"}
	review := prompts.Template{Name: "review", Description: "Review a file", Body: "Review $1 carefully."}

	// Both are this machine, each in its own directory.
	hs := Hosts{
		{Name: "a", Env: env.New(local.New(), env.Options{Name: "a", Cwd: dirA})},
		{Name: "b", Env: env.New(local.New(), env.Options{Name: "b", Cwd: dirB})},
	}
	var warn bytes.Buffer
	w, err := Open(t.Context(), hs, Options{Active: []string{"read"}, MaxTurns: 1, Warn: &warn, UserSkills: []skills.Skill{mine}, Templates: []prompts.Template{review}})
	require.NoError(t, err)
	defer w.Close()

	assert.Contains(t, warn.String(), `pi-remote: skill left out, on host "a": `+filepath.Join(dirA, ".agents/skills/broken/SKILL.md")+`:2: name "Broken"`)
	assert.Contains(t, warn.String(), `pi-remote: skill "lint" at `+filepath.Join(dirB, ".agents/skills/lint/SKILL.md")+` on host "b" is hidden by the one at `+lint+` on host "a"`)
	assert.Contains(t, warn.String(), `pi-remote: skill "deploy" at `+deploy+` on host "b" is hidden by the one at /home/me/.pi-remote/skills/deploy/SKILL.md on host "a" (your own skills come before a project's)`)

	assert.Equal(t, []Command{
		{Name: "review", Description: "Review a file"},
		{Name: "skill:deploy", Description: "My way.", Skill: true, Path: mine.Path, Host: "a"},
		{Name: "skill:lint", Description: "Lints the code.", Skill: true, Path: lint, Host: "a"},
	}, w.Commands())

	prompt := w.Config.SystemPrompt([]loop.Tool{{Name: "read"}})
	assert.Contains(t, prompt, "- deploy (host \"a\", /home/me/.pi-remote/skills/deploy/SKILL.md): My way.\n- lint (host \"a\", "+lint+"): Lints the code.\n")
	assert.NotContains(t, prompt, "Run make lint", "bodies are not in the prompt")

	text, ok := w.Expand("skill:lint", "only src/")
	require.True(t, ok)
	assert.Equal(t, "Use the skill \"lint\" ("+lint+" on host \"a\"). Paths in it are relative to "+filepath.Dir(lint)+".\n\nRun make lint.\n\nonly src/\n", text)
	text, ok = w.Expand("review", "src/a.go")
	require.True(t, ok)
	assert.Equal(t, "Review src/a.go carefully.", text)
	_, ok = w.Expand("skill:nope", "")
	assert.False(t, ok)
	_, ok = w.Expand("nope", "")
	assert.False(t, ok)

	require.NoError(t, w.SetDefault(t.Context(), "b"))
	k, ok := skills.Find(w.Skills, "lint")
	require.True(t, ok)
	assert.Equal(t, "b", k.Host, "the default host's skill comes first")
	k, _ = skills.Find(w.Skills, "deploy")
	assert.Equal(t, "b", k.Host, "the user's skill is read through the host on this machine")
	assert.True(t, k.User)
}

// With no host on this machine the user's skills are the person's alone:
// /skill:NAME works, the prompt does not list them (no tool reaches them).
func TestUserSkillsWithoutALocalHost(t *testing.T) {
	mine := skills.Skill{Name: "notes", Description: "Mine.", Path: "/home/me/.pi-remote/skills/notes/SKILL.md", User: true, Body: "Body.\n"}
	w := &Workspace{userSkills: []skills.Skill{mine}, Hosts: Hosts{{Name: "remote", SSH: nil, Down: os.ErrDeadlineExceeded}}}
	w.Skills = w.resolveSkills()
	require.Len(t, w.Skills, 1)
	assert.Equal(t, "", w.Skills[0].Host)
	assert.Empty(t, promptSkills(w.Skills))
	text, ok := w.Expand("skill:notes", "")
	require.True(t, ok)
	assert.Contains(t, text, "(/home/me/.pi-remote/skills/notes/SKILL.md on this machine)")
}
