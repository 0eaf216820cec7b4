package skills_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pi-remote/pi-remote/skills"
)

func TestParse(t *testing.T) {
	s, err := skills.Parse("/r/.agents/skills/pdf-tools/SKILL.md", "---\nname: pdf-tools\ndescription: Reads and fills PDF forms.\nlicense: MIT\n---\n# PDF\nRun scripts/fill.py.\n")
	require.NoError(t, err)
	assert.Equal(t, skills.Skill{Name: "pdf-tools", Description: "Reads and fills PDF forms.", Path: "/r/.agents/skills/pdf-tools/SKILL.md", Body: "# PDF\nRun scripts/fill.py.\n"}, s)
	assert.Equal(t, "/r/.agents/skills/pdf-tools", s.Dir())
}

// Each rule of the format, reported with the file and the line.
func TestParseRefusesWhatTheFormatDoesNot(t *testing.T) {
	long := strings.Repeat("a", 65)
	for _, c := range []struct{ name, folder, text, want string }{
		{"no frontmatter", "x", "# x\n", "/s/x/SKILL.md:1: a SKILL.md begins with a frontmatter"},
		{"unclosed", "x", "---\nname: x\n", "/s/x/SKILL.md:1: the frontmatter has no closing line"},
		{"bad YAML", "x", "---\nname: x\ndescription: a: b\n---\n", "/s/x/SKILL.md: yaml: line 3: mapping values are not allowed"},
		{"no name", "x", "---\ndescription: d\n---\n", "/s/x/SKILL.md:1: no name"},
		{"upper case", "Pdf", "---\nname: Pdf\ndescription: d\n---\n", `/s/Pdf/SKILL.md:2: name "Pdf": want lowercase`},
		{"double hyphen", "a--b", "---\nname: a--b\ndescription: d\n---\n", `name "a--b": want`},
		{"leading hyphen", "-a", "---\nname: -a\ndescription: d\n---\n", `name "-a": want`},
		{"too long", long, "---\nname: " + long + "\ndescription: d\n---\n", "longer than 64"},
		{"not the folder's", "y", "---\ndescription: d\nname: x\n---\n", `/s/y/SKILL.md:3: name "x" is not its folder's name "y"`},
		{"no description", "x", "---\nname: x\ndescription: \"  \"\n---\n", "/s/x/SKILL.md:3: no description"},
		{"description too long", "x", "---\nname: x\ndescription: " + strings.Repeat("d", 1025) + "\n---\n", "/s/x/SKILL.md:3: the description is longer than 1024"},
		{"description a list", "x", "---\nname: x\ndescription:\n  - d\n---\n", "/s/x/SKILL.md:4: description: want a single line"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := skills.Parse("/s/"+c.folder+"/SKILL.md", c.text)
			require.Error(t, err)
			assert.Contains(t, err.Error(), c.want)
		})
	}
}

func TestLoadReadsTheUsersFolder(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) {
		require.NoError(t, os.MkdirAll(filepath.Join(dir, name), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(dir, name, "SKILL.md"), []byte(text), 0o644))
	}
	write("deploy", "---\nname: deploy\ndescription: Ships it.\n---\nSteps.\n")
	write("broken", "---\nname: broken\n")
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "empty"), 0o755))
	found, problems := skills.Load(dir)
	require.Len(t, found, 1)
	assert.Equal(t, "deploy", found[0].Name)
	assert.True(t, found[0].User)
	assert.Equal(t, filepath.Join(dir, "deploy"), found[0].Dir())
	require.Len(t, problems, 1)
	assert.Contains(t, problems[0].Error(), filepath.Join(dir, "broken", "SKILL.md")+":1:")

	found, problems = skills.Load(filepath.Join(dir, "none"))
	assert.Empty(t, found)
	assert.Empty(t, problems, "a missing folder has no skills")
}

func TestResolveKeepsTheFirstOfEachName(t *testing.T) {
	user := skills.Skill{Name: "review", Path: "/home/u/.pi-remote/skills/review/SKILL.md", User: true}
	near := skills.Skill{Name: "review", Host: "box", Path: "/r/sub/.agents/skills/review/SKILL.md"}
	claude := skills.Skill{Name: "lint", Host: "box", Path: "/r/.agents/skills/lint/SKILL.md"}
	claude2 := skills.Skill{Name: "lint", Host: "box", Path: "/r/.claude/skills/lint/SKILL.md"}
	far := skills.Skill{Name: "lint", Host: "box", Path: "/.agents/skills/lint/SKILL.md"}
	other := skills.Skill{Name: "lint", Host: "db", Path: "/srv/.agents/skills/lint/SKILL.md"}
	kept, hidden := skills.Resolve([]skills.Skill{user, near, claude, claude2, far, other})
	assert.Equal(t, []skills.Skill{claude, user}, kept, "sorted by name")
	require.Len(t, hidden, 4)
	assert.Contains(t, hidden[0].String(), "your own skills come before a project's")
	assert.Contains(t, hidden[1].String(), ".agents comes before .claude")
	assert.Contains(t, hidden[2].String(), "nearer the working directory")
	assert.Contains(t, hidden[3].String(), `skill "lint" at /srv/.agents/skills/lint/SKILL.md on host "db" is hidden by the one at /r/.agents/skills/lint/SKILL.md on host "box" (the default host's come first`)
}

func TestMessage(t *testing.T) {
	s := skills.Skill{Name: "pdf", Host: "box", Path: "/r/.agents/skills/pdf/SKILL.md", Body: "\nRun scripts/fill.py.\n"}
	assert.Equal(t, "Use the skill \"pdf\" (/r/.agents/skills/pdf/SKILL.md on host \"box\"). Paths in it are relative to /r/.agents/skills/pdf.\n\nRun scripts/fill.py.\n\nform.pdf please\n", s.Message(" form.pdf please "))
	assert.Equal(t, "Use the skill \"pdf\" (/r/.agents/skills/pdf/SKILL.md on host \"box\"). Paths in it are relative to /r/.agents/skills/pdf.\n\nRun scripts/fill.py.\n", s.Message(""))
}
