package session

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pi-remote/pi-remote/loop"
)

func TestCreateAppendOpen(t *testing.T) {
	p := filepath.Join(t.TempDir(), "s", "one.jsonl")
	s, err := Create(p, Header{Host: "alice@devbox:22", Cwd: "/src"})
	require.NoError(t, err)
	msgs := []loop.Message{
		loop.NewUserText("fix it"),
		&loop.AssistantMessage{StopReason: loop.StopToolUse, Content: loop.ContentList{&loop.ToolCall{ID: "c1", Name: "read", Arguments: json.RawMessage(`{"path":"a"}`)}}},
		&loop.ToolResultMessage{ToolCallID: "c1", ToolName: "read", Content: loop.ContentList{&loop.Text{Text: "x"}}},
		&loop.AssistantMessage{StopReason: loop.StopEnd, Content: loop.ContentList{&loop.Text{Text: "done"}}},
	}
	for _, m := range msgs {
		must(s.Append(m))
	}
	require.NoError(t, s.Close())

	lines := strings.Split(strings.TrimSpace(readFile(t, p)), "\n")
	require.Len(t, lines, 5, "header and one line per message, written as they happened")
	var h Header
	require.NoError(t, json.Unmarshal([]byte(lines[0]), &h))
	assert.Equal(t, "session", h.Type)
	assert.Equal(t, "alice@devbox:22", h.Host)
	var prev *string
	for _, l := range lines[1:] {
		var e entry
		require.NoError(t, json.Unmarshal([]byte(l), &e))
		assert.Equal(t, prev, e.ParentID, "each entry's parent is the one before")
		id := e.ID
		prev = &id
	}

	s2, c, err := Open(p)
	got := c.Messages
	require.NoError(t, err)
	require.Len(t, got, 4)
	assert.Equal(t, "fix it", got[0].(*loop.UserMessage).Content.Text())
	assert.Equal(t, "done", got[3].(*loop.AssistantMessage).Content.Text())
	must(s2.Append(loop.NewUserText("and again")))
	require.NoError(t, s2.Close())
	_, c, err = Open(p)
	require.NoError(t, err)
	assert.Len(t, c.Messages, 5, "continued on the same branch")
}

// A crash mid-write leaves a torn last line: it is skipped and the next
// entry starts on a fresh line.
func TestTornLastLine(t *testing.T) {
	p := filepath.Join(t.TempDir(), "torn.jsonl")
	s, err := Create(p, Header{Host: "local", Cwd: "/"})
	require.NoError(t, err)
	must(s.Append(loop.NewUserText("hello")))
	s.Close()
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_APPEND, 0)
	require.NoError(t, err)
	f.WriteString(`{"type":"message","id":"dead","parentId":`)
	f.Close()

	s, c, err := Open(p)
	require.NoError(t, err)
	require.Len(t, c.Messages, 1)
	must(s.Append(loop.NewUserText("after the crash")))
	s.Close()
	_, c, err = Open(p)
	require.NoError(t, err)
	require.Len(t, c.Messages, 2)
	assert.Equal(t, "after the crash", c.Messages[1].(*loop.UserMessage).Content.Text())
}

func TestBranchFromTheTree(t *testing.T) {
	p := filepath.Join(t.TempDir(), "tree.jsonl")
	header := `{"type":"session","version":1,"id":"x","created":"2026-11-29T00:00:00Z","host":"local","cwd":"/"}`
	u := func(id, parent, text string) string {
		m, _ := json.Marshal(loop.NewUserText(text))
		pj := "null"
		if parent != "" {
			pj = `"` + parent + `"`
		}
		return `{"type":"message","id":"` + id + `","parentId":` + pj + `,"timestamp":"2026-11-29T00:00:00Z","message":` + string(m) + `}`
	}
	content := strings.Join([]string{header, u("a", "", "root"), u("b", "a", "first branch"), u("c", "a", "second branch")}, "\n") + "\n"
	require.NoError(t, os.WriteFile(p, []byte(content), 0o600))
	_, c, err := Open(p)
	require.NoError(t, err)
	got := c.Messages
	require.Len(t, got, 2, "the branch ending at the last entry: root, second branch")
	assert.Equal(t, "second branch", got[1].(*loop.UserMessage).Content.Text())
}

func TestLatest(t *testing.T) {
	dir := t.TempDir()
	_, err := Latest(dir)
	assert.ErrorIs(t, err, ErrNone)
	first := NewPath(dir)
	require.NoError(t, os.WriteFile(first, nil, 0o600))
	time.Sleep(5 * time.Millisecond)
	second := NewPath(dir)
	require.NoError(t, os.WriteFile(second, nil, 0o600))
	got, err := Latest(dir)
	require.NoError(t, err)
	assert.Equal(t, second, got)

	a, _ := Dir("local", "/src")
	b, _ := Dir("alice@devbox:22", "/src")
	assert.NotEqual(t, a, b, "one directory per host and cwd")
}

// A compaction entry stands for the messages before the one it keeps
// from: the rebuilt context is its summary, the kept messages, then the
// ones after it; the file keeps everything.
func TestCompactionRebuildsTheContext(t *testing.T) {
	p := filepath.Join(t.TempDir(), "c.jsonl")
	s, err := Create(p, Header{Host: "local", Cwd: "/"})
	require.NoError(t, err)
	var ids []string
	for _, text := range []string{"one", "two", "three", "four"} {
		ids = append(ids, must(s.Append(loop.NewUserText(text))))
	}
	first, at, err := s.AppendCompaction(Compaction{Summary: "did one and two", FirstKeptID: ids[2], TokensBefore: 900})
	require.NoError(t, err)
	must(s.Append(loop.NewUserText("five")))
	texts := func(c Context) []string {
		var out []string
		for _, m := range c.Messages {
			out = append(out, m.(*loop.UserMessage).Content.Text())
		}
		return out
	}
	_, c, err := Open(p)
	require.NoError(t, err)
	want := SummaryMessage("did one and two", at)
	assert.Equal(t, []string{want.Content.Text(), "three", "four", "five"}, texts(c))
	assert.Equal(t, want.Timestamp, c.Messages[0].(*loop.UserMessage).Timestamp)
	assert.Equal(t, first, c.IDs[0])
	assert.Equal(t, ids[2:], c.IDs[1:3])
	assert.Equal(t, "did one and two", c.Summary)

	// A later compaction that keeps nothing before it wins.
	s2, _, err := Open(p)
	require.NoError(t, err)
	_, _, err = s2.AppendCompaction(Compaction{Summary: "did one to five"})
	require.NoError(t, err)
	must(s2.Append(loop.NewUserText("six")))
	_, c, err = Open(p)
	require.NoError(t, err)
	assert.Equal(t, []string{SummaryMessage("did one to five", time.Time{}).Content.Text(), "six"}, texts(c))
	assert.Equal(t, "did one to five", c.Summary)
	assert.Equal(t, 9, len(strings.Split(strings.TrimSpace(readFile(t, p)), "\n")), "the header and every entry stay in the file")

	// A compaction that keeps an entry not on its branch is an error.
	require.NoError(t, os.WriteFile(p, []byte(readFile(t, p)+`{"type":"compaction","id":"bad","parentId":null,"timestamp":"2026-11-29T00:00:00Z","summary":"x","firstKeptId":"nowhere"}`+"\n"), 0o600))
	_, _, err = Open(p)
	assert.ErrorContains(t, err, "keeps from entry nowhere")
}

func must(id string, err error) string {
	if err != nil {
		panic(err)
	}
	return id
}

func readFile(t *testing.T, p string) string {
	b, err := os.ReadFile(p)
	require.NoError(t, err)
	return string(b)
}

// A fork after a compaction copies the compaction too: the new file
// rebuilds the same context; export shows every message and where the
// compaction happened.
func TestForkAndExportKeepCompactions(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "src.jsonl")
	s, err := Create(p, Header{Host: "local", Cwd: "/"})
	require.NoError(t, err)
	var ids []string
	for _, text := range []string{"one", "two", "three"} {
		ids = append(ids, must(s.Append(loop.NewUserText(text))))
	}
	_, _, err = s.AppendCompaction(Compaction{Summary: "did one", FirstKeptID: ids[1]})
	require.NoError(t, err)
	four := must(s.Append(loop.NewUserText("four")))
	must(s.Append(loop.NewUserText("five")))
	require.NoError(t, s.Close())

	forked, err := Fork(p, four[:5], filepath.Join(dir, "forks"))
	require.NoError(t, err)
	_, want, err := Open(p)
	require.NoError(t, err)
	_, got, err := Open(forked)
	require.NoError(t, err)
	assert.Equal(t, len(want.Messages)-1, len(got.Messages), "up to four, without five")
	assert.Equal(t, want.IDs[:len(got.IDs)], got.IDs)
	assert.Equal(t, "did one", got.Summary)

	_, err = Fork(p, "", dir)
	assert.Error(t, err)
	_, err = Fork(p, "nothere", dir)
	assert.ErrorContains(t, err, `no entry "nothere"`)

	h, entries, err := Branch(p)
	require.NoError(t, err)
	var md strings.Builder
	require.NoError(t, Markdown(&md, h, entries))
	out := md.String()
	for _, text := range []string{"one", "two", "three", "four", "five"} {
		assert.Contains(t, out, "## User\n\n"+text+"\n")
	}
	assert.Contains(t, out, "## Compaction\n\n*The messages above were replaced in the model's context by this summary:*\n\n> did one\n")
	assert.Less(t, strings.Index(out, "three"), strings.Index(out, "## Compaction"))
	var page strings.Builder
	require.NoError(t, HTML(&page, h, []Entry{{Message: loop.NewUserText("<script>alert(1)</script>")}}))
	assert.Contains(t, page.String(), "&lt;script&gt;alert(1)&lt;/script&gt;", "content is escaped")
}
