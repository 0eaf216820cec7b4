package toolstest

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pi-remote/pi-remote/env"
	"github.com/pi-remote/pi-remote/internal/shellquote"
)

// engines returns the host capabilities to test: the probed ones (rg, fd
// when installed) and the POSIX fallbacks. In CI, rg and fd must be there.
func engines(t *testing.T, f *fixture) map[string]env.Capabilities {
	t.Helper()
	caps, err := f.env.Capabilities(t.Context())
	require.NoError(t, err)
	if f.h.RequireEngines {
		require.NotEmpty(t, caps.Rg, "CI installs ripgrep")
		require.NotEmpty(t, caps.Fd, "CI installs fd-find")
	}
	fallback := caps
	fallback.Rg, fallback.Fd = "", ""
	out := map[string]env.Capabilities{"posix": fallback}
	if caps.Rg != "" && caps.Fd != "" {
		out["rg+fd"] = caps
	} else {
		t.Logf("rg or fd not installed here: only the POSIX fallbacks are tested")
	}
	return out
}

func searchTree(f *fixture) {
	f.write("src/main.go", "package main\n\nfunc main() {\n\tprintln(\"Hello\")\n}\n")
	f.write("src/util/strings.go", "package util\n\n// hello helper\nfunc Hello() string { return \"-v flag\" }\n")
	f.write("cmd/tool/main.go", "package main\n// TODO: hello\n")
	f.write("docs/a.json", "{\"hello\": 1}\n")
	f.write("docs/deep/b.json", "{}\n")
	f.write(".hidden/conf.go", "package hidden // hello\n")
	f.write(".git/config", "hello from git internals\n")
	f.write("notes.txt", strings.Repeat("x", 600)+" hello\n")
}

func testGrep(t *testing.T, h Harness) {
	f := newFixture(t, h)
	searchTree(f)
	for name, caps := range engines(t, f) {
		t.Run(name, func(t *testing.T) {
			f.env.SetCapabilities(caps)
			all := f.ok("grep", map[string]any{"pattern": "hello"})
			body, _, _ := strings.Cut(all, "\n\n[")
			got := strings.Split(body, "\n")
			slicesSort(got)
			require.Len(t, got, 5, all)
			assert.Equal(t, []string{
				".hidden/conf.go:1: package hidden // hello",
				"cmd/tool/main.go:2: // TODO: hello",
				"docs/a.json:1: {\"hello\": 1}",
				"notes.txt:1: " + strings.Repeat("x", 500) + "... [line cut]",
				"src/util/strings.go:3: // hello helper",
			}, got, "paths relative to the searched directory; hidden files included; .git skipped")
			assert.Contains(t, f.ok("grep", map[string]any{"pattern": "HELLO", "ignoreCase": true, "path": "src"}), "main.go:4: \tprintln(\"Hello\")")
			assert.Contains(t, f.ok("grep", `{"pattern":"HELLO","ignoreCase":"true","path":"src"}`), "main.go:4:", `"true" is coerced to true`)
			assert.Equal(t, "strings.go:4: func Hello() string { return \"-v flag\" }", f.ok("grep", map[string]any{"pattern": "-v", "path": "src/util/strings.go"}), "a pattern starting with - is a pattern; a file search shows the file name")
			assert.Equal(t, "main.go:4: \tprintln(\"Hello\")", f.ok("grep", map[string]any{"pattern": "print", "path": "src", "glob": "main.go"}))
			assert.Equal(t, "a.json:1: {\"hello\": 1}", f.ok("grep", map[string]any{"pattern": "hello", "path": "docs", "glob": "*.{json,go}"}))
			assert.Equal(t, "deep/b.json:1: {}", f.ok("grep", map[string]any{"pattern": "}", "path": "docs", "glob": "!a.json", "literal": true}), "a negated glob leaves files out")
			withCtx := f.ok("grep", map[string]any{"pattern": "func main", "path": "src/main.go", "context": 1})
			assert.Equal(t, "main.go-2- \nmain.go:3: func main() {\nmain.go-4- \tprintln(\"Hello\")", withCtx)
			assert.Equal(t, "No matches found.", f.ok("grep", map[string]any{"pattern": "zzz_nothing"}))
			assert.NotContains(t, f.ok("grep", map[string]any{"pattern": "internals"}), "git", ".git is never searched")
			assert.Equal(t, "src/util/strings.go:4: func Hello() string { return \"-v flag\" }", f.ok("grep", map[string]any{"pattern": "return \"-v", "literal": true}))

			limited := f.ok("grep", map[string]any{"pattern": "hello", "ignoreCase": true, "limit": 2})
			body, notice, found := strings.Cut(limited, "\n\n[")
			require.True(t, found, limited)
			assert.Len(t, strings.Split(body, "\n"), 2)
			assert.True(t, strings.HasPrefix(notice, "2 matches limit reached. Use limit=4 for more, or refine the pattern."), notice)

			long := f.ok("grep", map[string]any{"pattern": "hello", "path": "notes.txt"})
			assert.Contains(t, long, "... [line cut]")
			assert.Contains(t, long, "Some lines were cut at 500 characters")

			f.fails("grep", map[string]any{"pattern": "x", "path": "missing-dir"}, "File not found")

			dialect := f.ok("grep", map[string]any{"pattern": `zzz\d`})
			if name == "posix" {
				assert.Contains(t, dialect, "POSIX extended regex", "the difference from rg is stated")
			} else {
				assert.Equal(t, "No matches found.", dialect)
			}
		})
	}
}

func slicesSort(s []string) {
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && s[j] < s[j-1]; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
}

func testFind(t *testing.T, h Harness) {
	f := newFixture(t, h)
	searchTree(f)
	f.write("node_modules/pkg/index.go", "package pkg\n")
	for name, caps := range engines(t, f) {
		t.Run(name, func(t *testing.T) {
			f.env.SetCapabilities(caps)
			assert.Equal(t, ".hidden/conf.go\ncmd/tool/main.go\nsrc/main.go\nsrc/util/strings.go", f.ok("find", map[string]any{"pattern": "*.go"}),
				"hidden files included, .git and node_modules skipped")
			assert.Equal(t, "docs/a.json\ndocs/deep/b.json", f.ok("find", map[string]any{"pattern": "**/*.json"}))
			assert.Equal(t, "cmd/tool/main.go", f.ok("find", map[string]any{"pattern": "cmd/**/main.go"}))
			assert.Equal(t, "docs/a.json\nsrc/main.go\nsrc/util/strings.go", f.ok("find", map[string]any{"pattern": "{src,docs}/**/{*.go,a.json}"}), "braces, as rg and fd read them")
			assert.Equal(t, "main.go\nutil/strings.go", f.ok("find", map[string]any{"pattern": "*.go", "path": "src"}))
			assert.Equal(t, "No files found matching *.rs.", f.ok("find", map[string]any{"pattern": "*.rs"}))
			limited := f.ok("find", map[string]any{"pattern": "*.go", "limit": 2})
			assert.Equal(t, ".hidden/conf.go\ncmd/tool/main.go\n\n[2 of 4 results shown (limit 2). Use limit=4 for more, or refine the pattern.]", limited)
			f.fails("find", map[string]any{"pattern": "*.go", "path": "nope"}, "File not found")
			f.fails("find", map[string]any{"pattern": "*.go", "path": "notes.txt"}, "Not a directory")
		})
	}
	t.Run("an unreadable directory is reported, not listed", func(t *testing.T) {
		if f.run("id -u") == "0\n" {
			t.Skip("root reads every directory: the unprivileged runs of this suite cover it")
		}
		g := newFixture(t, h)
		g.write("open/a.go", "package a\n")
		g.write("closed/b.go", "package b\n")
		g.run("chmod 000 " + shellquote.Quote(g.path("closed")))
		for name, caps := range engines(t, g) {
			t.Run(name, func(t *testing.T) {
				g.env.SetCapabilities(caps)
				got := g.ok("find", map[string]any{"pattern": "*"})
				list, notice, _ := strings.Cut(got, "\n\n")
				assert.Equal(t, "open/a.go", list, "only real paths")
				assert.Contains(t, notice, "could not be searched")
				assert.Contains(t, notice, "closed")
			})
		}
	})
}

func testLs(t *testing.T, h Harness) {
	f := newFixture(t, h)
	f.write("b.txt", "")
	f.write("A.txt", "")
	f.write(".env", "")
	f.write("sub/x", "")
	f.write("Zed/y", "")
	f.run("ln -s " + shellquote.Quote(f.path("sub")) + " " + shellquote.Quote(f.path("link")))
	require.NoError(t, f.o.MkdirAll(t.Context(), f.path("emptydir")))
	assert.Equal(t, ".env\nA.txt\nb.txt\nemptydir/\nhome/\nlink/\nsub/\nZed/", f.ok("ls", map[string]any{}))
	assert.Equal(t, ".env\nA.txt\n\n[2 of 8 entries shown (limit 2). Use limit=4 for more.]", f.ok("ls", map[string]any{"limit": 2}))
	assert.Equal(t, "(empty directory)", f.ok("ls", map[string]any{"path": "emptydir"}))
	f.fails("ls", map[string]any{"path": "nope"}, "File not found: nope")
	f.fails("ls", map[string]any{"path": "b.txt"}, "Not a directory: b.txt")
}

// ignoreTree is a repository whose ignore files exercise what rg and fd
// honour: root and nested .gitignore, negation, anchoring, directory-only
// patterns, a .ignore file, .git/info/exclude.
func ignoreTree(f *fixture) {
	f.write(".git/info/exclude", "excluded.go\n")
	f.write(".gitignore", "# build output\nbuild/\n*.log\n!keep.log\n/rootonly.go\ntmp*/\n")
	f.write(".ignore", "secret.go\n")
	f.write("main.go", "package main // needle\n")
	f.write("rootonly.go", "needle\n")
	f.write("excluded.go", "needle\n")
	f.write("secret.go", "needle\n")
	f.write("app.log", "needle\n")
	f.write("keep.log", "needle\n")
	f.write("build/out.go", "needle\n")
	f.write("build/keep.log", "needle\n")
	f.write("tmpfile", "needle\n")
	f.write("tmpdir/x.go", "needle\n")
	f.write("src/rootonly.go", "needle\n")
	f.write("src/.gitignore", "gen/\n!app.log\nlocal.go\n")
	f.write("src/app.log", "needle\n")
	f.write("src/local.go", "needle\n")
	f.write("src/gen/g.go", "needle\n")
	f.write("src/deep/build", "needle, a file: build/ names directories only\n")
	f.write("vendor/lib.go", "needle\n")
	f.write("vendor/.gitignore", "*\n!.gitignore\n")
	f.write("bin.dat", "needle\x00\x01\x02\n")
}

// testIgnoreFiles checks that the POSIX fallbacks skip what rg and fd skip.
func testIgnoreFiles(t *testing.T, h Harness) {
	f := newFixture(t, h)
	ignoreTree(f)
	wantFind := ".gitignore\n.ignore\nbin.dat\nkeep.log\nmain.go\nsrc/.gitignore\nsrc/app.log\nsrc/deep/build\nsrc/rootonly.go\ntmpfile\nvendor/.gitignore"
	wantGrep := []string{"keep.log:1: needle", "main.go:1: package main // needle", "src/app.log:1: needle",
		"src/deep/build:1: needle, a file: build/ names directories only", "src/rootonly.go:1: needle", "tmpfile:1: needle"}
	results := map[string][]string{}
	for name, caps := range engines(t, f) {
		t.Run(name, func(t *testing.T) {
			f.env.SetCapabilities(caps)
			find := f.ok("find", map[string]any{"pattern": "*"})
			assert.Equal(t, wantFind, find)
			grep := f.ok("grep", map[string]any{"pattern": "needle"})
			assert.Equal(t, strings.Join(wantGrep, "\n"), grep)
			// The root's rules hold in a search of a subdirectory.
			sub := f.ok("find", map[string]any{"pattern": "*.go", "path": "src"})
			assert.Equal(t, "rootonly.go", sub)
			subGrep := f.ok("grep", map[string]any{"pattern": "needle", "path": "src", "glob": "*.log"})
			assert.Equal(t, "app.log:1: needle", subGrep)
			// An explicit file is searched even when ignored.
			assert.Equal(t, "out.go:1: needle", f.ok("grep", map[string]any{"pattern": "needle", "path": "build/out.go"}))
			results[name] = []string{find, grep, sub, subGrep}
		})
	}
	if len(results) == 2 {
		assert.Equal(t, results["rg+fd"], results["posix"], "the same output with and without rg and fd")
	}

	t.Run("outside a repository .gitignore does not count, .ignore does", func(t *testing.T) {
		g := newFixture(t, h)
		g.write(".gitignore", "a.go\n")
		g.write(".ignore", "b.go\n")
		g.write("a.go", "package a\n")
		g.write("b.go", "package b\n")
		for name, caps := range engines(t, g) {
			t.Run(name, func(t *testing.T) {
				g.env.SetCapabilities(caps)
				assert.Equal(t, "a.go", g.ok("find", map[string]any{"pattern": "*.go"}))
			})
		}
	})
}
