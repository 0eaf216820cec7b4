package tools_test

import (
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pi-remote/pi-remote/loop"
	"github.com/pi-remote/pi-remote/tools"
)

// Rendering goldens, with and without colour: the edit diff, a folded long
// result, and the tail of a long bash output.
func TestRenderGoldens(t *testing.T) {
	f := newFixture(t)
	byName := map[string]tools.Definition{}
	for _, d := range f.defs {
		byName[d.Name] = d
	}
	f.write("cfg.ini", "[server]\nport = 80\nhost = a\n\n[client]\nretries = 1\n")
	m := f.call("edit", edits("cfg.ini", "port = 80", "port = 8080", "retries = 1", "retries = 3"))
	require.False(t, m.IsError, text(m))
	editRes := loop.Result{Content: m.Content, Details: m.Details}

	var long strings.Builder
	for i := 1; i <= 40; i++ {
		fmt.Fprintf(&long, "line %d\n", i)
	}
	for _, color := range []bool{false, true} {
		th := tools.Theme{Color: color}
		var b strings.Builder
		b.WriteString("== edit ==\n" + tools.RenderResult(byName["edit"], editRes, th) + "\n")
		b.WriteString("== read, folded ==\n" + tools.RenderResult(byName["read"], loop.TextResult(long.String()), th) + "\n")
		b.WriteString("== bash, tail ==\n" + tools.RenderResult(byName["bash"], loop.TextResult(long.String()), th) + "\n")
		name := "render_plain.txt"
		if color {
			name = "render_color.txt"
		}
		golden(t, name, b.String())
	}
}

// Edits whose context windows touch share one hunk, and line numbers on the
// new side follow the lines an earlier edit added.
func TestNearbyEditsShareAHunk(t *testing.T) {
	f := newFixture(t)
	f.write("ten.txt", "a\nb\nc\nd\ne\nf\ng\nh\ni\nj\n")
	m := f.call("edit", edits("ten.txt", "b\n", "b1\nb2\n", "e\n", "E\n"))
	require.False(t, m.IsError, text(m))
	d := m.Details.(tools.EditDetails)
	require.Equal(t, strings.Join([]string{
		"@@ -1,8 +1,9 @@",
		"   1 a",
		"-  2 b",
		"+  2 b1",
		"+  3 b2",
		"   4 c",
		"   5 d",
		"-  5 e",
		"+  6 E",
		"   7 f",
		"   8 g",
		"   9 h",
	}, "\n"), d.Diff)
}

// Controls in a call's arguments, a result or an edit's diff (a file's, a
// command's, the model's) are shown as text; the theme's colours are the
// only sequences left, and the result itself is not changed.
func TestRenderedControlsAreText(t *testing.T) {
	f := newFixture(t)
	byName := map[string]tools.Definition{}
	for _, d := range f.defs {
		byName[d.Name] = d
	}
	f.write("evil.txt", "title \x1b]0;pwned\a\nclear \x1b[2J\n")
	m := f.call("edit", edits("evil.txt", "clear \x1b[2J", "clip \x1b]52;c;eA==\a"))
	require.False(t, m.IsError, text(m))
	th := tools.Theme{Color: true}
	theme := regexp.MustCompile(`\x1b\[(0|2|31|32)m`)
	for _, tc := range []struct {
		name, got, want string
	}{
		{"edit diff", tools.RenderResult(byName["edit"], loop.Result{Content: m.Content, Details: m.Details}, th), "- 2 clear ^[[2J"},
		{"read", tools.RenderResult(byName["read"], loop.TextResult("a\x1b]52;c;eA==\a\u009b"), th), "a^[]52;c;eA==^G<U+009B>"},
		{"bash", tools.RenderResult(byName["bash"], loop.TextResult("done\r\x1b[2K"), th), "done^M^[[2K"},
		{"no renderer", tools.RenderResult(tools.Definition{Name: "custom"}, loop.TextResult("x\x1b[H"), th), "x^[[H"},
		{"bash call", tools.RenderCall(byName["bash"], []byte(`{"command":"echo \u001b]0;t\u0007"}`)), "$ echo ^[]0;t^G"},
		{"path call", tools.RenderCall(byName["read"], []byte(`{"path":"a\u001b[2J"}`)), "read a^[[2J"},
		{"generic call", tools.RenderCall(tools.Definition{Name: "custom"}, []byte(`{"a":"\u001b"}`)), `custom {"a":"\u001b"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Contains(t, tc.got, tc.want)
			assert.NotContains(t, theme.ReplaceAllString(tc.got, ""), "\x1b", "only the theme's colours")
			assert.NotContains(t, tc.got, "\a")
			assert.NotContains(t, tc.got, "\u009b")
		})
	}
	res := loop.TextResult("kept \x1b[2J")
	tools.RenderResult(byName["read"], res, th)
	assert.Equal(t, "kept \x1b[2J", res.Content.Text(), "the result is the model's: unchanged")
}

// A fold says "1 line", never "1 lines".
func TestFoldCountsInWords(t *testing.T) {
	var th tools.Theme
	assert.Equal(t, "a\n… 1 more line", tools.Fold("a\nb", 1, th))
	assert.Equal(t, "a\n… 2 more lines", tools.Fold("a\nb\nc", 1, th))
	assert.Equal(t, "… 1 earlier line\nb", tools.FoldTail("a\nb", 1, th))
	assert.Equal(t, "0 lines", tools.Count(0, "line", "lines"))
}
