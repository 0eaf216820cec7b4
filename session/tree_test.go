package session

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pi-remote/pi-remote/loop"
)

// texts are the texts of msgs, summaries as "summary".
func texts(msgs []loop.Message) []string {
	var out []string
	for _, m := range msgs {
		switch m := m.(type) {
		case *loop.UserMessage:
			if strings.Contains(m.Content.Text(), "<summary>") {
				out = append(out, "summary")
				continue
			}
			out = append(out, m.Content.Text())
		case *loop.AssistantMessage:
			out = append(out, m.Content.Text())
		}
	}
	return out
}

func answer(text string) loop.Message {
	return &loop.AssistantMessage{StopReason: loop.StopEnd, Content: loop.ContentList{&loop.Text{Text: text}}}
}

// twoTurns makes a session of two prompts and their answers; ids are
// the entries' ids in that order.
func twoTurns(t *testing.T) (path string, s *Session, ids []string) {
	t.Helper()
	path = filepath.Join(t.TempDir(), "s.jsonl")
	s, err := Create(path, Header{Host: "local", Cwd: "/"})
	require.NoError(t, err)
	for _, m := range []loop.Message{loop.NewUserText("one"), answer("first"), loop.NewUserText("two"), answer("second")} {
		ids = append(ids, must(s.Append(m)))
	}
	return path, s, ids
}

// Moving the leaf appends one line and rewrites nothing; the next
// message is the target's child; a reopened session, Branch, Describe,
// ForkPoints and Tree all follow the moved leaf.
func TestMoveLeaf(t *testing.T) {
	path, s, ids := twoTurns(t)
	before := readFile(t, path)
	c, err := s.MoveLeaf(ids[1])
	require.NoError(t, err)
	assert.Equal(t, []string{"one", "first"}, texts(c.Messages), "the context of the branch that ends at the target")
	assert.Equal(t, ids[:2], c.IDs)
	after := readFile(t, path)
	require.True(t, strings.HasPrefix(after, before), "nothing rewritten")
	added := strings.TrimSuffix(after[len(before):], "\n")
	assert.NotContains(t, added, "\n", "one line added")
	assert.Contains(t, added, `"type":"leaf"`)
	assert.Contains(t, added, `"parentId":"`+ids[1]+`"`)

	// Before anything is appended, a reopened session is on the moved
	// branch too.
	_, c, err = Open(path)
	require.NoError(t, err)
	assert.Equal(t, []string{"one", "first"}, texts(c.Messages))

	again := must(s.Append(loop.NewUserText("two, asked again")))
	must(s.Append(answer("second, again")))
	require.NoError(t, s.Close())

	s2, c, err := Open(path)
	require.NoError(t, err)
	assert.Equal(t, []string{"one", "first", "two, asked again", "second, again"}, texts(c.Messages))
	require.NoError(t, s2.Close())

	_, branch, err := Branch(path)
	require.NoError(t, err)
	require.Len(t, branch, 4)
	assert.Equal(t, ids[1], branch[2].ParentID, "the new prompt is the target's child")
	assert.Equal(t, again, branch[2].ID)
	assert.Equal(t, []ForkPoint{{Entry: ids[1], Prompt: "two, asked again"}}, ForkPoints(branch))

	info, err := Describe(path)
	require.NoError(t, err)
	assert.Equal(t, 4, info.Messages, "the current branch's messages")
	assert.Equal(t, "one", info.FirstPrompt)

	_, all, leaf, err := Tree(path)
	require.NoError(t, err)
	require.Len(t, all, 6, "every branch's entries; no leaf entry")
	assert.Equal(t, branch[3].ID, leaf)
	assert.Equal(t, ids, []string{all[0].ID, all[1].ID, all[2].ID, all[3].ID}, "in the order written")
	assert.Equal(t, ids[1], all[2].ParentID, "the branch left stays")
	assert.Equal(t, ids[1], all[4].ParentID)

	md := filepath.Join(t.TempDir(), "s.md")
	require.NoError(t, ExportFile(path, md))
	out := readFile(t, md)
	assert.Contains(t, out, "second, again")
	assert.NotContains(t, out, "second\n", "the export is the current branch's")
	assert.NotContains(t, out, "\ntwo\n")

	// A fork from the moved branch has its entries, not the branch left.
	forked, err := Fork(path, again, t.TempDir())
	require.NoError(t, err)
	_, c, err = Open(forked)
	require.NoError(t, err)
	assert.Equal(t, []string{"one", "first", "two, asked again"}, texts(c.Messages))
}

// To the empty branch (before the first prompt): the next message starts
// a new root, and the listing's first prompt is that branch's.
func TestMoveLeafToTheStart(t *testing.T) {
	path, s, _ := twoTurns(t)
	c, err := s.MoveLeaf("")
	require.NoError(t, err)
	assert.Empty(t, c.Messages)
	first := must(s.Append(loop.NewUserText("one, put otherwise")))
	require.NoError(t, s.Close())
	_, branch, err := Branch(path)
	require.NoError(t, err)
	require.Len(t, branch, 1)
	assert.Equal(t, first, branch[0].ID)
	assert.Empty(t, branch[0].ParentID)
	info, err := Describe(path)
	require.NoError(t, err)
	assert.Equal(t, 1, info.Messages)
	assert.Equal(t, "one, put otherwise", info.FirstPrompt)
}

// A torn line after a leaf entry is ignored, the leaf entry kept; a torn
// leaf entry leaves the branch where it was.
func TestMoveLeafTornLines(t *testing.T) {
	t.Run("after the leaf entry", func(t *testing.T) {
		path, s, ids := twoTurns(t)
		_, err := s.MoveLeaf(ids[1])
		require.NoError(t, err)
		require.NoError(t, s.Close())
		appendText(t, path, `{"type":"message","id":"dead","parentId":"`)
		s, c, err := Open(path)
		require.NoError(t, err)
		assert.Equal(t, []string{"one", "first"}, texts(c.Messages))
		id := must(s.Append(loop.NewUserText("after the crash")))
		require.NoError(t, s.Close())
		_, branch, err := Branch(path)
		require.NoError(t, err)
		require.Len(t, branch, 3)
		assert.Equal(t, id, branch[2].ID)
		assert.Equal(t, ids[1], branch[2].ParentID)
	})
	t.Run("the leaf entry torn", func(t *testing.T) {
		path, s, ids := twoTurns(t)
		require.NoError(t, s.Close())
		appendText(t, path, `{"type":"leaf","id":"0000","parentId":"`+ids[1])
		_, c, err := Open(path)
		require.NoError(t, err)
		assert.Equal(t, []string{"one", "first", "two", "second"}, texts(c.Messages))
	})
}

// The moved branch's context honours the compactions on it, and only
// those.
func TestMoveLeafAcrossACompaction(t *testing.T) {
	path, s, ids := twoTurns(t)
	comp, _, err := s.AppendCompaction(Compaction{Summary: "said one and two", FirstKeptID: ids[2]})
	require.NoError(t, err)
	third := must(s.Append(loop.NewUserText("three")))
	c, err := s.MoveLeaf(ids[1])
	require.NoError(t, err)
	assert.Equal(t, []string{"one", "first"}, texts(c.Messages), "before the compaction: no summary")
	assert.Empty(t, c.Summary)
	c, err = s.MoveLeaf(third)
	require.NoError(t, err)
	assert.Equal(t, []string{"summary", "two", "second", "three"}, texts(c.Messages))
	assert.Equal(t, comp, c.IDs[0])
	assert.Equal(t, "said one and two", c.Summary)
	require.NoError(t, s.Close())
	_, all, leaf, err := Tree(path)
	require.NoError(t, err)
	assert.Equal(t, third, leaf)
	assert.Equal(t, "said one and two", all[4].Summary)
	assert.Nil(t, all[4].Message)
}

// Moving to where the branch ends already writes nothing.
func TestMoveLeafInPlace(t *testing.T) {
	path, s, ids := twoTurns(t)
	defer s.Close()
	before := readFile(t, path)
	c, err := s.MoveLeaf(ids[3])
	require.NoError(t, err)
	assert.Equal(t, []string{"one", "first", "two", "second"}, texts(c.Messages))
	assert.Equal(t, before, readFile(t, path))
}

// An entry that is not in the file is refused, and nothing is written.
func TestMoveLeafUnknownEntry(t *testing.T) {
	path, s, _ := twoTurns(t)
	defer s.Close()
	before := readFile(t, path)
	_, err := s.MoveLeaf("nope")
	require.Error(t, err)
	assert.Equal(t, before, readFile(t, path))
}

// A leaf entry that names no earlier entry, or parents that go round in
// a loop, make the file unreadable (said so), never a hang.
func TestBrokenTrees(t *testing.T) {
	header := `{"type":"session","version":1,"id":"x","created":"2026-11-29T00:00:00Z","host":"local","cwd":"/"}`
	msg := `"message":{"role":"user","content":[{"type":"text","text":"hi"}],"timestamp":0}`
	for name, lines := range map[string][]string{
		"leaf to nowhere": {`{"type":"message","id":"a","parentId":null,` + msg + `}`, `{"type":"leaf","id":"l","parentId":"zz"}`},
		"a loop":          {`{"type":"message","id":"a","parentId":"b",` + msg + `}`, `{"type":"message","id":"b","parentId":"a",` + msg + `}`},
	} {
		t.Run(name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "s.jsonl")
			require.NoError(t, os.WriteFile(p, []byte(header+"\n"+strings.Join(lines, "\n")+"\n"), 0o600))
			_, _, err := Open(p)
			assert.Error(t, err)
			_, _, err = Branch(p)
			assert.Error(t, err)
			info, err := Describe(p)
			assert.NoError(t, err, "a listing still lists it")
			assert.LessOrEqual(t, info.Messages, 2, "each message counted once at most")
		})
	}
}

// Entry kinds this version does not know are skipped, as earlier versions
// skip leaf entries.
func TestUnknownEntriesSkipped(t *testing.T) {
	path, s, ids := twoTurns(t)
	require.NoError(t, s.Close())
	appendText(t, path, `{"type":"label","id":"9999","parentId":"`+ids[1]+`","text":"a later kind"}`+"\n")
	_, c, err := Open(path)
	require.NoError(t, err)
	assert.Equal(t, []string{"one", "first", "two", "second"}, texts(c.Messages))
	info, err := Describe(path)
	require.NoError(t, err)
	assert.Equal(t, 4, info.Messages)
}

func appendText(t *testing.T, path, text string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	require.NoError(t, err)
	_, err = f.WriteString(text)
	require.NoError(t, err)
	require.NoError(t, f.Close())
}

// draws makes ids from a list, as newID would by chance.
func draws(ids ...string) func(int) string {
	return func(int) string {
		id := ids[0]
		ids = ids[1:]
		return id
	}
}

// Entry ids are short and random: a long session may draw one it has
// already. A new entry (message, compaction or leaf) never takes an id
// that the file's entries have, in a session created, reopened or moved
// in; otherwise an entry's children would follow the newer one, and a
// branch could loop back on itself and the file no longer open.
func TestNewIDsAreUnused(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.jsonl")
	s, err := Create(path, Header{Host: "local", Cwd: "/"})
	require.NoError(t, err)
	s.draw = draws("00000001", "00000001", "00000002", "00000001", "00000002", "00000003")
	ids := []string{must(s.Append(loop.NewUserText("one"))), must(s.Append(answer("first"))), must(s.Append(loop.NewUserText("two")))}
	assert.Equal(t, []string{"00000001", "00000002", "00000003"}, ids)
	require.NoError(t, s.Close())

	s, c, err := Open(path)
	require.NoError(t, err)
	assert.Equal(t, []string{"one", "first", "two"}, texts(c.Messages))
	s.draw = draws("00000003", "00000001", "00000004", "00000002", "00000005")
	last := must(s.Append(answer("second")))
	assert.Equal(t, "00000004", last)
	_, err = s.MoveLeaf(ids[1])
	require.NoError(t, err)
	assert.Contains(t, readFile(t, path), `{"type":"leaf","id":"00000005","parentId":"00000002"`, "the leaf entry's id is new too")
	require.NoError(t, s.Close())

	_, c, err = Open(path)
	require.NoError(t, err)
	assert.Equal(t, []string{"one", "first"}, texts(c.Messages))
	_, all, _, err := Tree(path)
	require.NoError(t, err)
	assert.Len(t, all, 4, "every entry, each once")
}
