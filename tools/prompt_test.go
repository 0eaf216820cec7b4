package tools_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pi-remote/pi-remote/env"
	"github.com/pi-remote/pi-remote/ops/local"
	"github.com/pi-remote/pi-remote/tools"
)

// Context files are read on the host from the working directory upwards,
// AGENTS.md preferred to CLAUDE.md in one directory, listed root first.
func TestDescribeReadsContextFilesUpwards(t *testing.T) {
	root, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	cwd := filepath.Join(root, "repo", "svc")
	require.NoError(t, os.MkdirAll(cwd, 0o755))
	write := func(rel, content string) {
		require.NoError(t, os.WriteFile(filepath.Join(root, rel), []byte(content), 0o644))
	}
	write("AGENTS.md", "outer rules\n")
	write("repo/CLAUDE.md", "repo rules\n")
	write("repo/svc/AGENTS.md", "service rules\n")
	write("repo/svc/CLAUDE.md", "ignored: AGENTS.md wins here\n")

	e := env.New(local.New(), env.Options{Name: "box", Cwd: cwd, Home: root})
	info, files, err := tools.Describe(t.Context(), e)
	require.NoError(t, err)
	assert.Equal(t, "box", info.Name)
	assert.Equal(t, cwd, info.Cwd)
	assert.NotEmpty(t, info.User)
	assert.NotEmpty(t, info.OS)
	var got []tools.ContextFile
	for _, f := range files {
		if len(f.Path) > len(root) && f.Path[:len(root)] == root {
			got = append(got, f)
		}
	}
	assert.Equal(t, []tools.ContextFile{
		{Path: filepath.Join(root, "AGENTS.md"), Content: "outer rules\n"},
		{Path: filepath.Join(root, "repo/CLAUDE.md"), Content: "repo rules\n"},
		{Path: filepath.Join(cwd, "AGENTS.md"), Content: "service rules\n"},
	}, got)
}

func TestBuildSystemPromptGolden(t *testing.T) {
	f := newFixture(t)
	active, err := tools.Select(f.defs, tools.DefaultActive)
	require.NoError(t, err)
	prompt := tools.BuildSystemPrompt(tools.PromptParts{
		Active:       active,
		Hosts:        []tools.HostInfo{{Name: "devbox", User: "alice", Host: "devbox", OS: "Linux x86_64", Cwd: "/home/alice/src"}},
		ContextFiles: []tools.ContextFile{{Path: "/home/alice/src/AGENTS.md", Content: "Run make test before you finish.\n"}},
		Date:         time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC),
	})
	golden(t, "system_prompt_run.txt", prompt)
}

func TestSystemPromptListsEveryHost(t *testing.T) {
	p := tools.BuildSystemPrompt(tools.PromptParts{
		Hosts: []tools.HostInfo{{Name: "dev", User: "a", Host: "dev1", Cwd: "/src"}, {Name: "db", User: "b", Host: "db1", Cwd: "/var/lib"}},
		Date:  time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC),
	})
	assert.Contains(t, p, `- Host "dev": a@dev1; working directory /src.`)
	assert.Contains(t, p, `- Host "db": b@db1; working directory /var/lib.`)
	assert.Contains(t, p, `without it the tool acts on "dev"`)
}

func TestSystemPromptSaysWhichHostIsUnreachable(t *testing.T) {
	p := tools.BuildSystemPrompt(tools.PromptParts{
		Hosts: []tools.HostInfo{{Name: "dev", User: "a", Host: "dev1", Cwd: "/src"}, {Name: "db", Host: "b@db1:22", Unreachable: "connection refused"}},
		Date:  time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC),
	})
	assert.Contains(t, p, `- Host "dev": a@dev1; working directory /src.`)
	assert.Contains(t, p, `- Host "db": b@db1:22; unreachable when this session started (connection refused). Its calls fail until it answers; each call tries again.`)
}

// A context file Describe left out never reaches the prompt, and the
// heading says what the files are: found from the working directory
// upwards, the user's or root's — not "the repository's".
func TestSystemPromptLeavesOutSkippedContextFiles(t *testing.T) {
	p := tools.BuildSystemPrompt(tools.PromptParts{
		Hosts: []tools.HostInfo{{Name: "dev", User: "alice", Host: "dev1", Cwd: "/srv/app"}},
		ContextFiles: []tools.ContextFile{
			{Path: "/srv/AGENTS.md", Skipped: "it is owned by uid 65534, neither you nor root"},
			{Path: "/srv/app/AGENTS.md", Content: "Run make test.\n"},
		},
		Date: time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC),
	})
	assert.NotContains(t, p, "/srv/AGENTS.md")
	assert.NotContains(t, p, "repository")
	assert.Contains(t, p, "\nContext files on host \"dev\": the AGENTS.md or CLAUDE.md of the working directory and of each directory above it, outermost first; each is owned by alice or root, in a directory no other user may change. Follow them where they apply:\n\n## /srv/app/AGENTS.md\n\nRun make test.\n")

	none := tools.BuildSystemPrompt(tools.PromptParts{ContextFiles: []tools.ContextFile{{Path: "/srv/AGENTS.md", Skipped: "other users may write to it"}}})
	assert.NotContains(t, none, "Context files", "no heading over nothing")
}

// Skills are listed by name, description, host and path, never with their
// bodies; without the read tool the model could not use one, and none is
// listed.
func TestSystemPromptListsSkills(t *testing.T) {
	f := newFixture(t)
	active, err := tools.Select(f.defs, tools.DefaultActive)
	require.NoError(t, err)
	parts := tools.PromptParts{
		Active: active,
		Hosts:  []tools.HostInfo{{Name: "dev", User: "alice", Host: "dev1", Cwd: "/srv/app"}},
		Skills: []tools.PromptSkill{
			{Name: "deploy", Description: "Ships the service.\nUse for releases.", Host: "dev", Path: "/srv/app/.agents/skills/deploy/SKILL.md"},
			{Name: "pdf", Description: "Fills PDF forms.", Host: "local", Path: "/home/alice/.pi-remote/skills/pdf/SKILL.md"},
		},
		Date: time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC),
	}
	p := tools.BuildSystemPrompt(parts)
	assert.Contains(t, p, "\nSkills: instructions for particular kinds of task, each in a SKILL.md file on a host. When a task matches a skill's description, read its file with the read tool on that host before you start and follow it; paths it names are relative to its folder.\n"+
		"- deploy (host \"dev\", /srv/app/.agents/skills/deploy/SKILL.md): Ships the service. Use for releases.\n"+
		"- pdf (host \"local\", /home/alice/.pi-remote/skills/pdf/SKILL.md): Fills PDF forms.\n")

	parts.Active, err = tools.Select(f.defs, []string{"bash"})
	require.NoError(t, err)
	assert.NotContains(t, tools.BuildSystemPrompt(parts), "Skills:")
}
