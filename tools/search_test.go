//go:build unix

package tools

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pi-remote/pi-remote/internal/shellquote"
	"github.com/pi-remote/pi-remote/internal/unprivileged"
)

// userland is a shell and the PATH its commands come from.
type userland struct {
	name  string
	shell []string
	path  string
}

// userlands are the shells search.sh runs under: dash and bash --posix with
// the GNU tools, and BusyBox sh with nothing but BusyBox applets on PATH.
// In CI a missing one fails the test.
func userlands(t *testing.T) []userland {
	t.Helper()
	var out []userland
	for _, u := range []userland{{name: "dash", shell: []string{"dash"}}, {name: "bash --posix", shell: []string{"bash", "--posix"}}, {name: "busybox", shell: []string{"busybox", "sh"}}} {
		bin, err := exec.LookPath(u.shell[0])
		if err != nil {
			if os.Getenv("CI") != "" {
				t.Fatalf("%s is not installed; CI installs it", u.shell[0])
			}
			t.Logf("%s is not installed: search.sh is not tested under it", u.shell[0])
			continue
		}
		u.shell[0] = bin
		u.path = os.Getenv("PATH")
		if u.name == "busybox" {
			applets := t.TempDir()
			require.NoError(t, exec.Command(bin, "--install", "-s", applets).Run())
			u.path = applets
		}
		out = append(out, u)
	}
	require.NotEmpty(t, out)
	return out
}

func (u userland) run(t *testing.T, dir, command string) (string, error) {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), u.shell[0], append(u.shell[1:], "-c", hostScript(dir, command))...)
	cmd.Env = []string{"PATH=" + u.path, "LC_ALL=C"}
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func writeTree(t *testing.T, root string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(root, name)
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
	}
}

// The listing and the search of search.sh, run directly under each shell.
func TestSearchScriptUnderEachShell(t *testing.T) {
	outer := t.TempDir()
	root := filepath.Join(outer, "repo")
	writeTree(t, outer, map[string]string{".ignore": "above.txt\n"})
	writeTree(t, root, map[string]string{
		".git/HEAD":             "ref: refs/heads/main\n",
		".git/info/exclude":     "excluded.txt\n",
		".gitignore":            "*.o\nout/\n!keep.o\n",
		"a.txt":                 "needle one\n",
		"above.txt":             "needle\n",
		"excluded.txt":          "needle\n",
		"x.o":                   "needle\n",
		"keep.o":                "needle\n",
		"out/gen.txt":           "needle\n",
		"sub/.gitignore":        "local.txt\n",
		"sub/local.txt":         "needle\n",
		"sub/b c.txt":           "before\nneedle two\nafter\n",
		"sub/-dash.txt":         "needle three\n",
		"sub/it's:here.txt":     "needle: four\n",
		"sub/bin.dat":           "needle\x00\n",
		"node_modules/m/x.txt":  "needle\n",
		"sub/deep/.hidden/h.md": "needle five\n",
	})
	require.NoError(t, os.Symlink("a.txt", filepath.Join(root, "link")))
	wantFiles := []string{".gitignore", "a.txt", "keep.o", "link", "sub/-dash.txt", "sub/.gitignore", "sub/b c.txt", "sub/bin.dat", "sub/deep/.hidden/h.md", "sub/it's:here.txt"}

	for _, u := range userlands(t) {
		t.Run(u.name, func(t *testing.T) {
			out, err := u.run(t, root, "describe_search_root")
			require.NoError(t, err, out)
			tree := parseTree(root, out)
			assert.Empty(t, tree.complaints)
			assert.Equal(t, wantFiles, tree.visible("fl"))

			var files []string
			for _, f := range tree.visible("f") {
				files = append(files, "./"+f)
			}
			g := &grepCollector{limit: 100, cancel: func() {}, files: files}
			script := "printf '%s\\0' " + shellquote.Join(files...) + " | search_text_files 1 -E -e needle"
			cmd := exec.CommandContext(context.Background(), u.shell[0], append(u.shell[1:], "-c", hostScript(root, script))...)
			cmd.Env = []string{"PATH=" + u.path, "LC_ALL=C"}
			cmd.Stdout, cmd.Stderr = g, g
			require.NoError(t, cmd.Run())
			g.flush()
			assert.Empty(t, g.messages)
			assert.Equal(t, "a.txt:1: needle one\nkeep.o:1: needle\n"+
				"sub/-dash.txt:1: needle three\n"+
				"sub/b c.txt-1- before\nsub/b c.txt:2: needle two\nsub/b c.txt-3- after\n"+
				"sub/deep/.hidden/h.md:1: needle five\n"+
				"sub/it's:here.txt:1: needle: four\n", g.out.String(), "binary files skipped, odd names intact")
		})
	}
}

// An unreadable directory is a complaint after the records, not a path.
func TestSearchScriptReportsUnreadableDirectories(t *testing.T) {
	if os.Geteuid() == 0 {
		// Root reads every directory.
		unprivileged.Rerun(t, "TestSearchScriptReportsUnreadableDirectories")
		return
	}
	root := t.TempDir()
	writeTree(t, root, map[string]string{"open/a.txt": "x\n", "closed/b.txt": "x\n"})
	require.NoError(t, os.Chmod(filepath.Join(root, "closed"), 0))
	t.Cleanup(func() { os.Chmod(filepath.Join(root, "closed"), 0o755) })
	for _, u := range userlands(t) {
		t.Run(u.name, func(t *testing.T) {
			out, _ := u.run(t, root, "describe_search_root")
			tree := parseTree(root, out)
			assert.Equal(t, []string{"open/a.txt"}, tree.visible("fl"))
			require.Len(t, tree.complaints, 1, "%q", out)
			assert.True(t, strings.Contains(tree.complaints[0], "closed"), tree.complaints[0])
		})
	}
}
