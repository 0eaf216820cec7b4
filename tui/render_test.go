package tui

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/charmbracelet/x/ansi"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pi-remote/pi-remote/env"
	"github.com/pi-remote/pi-remote/loop"
	"github.com/pi-remote/pi-remote/ops/local"
	"github.com/pi-remote/pi-remote/tools"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// golden compares got with testdata/name, or writes it with -update.
func golden(t *testing.T, name, got string) {
	t.Helper()
	p := filepath.Join("testdata", name)
	if *update {
		require.NoError(t, os.WriteFile(p, []byte(got), 0o644))
	}
	want, err := os.ReadFile(p)
	require.NoError(t, err, "run with -update to create %s", p)
	assert.Equal(t, string(want), got)
}

func definitions(t testing.TB) map[string]tools.Definition {
	e := env.New(local.New(), env.Options{Cwd: t.TempDir(), Home: "/"})
	out := map[string]tools.Definition{}
	for _, d := range tools.Definitions(e, tools.Options{}) {
		out[d.Name] = d
	}
	return out
}

var widths = []int{60, 80, 120}

// Every state of a tool box, at each width, without colour.
func TestToolBoxGolden(t *testing.T) {
	defs := definitions(t)
	long := strings.Repeat("a fairly long line of output that goes on and on ", 3)
	var output []string
	for i := 1; i <= 12; i++ {
		output = append(output, fmt.Sprintf("line %d", i))
	}
	boxes := []*toolBox{
		{name: "read", args: json.RawMessage(`{"path":"src/main.go"}`), state: toolPending},
		{name: "bash", args: json.RawMessage(`{"command":"go test ./..."}`), state: toolRunning, output: strings.Join(output, "\n")},
		{name: "bash", args: json.RawMessage(`{"command":"make"}`), state: toolDone, result: loop.TextResult(strings.Join(output, "\n") + "\n" + long)},
		{name: "edit", args: json.RawMessage(`{"path":"a.go"}`), state: toolDone, result: loop.Result{
			Content: loop.ContentList{&loop.Text{Text: "Successfully replaced 1 block in a.go."}},
			Details: tools.EditDetails{Diff: "-old line\n+new line", Replacements: 1}}},
		{name: "read", args: json.RawMessage(`{"path":"missing.txt"}`), state: toolFailed, result: loop.TextResult("File not found: missing.txt")},
	}
	th := newTheme(false)
	for _, w := range widths {
		var out []string
		for _, b := range boxes {
			out = append(out, renderToolBox(b, defs[b.name], w, previewLines, "⠋", th))
			for _, l := range strings.Split(out[len(out)-1], "\n") {
				assert.LessOrEqual(t, ansi.StringWidth(l), w, "fits in %d columns: %q", w, l)
			}
		}
		out = append(out, "expanded:", renderToolBox(boxes[2], defs["bash"], w, detailFull, "⠋", th))
		golden(t, fmt.Sprintf("toolbox-%d.golden", w), strings.Join(out, "\n\n")+"\n")
	}
}

// A user message and an answer's Markdown, wrapped to the width.
func TestMessagesGolden(t *testing.T) {
	th := newTheme(false)
	answer := "Here is the plan:\n\n1. read `main.go`\n2. fix the **bug**\n\n```go\nfunc main() { fmt.Println(\"hi\") }\n```\n"
	for _, w := range widths {
		out := renderUser("please look at main.go and fix the failing test, then run the whole suite again", w, th) + "\n" + markdown(answer, w, th)
		for _, l := range strings.Split(out, "\n") {
			assert.LessOrEqual(t, ansi.StringWidth(l), w)
		}
		golden(t, fmt.Sprintf("messages-%d.golden", w), out+"\n")
	}
}
