package toolstest

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pi-remote/pi-remote/internal/shellquote"
	"github.com/pi-remote/pi-remote/internal/tier"
	"github.com/pi-remote/pi-remote/loop"
	"github.com/pi-remote/pi-remote/loop/looptest"
	"github.com/pi-remote/pi-remote/tools"
)

// results maps the tool results of a run by call ID.
func results(msgs []loop.Message) map[string]*loop.ToolResultMessage {
	out := map[string]*loop.ToolResultMessage{}
	for _, m := range msgs {
		if tr, ok := m.(*loop.ToolResultMessage); ok {
			out[tr.ToolCallID] = tr
		}
	}
	return out
}

// Every call of a batch sees the writes and edits before it on its host:
// bash, read, grep, ls and find after a write (and an edit, and a write
// through a symlinked directory) in one parallel batch, many times over.
func testBatchSeesEarlierMutations(t *testing.T, h Harness) {
	f := newFixture(t, h)
	f.run("mkdir -p " + shellquote.Quote(f.path("real")) + " && ln -s real " + shellquote.Quote(f.path("link")))
	for i := range tier.Rounds(10, 20, 100) {
		name := fmt.Sprintf("race%d.txt", i)
		msgs := runBatch(t, f,
			looptest.Call{ID: "write", Name: "write", Args: map[string]any{"path": "sub/" + name, "content": "a\nb\n"}},
			looptest.Call{ID: "wc", Name: "bash", Args: map[string]any{"command": "wc -l < sub/" + name}},
			looptest.Call{ID: "read", Name: "read", Args: map[string]any{"path": "sub/" + name}},
			editCall("edit", "sub/"+name, "a\n", "c\n"),
			looptest.Call{ID: "grep", Name: "grep", Args: map[string]any{"pattern": "^c$", "path": "sub"}},
			looptest.Call{ID: "ls", Name: "ls", Args: map[string]any{"path": "sub"}},
			looptest.Call{ID: "find", Name: "find", Args: map[string]any{"pattern": name}},
			looptest.Call{ID: "linked", Name: "write", Args: map[string]any{"path": "link/" + name, "content": "linked\n"}},
			looptest.Call{ID: "readReal", Name: "read", Args: map[string]any{"path": "real/" + name}},
			looptest.Call{ID: "cat", Name: "bash", Args: map[string]any{"command": "cat sub/" + name}},
		)
		res := results(msgs)
		for id, tr := range res {
			require.False(t, tr.IsError, "round %d, %s: %s", i, id, text(tr))
		}
		assert.Equal(t, "2", strings.TrimSpace(text(res["wc"])), "round %d: bash after the write", i)
		// (The edit after the read may land first: a call does not wait
		// for it, only for the mutations before it.)
		assert.Regexp(t, `^[ac]\nb\n$`, text(res["read"]), "round %d: read after the write", i)
		assert.Contains(t, text(res["grep"]), name+":1: c", "round %d: grep after the edit", i)
		assert.Contains(t, text(res["ls"]), name, "round %d: ls after the write", i)
		assert.Contains(t, text(res["find"]), "sub/"+name, "round %d: find after the write", i)
		assert.Contains(t, text(res["readReal"]), "linked", "round %d: read of a write through a symlink", i)
		assert.Equal(t, "c\nb", strings.TrimSpace(text(res["cat"])), "round %d: bash after the edit", i)
	}
}

// Calls that do not depend on a mutation do not wait for it: while a
// mutation of held/a.txt is under way, a batch reading, searching and
// writing elsewhere completes, and the calls on held/ (and a command)
// complete only after it. (Evidence of order, not of time.)
func testIndependentCallsDoNotWait(t *testing.T, h Harness) {
	f := newFixture(t, h)
	f.write("held/a.txt", "old\n")
	f.write("free/b.txt", "b\n")
	release := holdMutation(t, f.env, "held/a.txt")
	// A batch that waited for the held mutation would never end.
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	msgs := runBatchCtx(t, ctx, f,
		looptest.Call{ID: "read", Name: "read", Args: map[string]any{"path": "free/b.txt"}},
		looptest.Call{ID: "grep", Name: "grep", Args: map[string]any{"pattern": "b", "path": "free"}},
		looptest.Call{ID: "ls", Name: "ls", Args: map[string]any{"path": "free"}},
		looptest.Call{ID: "find", Name: "find", Args: map[string]any{"pattern": "*.txt", "path": "free"}},
		looptest.Call{ID: "write", Name: "write", Args: map[string]any{"path": "free/c.txt", "content": "c\n"}},
	)
	for id, tr := range results(msgs) {
		require.False(t, tr.IsError, "%s: %s", id, text(tr))
	}

	// Calls on the held file, under its directory, or any command, wait.
	waiting := make(chan []loop.Message, 1)
	go func() {
		waiting <- runBatchCtx(t, t.Context(), f,
			looptest.Call{ID: "read", Name: "read", Args: map[string]any{"path": "held/a.txt"}},
			looptest.Call{ID: "ls", Name: "ls", Args: map[string]any{"path": "."}},
			looptest.Call{ID: "bash", Name: "bash", Args: map[string]any{"command": "true"}},
		)
	}()
	select {
	case <-waiting:
		t.Fatal("calls overlapping a mutation under way finished before it")
	case <-time.After(100 * time.Millisecond):
	}
	release()
	for id, tr := range results(<-waiting) {
		require.False(t, tr.IsError, "%s: %s", id, text(tr))
	}
}

// runBatchCtx is runBatch under ctx, safe to call from any goroutine.
func runBatchCtx(t *testing.T, ctx context.Context, f *fixture, calls ...looptest.Call) []loop.Message {
	model := looptest.New(looptest.ToolCalls(calls...), looptest.Text("done"))
	msgs, err := loop.Run(ctx, loop.Config{Model: model, Tools: tools.WrapAll(f.defs), MaxParallel: 64}, nil, []loop.Message{loop.NewUserText("go")}, nil)
	if err != nil {
		t.Error(err)
	}
	return msgs
}
