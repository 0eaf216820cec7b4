package printer

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pi-remote/pi-remote/agent"
	"github.com/pi-remote/pi-remote/loop"
)

func TestLinePrompt(t *testing.T) {
	var errw bytes.Buffer
	var runs, compactions []string
	run := func(_ context.Context, p string) error {
		runs = append(runs, p)
		if p == "fail" {
			return errors.New("it failed\x1b[2J")
		}
		return nil
	}
	commands := map[string]LineCommand{
		"compact": {"/compact [focus]", "summarize now", func(_ context.Context, focus string) (string, error) {
			compactions = append(compactions, focus)
			return "", nil
		}},
		"session": {"/session", "the session", func(context.Context, string) (string, error) { return "session s.jsonl\x1b[2J", nil }},
	}
	in := strings.NewReader("one\n\n  two  \n/compact keep it\n/compacted\n/session\n/help\nfail\n/quit\nafter quit\n")
	err := LinePrompt(t.Context(), in, &errw, make(chan os.Signal), "hello\n", 1<<20, run, commands)
	require.NoError(t, err, "/quit ends the loop")
	assert.Equal(t, []string{"one", "two", "fail"}, runs, "commands, known or not, are not prompts; nothing after /quit")
	assert.Equal(t, []string{"keep it"}, compactions)
	out := errw.String()
	assert.True(t, strings.HasPrefix(out, "hello\n› "))
	assert.Contains(t, out, "unknown command /compacted (/help lists them)")
	assert.Contains(t, out, "session s.jsonl^[[2J\n", "a command's answer, controls as text")
	assert.Contains(t, out, "  /compact [focus]  summarize now\n")
	assert.Contains(t, out, "  /quit ")
	assert.Contains(t, out, "pi-remote: it failed^[[2J\n", "errors told, controls as text")
}

// A failure the run's events showed (the model's, a compaction's) is not
// told again; others are.
func TestLinePromptTellsAnErrorOnce(t *testing.T) {
	var errw bytes.Buffer
	run := func(_ context.Context, p string) error {
		if p == "model" {
			return fmt.Errorf("run: %w", &loop.ModelError{Message: "Incorrect API key"})
		}
		return loop.ErrTurnLimit
	}
	commands := map[string]LineCommand{"compact": {"/compact", "", func(context.Context, string) (string, error) {
		return "", &agent.CompactionError{Err: errors.New("connection refused")}
	}}}
	in := strings.NewReader("model\n/compact\nlimit\n")
	require.NoError(t, LinePrompt(t.Context(), in, &errw, make(chan os.Signal), "", 1<<20, run, commands))
	assert.NotContains(t, errw.String(), "Incorrect API key")
	assert.NotContains(t, errw.String(), "connection refused")
	assert.Contains(t, errw.String(), "pi-remote: turn limit reached")
}
