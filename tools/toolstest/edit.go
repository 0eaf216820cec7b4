package toolstest

import (
	"bytes"
	"context"
	"io"
	"io/fs"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pi-remote/pi-remote/env"
	"github.com/pi-remote/pi-remote/internal/shellquote"
	"github.com/pi-remote/pi-remote/loop"
	"github.com/pi-remote/pi-remote/ops"
	"github.com/pi-remote/pi-remote/tools"
)

func edits(path string, pairs ...string) map[string]any {
	var es []map[string]string
	for i := 0; i < len(pairs); i += 2 {
		es = append(es, map[string]string{"oldText": pairs[i], "newText": pairs[i+1]})
	}
	return map[string]any{"path": path, "edits": es}
}

func testEdit(t *testing.T, h Harness) {
	f := newFixture(t, h)
	cases := []struct {
		name, before string
		args         map[string]any
		after        string
	}{
		{"single", "hello world\n", edits("f", "world", "there"), "hello there\n"},
		{"several applied together against the original", "a1\nb1\nc1\n", edits("f", "a1", "a2", "c1", "c2"), "a2\nb1\nc2\n"},
		{"crlf kept, LF oldText matches", "one\r\ntwo\r\nthree\r\n", edits("f", "one\ntwo", "uno\ndos\nextra"), "uno\r\ndos\r\nextra\r\nthree\r\n"},
		{"bom kept", "\ufeffname = 1\n", edits("f", "name = 1", "name = 2"), "\ufeffname = 2\n"},
		{"curly quotes tolerated, rest untouched", "say(\u201chi\u201d)  \nkeep \u201cthis\u201d\n", edits("f", `say("hi")`, `say("bye")`), "say(\"bye\")  \nkeep \u201cthis\u201d\n"},
		{"trailing whitespace tolerated", "x = 1   \ny = 2\t\nz = 3 \n", edits("f", "x = 1\ny = 2\n", "x = 10\ny = 20\n"), "x = 10\ny = 20\nz = 3 \n"},
		{"dashes and NFKC tolerated", "a \u2014 b\n\uff21BC\nother \u2014 dash\n", edits("f", "a - b\nABC", "a - c\nABD"), "a - c\nABD\nother \u2014 dash\n"},
		{"nbsp tolerated", "if\u00a0x:\n", edits("f", "if x:", "if y:"), "if y:\n"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f.write("f", tc.before)
			out := f.ok("edit", tc.args)
			assert.Contains(t, out, "Successfully replaced")
			assert.Equal(t, tc.after, f.read("f"))
		})
	}

	t.Run("legacy form and stringified edits", func(t *testing.T) {
		f.write("f", "old\n")
		f.ok("edit", map[string]any{"path": "f", "oldText": "old", "newText": "mid"})
		assert.Equal(t, "mid\n", f.read("f"))
		f.ok("edit", map[string]any{"path": "f", "edits": `[{"oldText":"mid","newText":"new"}]`})
		assert.Equal(t, "new\n", f.read("f"))
	})

	errCases := []struct {
		name, before string
		args         map[string]any
		want         []string
	}{
		{"not found", "abc\n", edits("f", "xyz", "q"), []string{"The edit: oldText not found in f", "exactly, including whitespace"}},
		{"found twice", "dup\ndup\n", edits("f", "dup", "x"), []string{"found 2 times", "Add surrounding lines"}},
		{"index named", "a\nb\n", edits("f", "a", "A", "zzz", "Z"), []string{"edits[1]: oldText not found"}},
		{"overlap", "abcdef\n", edits("f", "abcd", "1", "cdef", "2"), []string{"edits[0] and edits[1] overlap", "Merge them"}},
		{"no change", "same\n", edits("f", "same", "same"), []string{"identical"}},
		{"missing file", "", map[string]any{"path": "absent.txt", "edits": []map[string]string{{"oldText": "a", "newText": "b"}}}, []string{"File not found: absent.txt"}},
	}
	for _, tc := range errCases {
		t.Run(tc.name, func(t *testing.T) {
			f.write("f", tc.before)
			f.fails("edit", tc.args, tc.want...)
			assert.Equal(t, tc.before, f.read("f"), "file untouched")
		})
	}
}

// racingFS changes the file on disk right before the first guarded write,
// as another process on the host might.
type racingFS struct {
	ops.Operations
	fired atomic.Bool
}

func (r *racingFS) WriteFile(ctx context.Context, name string, rd io.Reader, opts ops.WriteOptions) error {
	if opts.Guard != nil && r.fired.CompareAndSwap(false, true) {
		rc, err := r.Operations.Open(ctx, name)
		if err != nil {
			return err
		}
		b, err := io.ReadAll(rc)
		rc.Close()
		if err != nil {
			return err
		}
		if err := r.Operations.WriteFile(ctx, name, bytes.NewReader(append(b, []byte("appended by someone else\n")...)), ops.WriteOptions{}); err != nil {
			return err
		}
	}
	return r.Operations.WriteFile(ctx, name, rd, opts)
}

func testEditNeverClobbersConcurrentChange(t *testing.T, h Harness) {
	f := newFixture(t, h)
	f.write("c.txt", "top\nmiddle\n")
	e := env.New(&racingFS{Operations: h.New(t)}, env.Options{Cwd: f.root, Home: f.root})
	defs := tools.Definitions(e, tools.Options{})
	m := loop.ExecuteTool(t.Context(), loop.Config{Tools: tools.WrapAll(defs)}, &loop.ToolCall{ID: "1", Name: "edit", Arguments: []byte(`{"path":"c.txt","edits":[{"oldText":"top","newText":"TOP"}]}`)}, nil)
	require.False(t, m.IsError, text(m))
	assert.Equal(t, "TOP\nmiddle\nappended by someone else\n", f.read("c.txt"), "both changes survive")
}

func testWrite(t *testing.T, h Harness) {
	f := newFixture(t, h)
	out := f.ok("write", map[string]any{"path": "deep/new/dir/f.txt", "content": "h\u00e9llo \u4e16\u754c\n"})
	assert.Equal(t, "Successfully wrote 14 bytes to deep/new/dir/f.txt", out, "bytes, not characters")
	assert.Equal(t, "h\u00e9llo \u4e16\u754c\n", f.read("deep/new/dir/f.txt"))

	f.write("run.sh", "#!/bin/sh\n")
	f.run("chmod 0755 " + shellquote.Quote(f.path("run.sh")))
	f.ok("write", map[string]any{"path": "run.sh", "content": "#!/bin/sh\necho hi\n"})
	fi, err := f.o.Stat(t.Context(), f.path("run.sh"))
	require.NoError(t, err)
	assert.Equal(t, fs.FileMode(0o755), fi.Mode().Perm(), "mode kept")

	f.ok("write", map[string]any{"path": "empty", "content": ""})
	assert.Equal(t, "", f.read("empty"))
	f.fails("write", map[string]any{"path": "deep", "content": "x"}, "is a directory")
}
