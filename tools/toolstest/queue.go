package toolstest

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pi-remote/pi-remote/env"
	"github.com/pi-remote/pi-remote/internal/shellquote"
	"github.com/pi-remote/pi-remote/internal/tier"
	"github.com/pi-remote/pi-remote/loop"
	"github.com/pi-remote/pi-remote/loop/looptest"
	"github.com/pi-remote/pi-remote/tools"
)

func runBatch(t *testing.T, f *fixture, calls ...looptest.Call) []loop.Message {
	t.Helper()
	model := looptest.New(looptest.ToolCalls(calls...), looptest.Text("done"))
	msgs, err := loop.Run(t.Context(), loop.Config{Model: model, Tools: tools.WrapAll(f.defs), MaxParallel: 64}, nil, []loop.Message{loop.NewUserText("go")}, nil)
	require.NoError(t, err)
	return msgs
}

func editCall(id, path, oldText, newText string) looptest.Call {
	return looptest.Call{ID: id, Name: "edit", Args: map[string]any{"path": path, "edits": []map[string]string{{"oldText": oldText, "newText": newText}}}}
}

// Two edits of one file in one batch, the second depending on the first,
// through a relative spelling and an absolute one via a symlinked directory,
// always apply in call order: 50 times (200 in the soak tier; over a slow
// link each round costs several round trips).
func testSameFileEditsApplyInCallOrder(t *testing.T, h Harness) {
	f := newFixture(t, h)
	f.write("real/dir/f.txt", "x\n")
	f.run("ln -s " + shellquote.Quote(f.path("real/dir")) + " " + shellquote.Quote(f.path("link")))
	for i := range tier.Rounds(50, 50, 200) {
		f.write("real/dir/f.txt", "x\n")
		msgs := runBatch(t, f,
			editCall("e1", "real/dir/f.txt", "x", "y"),
			editCall("e2", f.path("link/f.txt"), "y", "z"),
		)
		for _, m := range msgs {
			if tr, ok := m.(*loop.ToolResultMessage); ok {
				require.False(t, tr.IsError, "iteration %d: %s", i, text(tr))
			}
		}
		require.Equal(t, "z\n", f.read("real/dir/f.txt"), "iteration %d", i)
	}
}

// 200 edits in one parallel batch, each replacing its own marker in one
// shared file through three spellings, all land.
func testNoLostUpdates(t *testing.T, h Harness) {
	f := newFixture(t, h)
	var b strings.Builder
	for i := range 200 {
		fmt.Fprintf(&b, "marker-%03d\n", i)
	}
	f.write("shared/file.txt", b.String())
	f.run("ln -s " + shellquote.Quote(f.path("shared")) + " " + shellquote.Quote(f.path("alias")))
	spellings := []string{"shared/file.txt", f.path("alias/file.txt"), "./shared/../shared/file.txt"}
	var calls []looptest.Call
	for i := range 200 {
		calls = append(calls, editCall(fmt.Sprint(i), spellings[i%3], fmt.Sprintf("marker-%03d\n", i), fmt.Sprintf("done-%03d\n", i)))
	}
	msgs := runBatch(t, f, calls...)
	for _, m := range msgs {
		if tr, ok := m.(*loop.ToolResultMessage); ok {
			require.False(t, tr.IsError, "%s: %s", tr.ToolCallID, text(tr))
		}
	}
	got := f.read("shared/file.txt")
	for i := range 200 {
		assert.Contains(t, got, fmt.Sprintf("done-%03d\n", i))
	}
	assert.NotContains(t, got, "marker-")
}

// Two environments over the same paths never share a queue: a mutation held
// in one does not delay the other.
func testEnvironmentsHaveSeparateQueues(t *testing.T, h Harness) {
	f := newFixture(t, h)
	f.write("same.txt", "a\n")
	other := env.New(h.New(t), env.Options{Name: "other", Cwd: f.root, Home: f.root})
	release := holdMutation(t, f.env, "same.txt")
	// The first queue is held until the test lets go of it: a write that
	// waited for it would never end. (A new connection on a loaded CI
	// machine took more than the 5 s this allowed before.)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	otherDefs := tools.Definitions(other, tools.Options{})
	msg := loop.ExecuteTool(ctx, loop.Config{Tools: tools.WrapAll(otherDefs)}, &loop.ToolCall{ID: "1", Name: "write", Arguments: []byte(`{"path":"same.txt","content":"b\n"}`)}, nil)
	require.False(t, msg.IsError, text(msg))
	assert.Equal(t, "b\n", f.read("same.txt"), "the other environment wrote while the first held its queue")

	// The same environment does wait: its write only lands after release.
	sameDone := make(chan *loop.ToolResultMessage, 1)
	go func() {
		sameDone <- loop.ExecuteTool(t.Context(), loop.Config{Tools: tools.WrapAll(f.defs)}, &loop.ToolCall{ID: "2", Name: "write", Arguments: []byte(`{"path":"same.txt","content":"c\n"}`)}, nil)
	}()
	select {
	case m := <-sameDone:
		t.Fatalf("write in the held environment finished early: %s", text(m))
	case <-time.After(100 * time.Millisecond):
	}
	release()
	m := <-sameDone
	require.False(t, m.IsError)
	assert.Equal(t, "c\n", f.read("same.txt"))
}

// Bad input never panics and never touches a file.
func testBadInputLeavesFilesAlone(t *testing.T, h Harness) {
	f := newFixture(t, h)
	f.write("keep.txt", "original\n")
	cases := []struct {
		name, tool, args, want string
	}{
		{"malformed JSON", "write", `{"path":"keep.txt","content":`, "not valid JSON"},
		{"wrong type", "write", `{"path":"keep.txt","content":42}`, `field "content"`},
		{"missing field", "write", `{"path":"keep.txt"}`, "content"},
		{"unknown tool", "delete", `{"path":"keep.txt"}`, `Tool "delete" not found`},
		{"edit wrong type", "edit", `{"path":"keep.txt","edits":"nope"}`, "edits"},
		{"edit missing edits", "edit", `{"path":"keep.txt"}`, "edits"},
		{"edit empty oldText", "edit", `{"path":"keep.txt","edits":[{"oldText":"","newText":"x"}]}`, "oldText is empty"},
		{"array args", "write", `["keep.txt","x"]`, "JSON object"},
		{"oversized", "write", `{"path":"keep.txt","content":"` + strings.Repeat("x", 17<<20) + `"}`, "more than the limit"},
		{"bad timeout", "bash", `{"command":"touch keep.txt","timeout":-1}`, "timeout"},
		{"huge timeout", "bash", `{"command":"touch keep.txt","timeout":1e12}`, "timeout"},
		{"string number", "read", `{"path":"keep.txt","offset":"abc"}`, `field "offset"`},
		{"NUL in path", "write", `{"path":"keep\u0000.txt","content":"x"}`, "NUL"},
		{"extra field", "write", `{"path":"keep.txt","content":"x","mode":"0777"}`, "mode"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m := f.call(tc.tool, tc.args)
			require.True(t, m.IsError, text(m))
			assert.Contains(t, text(m), tc.want)
			assert.Equal(t, "original\n", f.read("keep.txt"))
			entries, err := f.o.ReadDir(t.Context(), f.root)
			require.NoError(t, err)
			var names []string
			for _, e := range entries {
				names = append(names, e.Name)
			}
			assert.ElementsMatch(t, []string{"home", "keep.txt"}, names, "no stray files")
		})
	}
}

// holdMutation holds a mutation of path in e's queue until release is
// called (release waits for it to end).
func holdMutation(t *testing.T, e *env.ExecutionEnv, path string) (release func()) {
	t.Helper()
	held, let := make(chan struct{}), make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- e.Mutate(t.Context(), path, func(string) error {
			close(held)
			<-let
			return nil
		})
	}()
	<-held
	return func() {
		close(let)
		require.NoError(t, <-done)
	}
}
