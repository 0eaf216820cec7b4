//go:build linux

package integration

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pi-remote/pi-remote/env"
	"github.com/pi-remote/pi-remote/internal/unprivileged"
	rssh "github.com/pi-remote/pi-remote/ops/ssh"
	"github.com/pi-remote/pi-remote/tools"
)

// Context files on the BusyBox-only host, logged in as an unprivileged
// user (no stat -c, no /dev/fd there; /proc is): another user's AGENTS.md
// above the working directory, and root's in a directory anyone may
// write, stay out of the prompt; the user's own and root's in safe
// directories are read.
func TestBusyboxDescribeLeavesOutOtherUsersContextFiles(t *testing.T) {
	t.Parallel()
	b := startBusyboxHost(t, false)
	h := host(t, b.srv, rssh.HostOptions{})
	dir := b.scratch(t, h) // the user's, in the chroot's sticky /tmp
	here := func(p string) string { return filepath.Join(b.root, p) }
	uid, _ := unprivileged.IDs(t)
	me, _ := userIDs(t, "pi-busybox")

	shared, repo, cwd := dir+"/shared", dir+"/shared/repo", dir+"/shared/repo/sub"
	require.NoError(t, os.MkdirAll(here(cwd), 0o755))
	require.NoError(t, os.Chmod(here(shared), 0o777)) // root's, anyone may write, not sticky
	require.NoError(t, os.Chown(here(repo), me, -1))
	plant := func(p, content string, owner int) {
		require.NoError(t, os.WriteFile(here(p), []byte(content), 0o644))
		require.NoError(t, os.Chown(here(p), owner, -1))
	}
	plant(dir+"/AGENTS.md", "planted by nobody\n", uid)
	plant(shared+"/AGENTS.md", "root's, replaceable\n", 0)
	plant(repo+"/AGENTS.md", "the user's\n", me)
	plant(cwd+"/CLAUDE.md", "root's\n", 0)
	// Skills, read by the same command: the user's own, and one in a
	// folder another user owns.
	skillText := "---\nname: %s\ndescription: d\n---\nbody\n"
	for name, owner := range map[string]int{"mine": me, "theirs": uid} {
		require.NoError(t, os.MkdirAll(here(repo+"/.agents/skills/"+name), 0o755))
		plant(repo+"/.agents/skills/"+name+"/SKILL.md", fmt.Sprintf(skillText, name), me)
		require.NoError(t, os.Chown(here(repo+"/.agents/skills/"+name), owner, -1))
	}

	info, files, err := tools.Describe(t.Context(), env.New(h, env.Options{Name: "bb", Cwd: cwd}))
	require.NoError(t, err)
	assert.Equal(t, "pi-busybox", info.User)
	var got [][2]string
	for _, f := range files {
		got = append(got, [2]string{f.Path, f.Content + f.Skipped})
	}
	assert.Equal(t, [][2]string{
		{dir + "/AGENTS.md", "it is owned by uid " + strconv.Itoa(uid) + ", neither you nor root"},
		{shared + "/AGENTS.md", "other users may write to its directory, which is not sticky, so they could replace it"},
		{repo + "/AGENTS.md", "the user's\n"},
		{cwd + "/CLAUDE.md", "root's\n"},
	}, got)
	got = nil
	for _, f := range info.SkillFiles {
		got = append(got, [2]string{f.Path, f.Content + f.Skipped})
	}
	assert.Equal(t, [][2]string{
		{repo + "/.agents/skills/mine/SKILL.md", fmt.Sprintf(skillText, "mine")},
		{repo + "/.agents/skills/theirs", "it is owned by uid " + strconv.Itoa(uid) + ", neither you nor root"},
	}, got)
}
