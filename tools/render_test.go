package tools_test

import (
	"fmt"
	"strings"
	"testing"

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
