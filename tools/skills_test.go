//go:build unix

package tools

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pi-remote/pi-remote/env"
	"github.com/pi-remote/pi-remote/internal/unprivileged"
	"github.com/pi-remote/pi-remote/ops/local"
)

// skillDir is a directory of a skills tree, under the directory above
// the working directory "shared/repo".
type skillDir struct {
	path   string
	mode   os.FileMode // 0o755 when zero; 0o1777 for sticky
	nobody bool        // owned by the other user
	group  bool        // in the other user's group
}

// skillCase is a tree of skills and what Describe makes of it.
type skillCase struct {
	name  string
	dirs  []skillDir
	files []plant
	// want are the SkillFiles found, nearest first: path, content, or
	// the reason code of context.sh ("owner" and "dir-owner" get the
	// other user's uid).
	want [][3]string
}

const skillText = "---\nname: %s\ndescription: d\n---\nbody\n"

func skill(name string) string { return strings.Replace(skillText, "%s", name, 1) }

var skillCases = []skillCase{
	{
		name: "own skills, nearest first, .agents before .claude",
		files: []plant{
			{path: "shared/repo/.claude/skills/b/SKILL.md", content: skill("b")},
			{path: "shared/repo/.agents/skills/a/SKILL.md", content: skill("a")},
			{path: "shared/repo/.agents/skills/z/SKILL.md", content: skill("z")},
			{path: "shared/.agents/skills/c/SKILL.md", content: skill("c")},
			{path: "shared/repo/.agents/skills/no-skill/README.md", content: "not a skill"},
			{path: "shared/repo/.agents/skills/.hidden/SKILL.md", content: skill("hidden")},
		},
		want: [][3]string{
			{"shared/repo/.agents/skills/a/SKILL.md", skill("a")},
			{"shared/repo/.agents/skills/z/SKILL.md", skill("z")},
			{"shared/repo/.claude/skills/b/SKILL.md", skill("b")},
			{"shared/.agents/skills/c/SKILL.md", skill("c")},
		},
	},
	{
		// (The name is no skill's: Parse refuses it. The script still
		// reads the folder it names, not another.)
		name:  "folders named like options",
		files: []plant{{path: "shared/repo/.agents/skills/-/SKILL.md", content: skill("dash")}, {path: "shared/repo/.agents/skills/-P/SKILL.md", content: skill("p")}},
		want:  [][3]string{{"shared/repo/.agents/skills/-/SKILL.md", skill("dash")}, {"shared/repo/.agents/skills/-P/SKILL.md", skill("p")}},
	},
	{
		name:  "a skill folder of another user's",
		dirs:  []skillDir{{path: "shared/repo/.agents/skills/theirs", nobody: true}},
		files: []plant{{path: "shared/repo/.agents/skills/theirs/SKILL.md", content: skill("theirs")}, {path: "shared/repo/.agents/skills/mine/SKILL.md", content: skill("mine")}},
		want:  [][3]string{{"shared/repo/.agents/skills/mine/SKILL.md", skill("mine")}, {"shared/repo/.agents/skills/theirs", "", "dir-owner"}},
	},
	{
		name:  "a skills directory another group may write",
		dirs:  []skillDir{{path: "shared/repo/.claude/skills", mode: 0o775, group: true}},
		files: []plant{{path: "shared/repo/.claude/skills/a/SKILL.md", content: skill("a")}},
		want:  [][3]string{{"shared/repo/.claude/skills", "", "dir-writable"}},
	},
	{
		name:  "a SKILL.md of another user's, and one others may write",
		files: []plant{{path: "shared/repo/.agents/skills/a/SKILL.md", content: skill("a"), nobody: true}, {path: "shared/repo/.agents/skills/b/SKILL.md", content: skill("b"), mode: 0o666}},
		want:  [][3]string{{"shared/repo/.agents/skills/a/SKILL.md", "", "owner"}, {"shared/repo/.agents/skills/b/SKILL.md", "", "writable"}},
	},
	{
		// (Where fs.protected_hardlinks is off: see the context case.)
		name:  "a hard link in a sticky skill folder",
		dirs:  []skillDir{{path: "shared/repo/.agents/skills/a", mode: 0o1777}},
		files: []plant{{path: "private.txt", content: "not theirs to choose\n", mode: 0o600}, {path: "shared/repo/.agents/skills/a/SKILL.md", hard: "private.txt"}},
		want:  [][3]string{{"shared/repo/.agents/skills/a/SKILL.md", "", "linked"}},
	},
	{
		// Their link, in their directory, to a file of ours that reads as
		// a skill: they would choose it.
		name:  "our SKILL.md links into another user's directory",
		dirs:  []skillDir{{path: "pub", nobody: true}},
		files: []plant{{path: "private.md", content: skill("a"), mode: 0o600}, {path: "pub/SKILL.md", link: "../private.md", nobody: true}, {path: "shared/repo/.agents/skills/a/SKILL.md", link: "../../../../../pub/SKILL.md"}},
		want:  [][3]string{{"shared/repo/.agents/skills/a/SKILL.md", "", "link-dir"}},
	},
	{
		// The link's last directory is ours, but the way to it goes
		// through theirs, where they made a link to a folder of ours.
		name:  "our SKILL.md links through another user's directory",
		dirs:  []skillDir{{path: "pub", nobody: true}},
		files: []plant{{path: "private/a/SKILL.md", content: skill("a")}, {path: "pub/a", link: "../private/a", nobody: true}, {path: "shared/repo/.agents/skills/a/SKILL.md", link: "../../../../../pub/a/SKILL.md"}},
		want:  [][3]string{{"shared/repo/.agents/skills/a/SKILL.md", "", "link-dir"}},
	},
	{
		// (The skills' loop globs: the link's words must not.)
		name:  "a link with a glob's characters is taken as it is",
		files: []plant{{path: "shared/repo/.agents/skills/a/SKILL.md", link: "../*/SKILL.md"}, {path: "shared/repo/.agents/skills/*/SKILL.md", content: skill("x")}},
		want:  [][3]string{{"shared/repo/.agents/skills/*/SKILL.md", skill("x")}, {"shared/repo/.agents/skills/a/SKILL.md", skill("x")}},
	},
	{
		name:  "our SKILL.md links to a file of ours",
		files: []plant{{path: "shared/skills/a.md", content: skill("a")}, {path: "shared/repo/.agents/skills/a/SKILL.md", link: "/SHARED/skills/a.md"}},
		want:  [][3]string{{"shared/repo/.agents/skills/a/SKILL.md", skill("a")}},
	},
	{
		// (Only the first 64 KiB of a file are read, NULs dropped.)
		name:  "a FIFO is not waited on; a 1 GiB SKILL.md is read in part",
		files: []plant{{path: "shared/repo/.agents/skills/a/SKILL.md", fifo: true}, {path: "shared/repo/.agents/skills/b/SKILL.md", link: "../a/SKILL.md"}, {path: "shared/repo/.agents/skills/big/SKILL.md", content: skill("big"), size: 1 << 30}},
		want:  [][3]string{{"shared/repo/.agents/skills/big/SKILL.md", skill("big")}},
	},
	{
		name:  "a project directory anyone may write, not sticky",
		dirs:  []skillDir{{path: "shared", mode: 0o777}},
		files: []plant{{path: "shared/.agents/skills/a/SKILL.md", content: skill("a")}},
		want:  [][3]string{{"shared", "", "dir-writable"}},
	},
	{
		name:  "planted by another user in a sticky shared directory",
		dirs:  []skillDir{{path: "shared", mode: 0o1777}, {path: "shared/.agents", nobody: true}},
		files: []plant{{path: "shared/.agents/skills/a/SKILL.md", content: skill("a")}, {path: "shared/repo/.agents/skills/b/SKILL.md", content: skill("b")}},
		want:  [][3]string{{"shared/repo/.agents/skills/b/SKILL.md", skill("b")}, {"shared/.agents", "", "dir-owner"}},
	},
}

func (c skillCase) needsRoot() bool {
	for _, d := range c.dirs {
		if d.nobody || d.group {
			return true
		}
	}
	for _, p := range c.files {
		if p.nobody || p.group {
			return true
		}
	}
	return false
}

// build makes the case's tree in a new directory and returns it (real
// path) and the working directory.
func (c skillCase) build(t *testing.T) (base, cwd string, uid int) {
	t.Helper()
	uid, gid := -1, -1
	if c.needsRoot() {
		unprivileged.RequireRoot(t, "planting another user's skills")
		uid, gid = unprivileged.IDs(t)
	}
	base, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	cwd = filepath.Join(base, "shared", "repo")
	require.NoError(t, os.MkdirAll(cwd, 0o755))
	for _, p := range c.files {
		full := filepath.Join(base, p.path)
		require.NoError(t, os.MkdirAll(filepath.Dir(full), 0o755))
		if p.hard != "" {
			require.NoError(t, os.Link(filepath.Join(base, p.hard), full))
			continue
		}
		if p.fifo {
			require.NoError(t, syscall.Mkfifo(full, 0o644))
			continue
		}
		if p.size > 0 {
			require.NoError(t, os.WriteFile(full, []byte(p.content), 0o644))
			require.NoError(t, os.Truncate(full, p.size))
			continue
		}
		if p.link != "" {
			// (/SHARED is the tree's shared, for an absolute link.)
			require.NoError(t, os.Symlink(strings.Replace(p.link, "/SHARED", filepath.Join(base, "shared"), 1), full))
			if p.nobody {
				require.NoError(t, os.Lchown(full, uid, gid))
			}
			continue
		}
		mode := p.mode
		if mode == 0 {
			mode = 0o644
		}
		require.NoError(t, os.WriteFile(full, []byte(p.content), mode))
		require.NoError(t, os.Chmod(full, mode))
		if p.nobody {
			require.NoError(t, os.Chown(full, uid, gid))
		}
	}
	for _, d := range c.dirs {
		full := filepath.Join(base, d.path)
		require.NoError(t, os.MkdirAll(full, 0o755))
		mode := d.mode
		if mode == 0 {
			mode = 0o755
		}
		require.NoError(t, os.Chmod(full, mode&os.ModePerm|stickyBit(mode)))
		if d.nobody {
			require.NoError(t, os.Chown(full, uid, gid))
		}
		if d.group {
			require.NoError(t, os.Chown(full, -1, gid))
		}
	}
	return base, cwd, uid
}

// check compares the skill files found below base with the case's.
func (c skillCase) check(t *testing.T, base string, uid int, files []ContextFile) {
	t.Helper()
	var got, want []ContextFile
	for _, f := range files {
		if strings.HasPrefix(f.Path, base+"/") {
			got = append(got, f)
		}
	}
	for _, w := range c.want {
		f := ContextFile{Path: filepath.Join(base, w[0]), Content: w[1]}
		if w[2] != "" {
			reason := w[2]
			if reason == "owner" || reason == "dir-owner" {
				reason += " " + strconv.Itoa(uid)
			}
			f.Skipped = skillSkipReason(reason)
		}
		want = append(want, f)
	}
	assert.Equal(t, want, got)
}

// The skills' part of the script, under dash, bash --posix and BusyBox sh.
func TestSkillScriptUnderEachShell(t *testing.T) {
	for _, u := range userlands(t) {
		t.Run(u.name, func(t *testing.T) {
			for _, c := range skillCases {
				t.Run(c.name, func(t *testing.T) {
					base, cwd, uid := c.build(t)
					cmd := exec.CommandContext(t.Context(), u.shell[0], append(u.shell[1:], "-c", describeScript())...)
					cmd.Dir = cwd
					cmd.Env = []string{"PATH=" + u.path, "LC_ALL=C", "PWD=" + cwd}
					out, err := cmd.CombinedOutput()
					require.NoError(t, err, "%q", out)
					info, _ := parseDescription(string(out))
					c.check(t, base, uid, info.SkillFiles)
				})
			}
		})
	}
}

// Describe returns the skills with the context files, from one command.
func TestDescribeFindsSkills(t *testing.T) {
	c := skillCases[0]
	base, cwd, uid := c.build(t)
	require.NoError(t, os.WriteFile(filepath.Join(cwd, "AGENTS.md"), []byte("rules\n"), 0o644))
	info, files, err := Describe(t.Context(), env.New(local.New(), env.Options{Name: "box", Cwd: cwd, Home: base}))
	require.NoError(t, err)
	c.check(t, base, uid, info.SkillFiles)
	require.NotEmpty(t, files)
	assert.Equal(t, "rules\n", files[len(files)-1].Content, "the context files are the same as before")
}
