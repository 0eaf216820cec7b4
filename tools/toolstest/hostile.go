package toolstest

import (
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/pi-remote/pi-remote/env"
	"github.com/pi-remote/pi-remote/internal/shellquote"
	"github.com/pi-remote/pi-remote/tools"
)

// optionShaped are values a model may pass that a program reading its
// argument list would take for an option (fd's --exec, rg's --pre, find's
// -delete, grep's -e and -x), for the end of the options, or for standard
// input.
var optionShaped = []string{"--exec=rm", "-x", "--pre=sh", "-delete", "--", "-", "-e"}

// in is the fixture's host seen from the directory sub of its root: a
// separate environment (with its own capabilities) working there.
func (f *fixture) in(sub string) *fixture {
	g := *f
	g.root = f.path(sub)
	g.env = env.New(f.o, env.Options{Name: "host", Cwd: g.root, Home: f.path("home")})
	g.defs = tools.Definitions(g.env, tools.Options{})
	return &g
}

// on is the fixture reporting to t (a subtest).
func (f *fixture) on(t *testing.T) *fixture {
	g := *f
	g.t = t
	return &g
}

// snapshot lists the files below the fixture's root (but what the tools
// are asked to write) with their checksums.
func (f *fixture) snapshot() string {
	f.t.Helper()
	return f.run("cd " + shellquote.Quote(f.root) + " && find ./canary.txt ./files ./dirs -type f -exec cksum {} + | LC_ALL=C sort")
}

// testOptionShapedArguments gives every string field of every tool (but
// bash's command, which is meant to be run) each option-shaped value: the
// value is a plain operand, so the files survive and the answer is the
// one for the literal value, with rg and fd and with the POSIX fallbacks.
func testOptionShapedArguments(t *testing.T, h Harness) {
	f := newFixture(t, h)
	layout := func(f *fixture) {
		f.write("canary.txt", "canary\n")
		f.write("files/plain.txt", "plain\n")
		for _, v := range optionShaped {
			f.write("files/"+v, "hit "+v+"\n")
			f.write("dirs/"+v+"/inside.txt", "inside "+v+"\n")
		}
	}
	layout(f)
	files, dirs := f.in("files"), f.in("dirs")
	before := f.snapshot()
	// survives checks that the files are as they were, and puts them
	// back for the next case when they are not.
	survives := func(t *testing.T) {
		t.Helper()
		if !assert.Equal(t, before, f.on(t).snapshot(), "the files in the working directory survive") {
			layout(f.on(t))
		}
	}
	// grepHits are the lines a search of files/ for v finds.
	grepHits := func(v string) []string {
		var hits []string
		for _, w := range optionShaped {
			if strings.Contains("hit "+w, v) {
				hits = append(hits, w+":1: hit "+w)
			}
		}
		slices.Sort(hits)
		return hits
	}
	sortedLines := func(s string) []string {
		l := strings.Split(strings.TrimSuffix(s, "\n"), "\n")
		slices.Sort(l)
		return l
	}

	for name, caps := range engines(t, f) {
		t.Run(name, func(t *testing.T) {
			files.env.SetCapabilities(caps)
			dirs.env.SetCapabilities(caps)
			for _, v := range optionShaped {
				cases := []struct {
					name string
					at   *fixture
					tool string
					args map[string]any
					want []string // the answer's lines, in any order
				}{
					{"read path", files, "read", map[string]any{"path": v}, []string{"hit " + v}},
					{"ls path", dirs, "ls", map[string]any{"path": v}, []string{"inside.txt"}},
					{"grep pattern", files, "grep", map[string]any{"pattern": v}, grepHits(v)},
					{"grep literal pattern", files, "grep", map[string]any{"pattern": v, "literal": true}, grepHits(v)},
					{"grep glob", files, "grep", map[string]any{"pattern": "hit", "glob": v}, []string{v + ":1: hit " + v}},
					{"grep path", files, "grep", map[string]any{"pattern": "hit", "path": v}, []string{v + ":1: hit " + v}},
					{"grep every field", files, "grep", map[string]any{"pattern": v, "path": v, "glob": v, "literal": true}, []string{v + ":1: hit " + v}},
					{"grep path of a directory", dirs, "grep", map[string]any{"pattern": "inside", "path": v}, []string{"inside.txt:1: inside " + v}},
					{"find pattern", files, "find", map[string]any{"pattern": v}, []string{v}},
					{"find path", dirs, "find", map[string]any{"pattern": "*", "path": v}, []string{"inside.txt"}},
					{"find pattern and path", dirs, "find", map[string]any{"pattern": v, "path": v}, []string{"No files found matching " + v + "."}},
				}
				for _, tc := range cases {
					t.Run(tc.name+" "+v, func(t *testing.T) {
						got := tc.at.on(t).ok(tc.tool, tc.args)
						assert.Equal(t, tc.want, sortedLines(got), "%s %v answered:\n%s", tc.tool, tc.args, got)
						survives(t)
					})
				}
			}
		})
	}

	// Without rg, grep names the files that match one a line, so a file
	// name holding a newline and then an option would come back as two
	// names, the second an option: such a file is refused with a reason.
	t.Run("posix grep of a name holding a newline", func(t *testing.T) {
		g := f.in("odd").on(t)
		g.write("nl", "hit nl\n")
		g.run("printf 'hit newline\\n' >" + shellquote.Quote(g.path("nl\n-x")))
		caps := engines(t, g)["posix"]
		g.env.SetCapabilities(caps)
		g.fails("grep", map[string]any{"pattern": "hit", "path": "nl\n-x"}, "its name holds a newline")
		survives(t)
	})

	// bash runs its command, but a command that looks like an option is
	// still the command, not an option of the shell that runs it.
	t.Run("bash command", func(t *testing.T) {
		for _, v := range optionShaped {
			t.Run(v, func(t *testing.T) {
				got := files.on(t).fails("bash", map[string]any{"command": v})
				assert.Contains(t, got, "not found", "the shell looked for a command named %s", v)
				assert.Contains(t, got, "code 127")
				survives(t)
			})
		}
	})

	t.Run("write and edit", func(t *testing.T) {
		for _, v := range optionShaped {
			t.Run(v, func(t *testing.T) {
				w := f.in("written").on(t)
				assert.Equal(t, "Successfully wrote "+strconv.Itoa(len(v))+" bytes to "+v, w.ok("write", map[string]any{"path": v, "content": v}))
				assert.Equal(t, v, w.read(v))
				assert.Contains(t, w.ok("edit", edits(v, v, "["+v+"]")), "Successfully replaced")
				assert.Equal(t, "["+v+"]", w.read(v))
				assert.Contains(t, w.ok("edit", map[string]any{"path": v, "oldText": "[" + v + "]", "newText": v}), "Successfully replaced")
				assert.Equal(t, v, w.read(v))
				survives(t)
			})
		}
		got := f.in("written").on(t).ok("ls", map[string]any{})
		want := slices.Clone(optionShaped)
		slices.Sort(want)
		assert.Equal(t, want, sortedLines(got), "only the files written")
	})
}
