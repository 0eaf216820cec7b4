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
	compact := func(_ context.Context, focus string) error {
		compactions = append(compactions, focus)
		return nil
	}
	in := strings.NewReader("one\n\n  two  \n/compact keep it\n/compacted\nfail\n")
	err := LinePrompt(t.Context(), in, &errw, make(chan os.Signal), "hello\n", 1<<20, run, compact)
	require.NoError(t, err, "the end of input ends the loop")
	assert.Equal(t, []string{"one", "two", "/compacted", "fail"}, runs)
	assert.Equal(t, []string{"keep it"}, compactions)
	assert.True(t, strings.HasPrefix(errw.String(), "hello\n› "))
	assert.Contains(t, errw.String(), "pi-remote: it failed^[[2J\n", "errors told, controls as text")
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
	compact := func(context.Context, string) error {
		return &agent.CompactionError{Err: errors.New("connection refused")}
	}
	in := strings.NewReader("model\n/compact\nlimit\n")
	require.NoError(t, LinePrompt(t.Context(), in, &errw, make(chan os.Signal), "", 1<<20, run, compact))
	assert.NotContains(t, errw.String(), "Incorrect API key")
	assert.NotContains(t, errw.String(), "connection refused")
	assert.Contains(t, errw.String(), "pi-remote: turn limit reached")
}
