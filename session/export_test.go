package session

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pi-remote/pi-remote/loop"
)

// exportSession is a session with what an export must render: Markdown
// (a heading, bold, a table, a fence), raw HTML the model wrote, thinking,
// an edit, a write, a bash line with "&&", and a long output; stored and
// read back as a session file is.
func exportSession(t *testing.T) (Header, []Entry) {
	t.Helper()
	p := filepath.Join(t.TempDir(), "s.jsonl")
	s, err := Create(p, Header{Host: "alice@devbox", Cwd: "/srv/app"})
	require.NoError(t, err)
	long := ""
	for i := range 30 {
		long += fmt.Sprintf("line %d\n", i)
	}
	edit, _ := json.Marshal(map[string]any{"path": "main.go", "edits": []map[string]string{{"oldText": "a := 1\nb := 2", "newText": "a := 3"}}})
	write, _ := json.Marshal(map[string]any{"path": "notes.md", "content": "hello <b>\n"})
	bash, _ := json.Marshal(map[string]any{"command": "make && make test"})
	msgs := []loop.Message{
		loop.NewUserText("# Summary\n\nIs **beta** ready? <script>alert(1)</script>"),
		&loop.AssistantMessage{Content: loop.ContentList{
			&loop.Thinking{Thinking: "look first"},
			&loop.Text{Text: "| name | state |\n|---|---|\n| beta | **ready** |\n\n```go\nfunc f() {}\n```"},
			&loop.ToolCall{ID: "c1", Name: "edit", Arguments: edit},
			&loop.ToolCall{ID: "c2", Name: "write", Arguments: write},
			&loop.ToolCall{ID: "c3", Name: "bash", Arguments: bash},
		}},
		&loop.ToolResultMessage{ToolCallID: "c3", ToolName: "bash", Content: loop.ContentList{&loop.Text{Text: long}}},
	}
	for _, m := range msgs {
		_, err := s.Append(m)
		require.NoError(t, err)
	}
	require.NoError(t, s.Close())
	h, entries, err := Branch(p)
	require.NoError(t, err)
	return h, entries
}

// The HTML export renders Markdown (headings, bold, tables, code), shows
// the model's raw HTML as text, folds thinking and long outputs, shows an
// edit as a diff, and writes "&&" as the model did.
func TestHTMLExportRendersMarkdown(t *testing.T) {
	h, entries := exportSession(t)
	var b strings.Builder
	require.NoError(t, HTML(&b, h, entries))
	page := b.String()
	for _, want := range []string{
		"<h1>Summary</h1>",
		"<strong>beta</strong>",
		"&lt;script&gt;alert(1)&lt;/script&gt;",
		"<table>", "<th>name</th>", "<td><strong>ready</strong></td>",
		`<code class="language-go">func f() {}`,
		"<details><summary>Thinking (1 line)</summary><p>look first</p>",
		`<span class="del">-a := 1</span><span class="del">-b := 2</span><span class="add">+a := 3</span>`,
		"→ write notes.md</div><pre>hello &lt;b&gt;</pre>",
		"&#34;make &amp;&amp; make test&#34;",
		"<details><summary>30 lines</summary><pre>line 0\n",
	} {
		assert.Contains(t, page, want)
	}
	assert.NotContains(t, page, "<script>")
	assert.NotContains(t, page, `\u0026`)
	assert.NotContains(t, page, "# Summary")
}

// The Markdown export keeps Markdown as Markdown, shows an edit as a diff
// and a write as its content, folds long outputs, and writes "&&" as the
// model did.
func TestMarkdownExportShowsCallsAsTheyRead(t *testing.T) {
	h, entries := exportSession(t)
	var b strings.Builder
	require.NoError(t, Markdown(&b, h, entries))
	md := b.String()
	assert.Contains(t, md, "**→ edit** (`c1`)\n\n`main.go`\n\n```diff\n-a := 1\n-b := 2\n+a := 3\n```\n")
	assert.Contains(t, md, "**→ write** (`c2`)\n\n`notes.md`\n\n```\nhello <b>\n```\n")
	assert.Contains(t, md, `"command": "make && make test"`)
	assert.NotContains(t, md, `\u0026`)
	assert.Contains(t, md, "<details><summary>30 lines</summary>\n\n```\nline 0\n")
	assert.Contains(t, md, "| beta | **ready** |")
}

// The exported page runs nothing and loads nothing from elsewhere: the
// model's links keep no javascript: target, its HTML is text, and the
// page's policy forbids scripts and remote images.
func TestHTMLExportIsInert(t *testing.T) {
	var b strings.Builder
	require.NoError(t, HTML(&b, Header{ID: "x"}, []Entry{{Message: loop.NewUserText(
		"[x](javascript:alert(1)) <img src=x onerror=alert(1)> ![t](http://127.0.0.1:9/track.png)\n\n<div onclick=x>block</div>")}}))
	page := b.String()
	assert.NotContains(t, page, "javascript:")
	assert.NotContains(t, page, "<img src=x")
	assert.NotContains(t, page, "<div onclick")
	assert.Contains(t, page, `content="default-src 'none'; style-src 'unsafe-inline'; img-src data:"`)
}
