package toolstest

import (
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"io/fs"
	"strings"
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

func lines(n int, format string) string {
	var b strings.Builder
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, format+"\n", i)
	}
	return b.String()
}

func testRead(t *testing.T, h Harness) {
	f := newFixture(t, h)
	f.write("small.txt", "alpha\nbeta\ngamma\n")
	f.write("many.txt", lines(2500, "line %d"))
	f.write("wide.txt", lines(1000, "%04d "+strings.Repeat("w", 95)))
	f.write("longline.txt", "short\n"+strings.Repeat("L", 60*1024)+"\nafter\n")
	f.write("empty.txt", "")
	f.write("latin1.txt", "caf\xe9\n")
	f.write("crlf.txt", "a\r\nb\r\n")
	f.write("home/notes.md", "in home\n")
	f.write("with space/x.txt", "spaced\n")

	t.Run("text as is, no line numbers", func(t *testing.T) {
		assert.Equal(t, "alpha\nbeta\ngamma\n", f.ok("read", map[string]any{"path": "small.txt"}))
		assert.Equal(t, "a\r\nb\r\n", f.ok("read", map[string]any{"path": "crlf.txt"}))
	})
	t.Run("offset and limit", func(t *testing.T) {
		assert.Equal(t, "beta\n\n[1 more lines in file. Use offset=3 to continue.]", f.ok("read", map[string]any{"path": "small.txt", "offset": 2, "limit": 1}))
		assert.Equal(t, "gamma\n", f.ok("read", map[string]any{"path": "small.txt", "offset": 3}))
	})
	t.Run("scalar coercion", func(t *testing.T) {
		assert.Equal(t, "beta\ngamma\n", f.ok("read", `{"path":"small.txt","offset":"2"}`))
		assert.Equal(t, "beta\ngamma\n", f.ok("read", `{"path":"small.txt","offset":2.0}`), "2.0 is an integer")
		assert.Equal(t, "beta\n\n[1 more lines in file. Use offset=3 to continue.]", f.ok("read", `{"path":"small.txt","offset":" 2 ","limit":"1"}`))
		f.fails("read", `{"path":"small.txt","offset":"2.5"}`, `field "offset"`)
		f.fails("read", `{"path":true}`, `field "path"`)
	})
	t.Run("offset beyond end", func(t *testing.T) {
		f.fails("read", map[string]any{"path": "small.txt", "offset": 10}, "beyond the end", "3 lines")
	})
	t.Run("missing and directory", func(t *testing.T) {
		f.fails("read", map[string]any{"path": "nope.txt"}, "File not found: nope.txt")
		f.fails("read", map[string]any{"path": "home"}, "is a directory")
	})
	t.Run("devices and FIFOs are neither read nor edited nor replaced", func(t *testing.T) {
		// A FIFO nobody writes would hold the call for ever: the writer
		// that comes after 5 s only ends a wait that should not begin.
		fifo := shellquote.Quote(f.path("fifo"))
		f.run("mkfifo " + fifo + " && { (sleep 5; : <>" + fifo + ") >/dev/null 2>&1 & }")
		for _, p := range []string{"fifo", "/dev/null", "/dev/zero"} {
			f.fails("read", map[string]any{"path": p}, p+" is not a regular file")
			f.fails("edit", edits(p, "a", "b"), p+" is not a regular file")
			f.fails("write", map[string]any{"path": p, "content": "x"}, "not a regular file")
		}
	})
	t.Run("path rules", func(t *testing.T) {
		assert.Equal(t, "in home\n", f.ok("read", map[string]any{"path": "~/notes.md"}), "~ is the host's home")
		assert.Equal(t, "alpha\nbeta\ngamma\n", f.ok("read", map[string]any{"path": "@small.txt"}), "leading @ dropped")
		assert.Equal(t, "spaced\n", f.ok("read", map[string]any{"path": "with\u00a0space/x.txt"}), "NBSP becomes a space")
		assert.Equal(t, "spaced\n", f.ok("read", map[string]any{"path": "with\u202fspace/x.txt"}))
		assert.Equal(t, "alpha\nbeta\ngamma\n", f.ok("read", map[string]any{"path": f.path("small.txt")}), "absolute")
	})
	t.Run("empty file", func(t *testing.T) {
		assert.Equal(t, "[The file is empty.]", f.ok("read", map[string]any{"path": "empty.txt"}))
	})
	t.Run("non-UTF-8", func(t *testing.T) {
		assert.Equal(t, "caf\uFFFD\n", f.ok("read", map[string]any{"path": "latin1.txt"}))
	})

	var notices strings.Builder
	note := func(name, out string) {
		i := strings.LastIndex(out, "\n\n[") + 2
		if strings.HasPrefix(out, "[") {
			i = 0 // nothing was kept, only the notice
		}
		require.GreaterOrEqual(t, i, 0, "%s has a notice: %q", name, out[max(0, len(out)-200):])
		fmt.Fprintf(&notices, "%s: %s\n", name, out[i:])
	}
	t.Run("line limit", func(t *testing.T) {
		out := f.ok("read", map[string]any{"path": "many.txt"})
		assert.True(t, strings.HasPrefix(out, "line 1\n"))
		assert.Contains(t, out, "line 2000\n\n[")
		assert.NotContains(t, out, "line 2001")
		note("read 2500 lines", out)
		out = f.ok("read", map[string]any{"path": "many.txt", "offset": 2001})
		assert.True(t, strings.HasPrefix(out, "line 2001\n"))
		assert.True(t, strings.HasSuffix(out, "line 2500\n"))
	})
	t.Run("byte limit", func(t *testing.T) {
		out := f.ok("read", map[string]any{"path": "wide.txt"})
		body := out[:strings.LastIndex(out, "\n\n[")+1]
		assert.LessOrEqual(t, len(body), tools.MaxBytes)
		note("read 50KB", out)
	})
	t.Run("user limit", func(t *testing.T) {
		note("read limit=10", f.ok("read", map[string]any{"path": "many.txt", "limit": 10}))
	})
	t.Run("long line", func(t *testing.T) {
		out := f.ok("read", map[string]any{"path": "longline.txt", "offset": 2})
		assert.Contains(t, out, "sed -n '2p'")
		note("read long line", strings.ReplaceAll(out, f.root, "ROOT"))
		assert.Equal(t, "short\n\n[1 more lines in file. Use offset=2 to continue.]"[:6], f.ok("read", map[string]any{"path": "longline.txt", "limit": 1})[:6])
	})
	golden(t, h, "read_notices.txt", notices.String())
}

func testReadImagesAndBinaries(t *testing.T, h Harness) {
	f := newFixture(t, h)
	png := []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01\x08\x06\x00\x00\x00\x1f\x15\xc4\x89")
	f.write("pic.dat", string(png))
	m := f.call("read", map[string]any{"path": "pic.dat"})
	require.False(t, m.IsError)
	require.Len(t, m.Content, 2)
	img, ok := m.Content[1].(*loop.Image)
	require.True(t, ok, "image block")
	assert.Equal(t, "image/png", img.MimeType, "detected by content, not extension")
	data, err := base64.StdEncoding.DecodeString(img.Data)
	require.NoError(t, err)
	assert.Equal(t, png, data)

	f.write("blob.bin", "\x00\x01\x02binary\x00stuff")
	out := f.ok("read", map[string]any{"path": "blob.bin"})
	assert.Contains(t, out, "binary file")
	assert.NotContains(t, out, "stuff")
}

// countingFS counts the bytes read through Open.
type countingFS struct {
	ops.Operations
	read  atomic.Int64
	stats atomic.Int64
}

func (c *countingFS) Stat(ctx context.Context, name string) (fs.FileInfo, error) {
	c.stats.Add(1)
	return c.Operations.Stat(ctx, name)
}

type countingReader struct {
	io.ReadCloser
	n *atomic.Int64
}

func (c countingReader) Read(p []byte) (int, error) {
	n, err := c.ReadCloser.Read(p)
	c.n.Add(int64(n))
	return n, err
}

func (c *countingFS) Open(ctx context.Context, name string) (io.ReadCloser, error) {
	rc, err := c.Operations.Open(ctx, name)
	if err != nil {
		return nil, err
	}
	return countingReader{rc, &c.read}, nil
}

func testReadHeadOfHugeFileIsBounded(t *testing.T, h Harness) {
	f := newFixture(t, h)
	line := strings.Repeat("y", 99) + "\n"
	chunk := strings.Repeat(line, 10000) // 1 MB
	readers := make([]io.Reader, 64)
	for i := range readers {
		readers[i] = strings.NewReader(chunk)
	}
	require.NoError(t, f.o.WriteFile(t.Context(), f.path("huge.log"), io.MultiReader(readers...), ops.WriteOptions{}))

	cfs := &countingFS{Operations: h.New(t)}
	e := env.New(cfs, env.Options{Cwd: f.root, Home: f.root})
	defs := tools.Definitions(e, tools.Options{})
	m := loop.ExecuteTool(t.Context(), loop.Config{Tools: tools.WrapAll(defs)}, &loop.ToolCall{ID: "1", Name: "read", Arguments: []byte(`{"path":"huge.log","limit":5}`)}, nil)
	require.False(t, m.IsError)
	assert.True(t, strings.HasPrefix(text(m), line))
	assert.Contains(t, text(m), "Use offset=6")
	assert.Less(t, cfs.read.Load(), int64(8<<20), "reading 5 lines of a 64 MB file transferred %d bytes", cfs.read.Load())

	cfs.stats.Store(0)
	f.write("small.txt", "a\nb\n")
	m = loop.ExecuteTool(t.Context(), loop.Config{Tools: tools.WrapAll(defs)}, &loop.ToolCall{ID: "2", Name: "read", Arguments: []byte(`{"path":"small.txt"}`)}, nil)
	require.False(t, m.IsError)
	assert.Equal(t, int64(0), cfs.stats.Load(), "a text read is one Open, no separate Stat")
	assert.Equal(t, int64(4), m.Details.(tools.ReadDetails).Size)
}
