package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pi-remote/pi-remote/agent"
	"github.com/pi-remote/pi-remote/env"
	"github.com/pi-remote/pi-remote/llm"
	"github.com/pi-remote/pi-remote/loop"
	"github.com/pi-remote/pi-remote/ops/local"
	"github.com/pi-remote/pi-remote/printer"
	"github.com/pi-remote/pi-remote/session"
	"github.com/pi-remote/pi-remote/tools"
)

// syncBuffer is a bytes.Buffer safe for a writer and a polling reader.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// The prompt loop: each line is a run in one session; Ctrl-C aborts the
// running command and returns to the prompt; end of input exits.
func TestInteractiveLoop(t *testing.T) {
	dir := t.TempDir()
	marker := fmt.Sprintf("300.%d", time.Now().UnixNano()%1000000007)
	model := llm.NewScripted(
		llm.ScriptTurn{Text: "First answer."},
		llm.ScriptTurn{ToolCalls: []llm.ScriptToolCall{{ID: "c1", Name: "bash", Arguments: json.RawMessage(`{"command":"sleep ` + marker + `"}`)}}},
		llm.ScriptTurn{Text: "Third answer."},
		llm.ScriptTurn{Text: "## Goal\nanswer three prompts"}, // the summary /compact asks for
	)
	e := env.New(local.New(), env.Options{Cwd: dir, Home: dir})
	defs := tools.Definitions(e, tools.Options{})
	sess, err := session.Create(filepath.Join(dir, "s.jsonl"), session.Header{Host: "local", Cwd: dir})
	require.NoError(t, err)
	defer sess.Close()
	var stdout, stderr syncBuffer
	byName := map[string]tools.Definition{}
	for _, d := range defs {
		byName[d.Name] = d
	}
	out := printer.New(&stdout, &stderr, byName, false, false)
	a := &runAgent{out: out, errw: &stderr, path: sess.Path()}
	a.s = agent.New(agent.Options{Config: loop.Config{Model: model, Tools: tools.WrapAll(defs)}, Model: agent.ModelInfo{Window: agent.DefaultWindow}, File: sess, Emit: out.Emit})

	inR, inW := io.Pipe()
	sigs := make(chan os.Signal, 1)
	done := make(chan error, 1)
	go func() { done <- a.interactive(t.Context(), iostreams{in: inR, out: &stdout, err: &stderr}, sigs) }()

	io.WriteString(inW, "one\n")
	require.Eventually(t, func() bool { return strings.Contains(stdout.String(), "First answer.") }, 5*time.Second, 10*time.Millisecond)
	io.WriteString(inW, "two\n")
	require.Eventually(t, func() bool { return procRunning(marker) }, 5*time.Second, 10*time.Millisecond, "the command runs")
	sigs <- os.Interrupt
	require.Eventually(t, func() bool { return strings.Contains(stderr.String(), "aborting") }, 5*time.Second, 10*time.Millisecond)
	require.Eventually(t, func() bool { return !procRunning(marker) }, 5*time.Second, 20*time.Millisecond, "the aborted command is killed")
	io.WriteString(inW, "three\n")
	require.Eventually(t, func() bool { return strings.Contains(stdout.String(), "Third answer.") }, 5*time.Second, 10*time.Millisecond)
	io.WriteString(inW, "/compact keep the answers\n")
	require.Eventually(t, func() bool { return strings.Contains(stderr.String(), "compacted: ") }, 5*time.Second, 10*time.Millisecond)
	inW.Close()
	select {
	case err := <-done:
		assert.NoError(t, err, "end of input exits cleanly")
	case <-time.After(5 * time.Second):
		t.Fatal("the loop did not end at end of input")
	}

	_, entries, err := session.Branch(sess.Path())
	require.NoError(t, err)
	var prompts []string
	for _, e := range entries {
		if u, ok := e.Message.(*loop.UserMessage); ok {
			prompts = append(prompts, u.Content.Text())
		}
	}
	assert.Equal(t, []string{"one", "two", "three"}, prompts, "one session across the loop")
	_, saved, err := session.Open(sess.Path())
	require.NoError(t, err)
	assert.Equal(t, "## Goal\nanswer three prompts", saved.Summary, "/compact stored its summary")
}

// procRunning says whether a process with "sleep marker" in its command
// line exists (read from /proc).
func procRunning(marker string) bool {
	dirs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, d := range dirs {
		b, err := os.ReadFile(d)
		if err == nil && strings.Contains(strings.ReplaceAll(string(b), "\x00", " "), "sleep "+marker) {
			return true
		}
	}
	return false
}
