package tui

import (
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/pi-remote/pi-remote/agent"
	"github.com/pi-remote/pi-remote/loop"
)

// A run's error is printed once: a model's failure with its answer, a
// compaction's with the compaction line; an error no event carried (the
// turn limit) when the run ends.
func TestErrorsPrintedOnce(t *testing.T) {
	count := func(printed []string, s string) int {
		return strings.Count(strings.Join(printed, "\n"), s)
	}
	t.Run("model", func(t *testing.T) {
		h := newHarness(t, Options{})
		failed := &loop.AssistantMessage{StopReason: loop.StopError, ErrorMessage: "Incorrect API key provided (HTTP 401)"}
		h.do(eventMsg{loop.MessageStart{Message: failed}})
		h.do(eventMsg{loop.MessageEnd{Message: failed}})
		h.do(doneMsg{err: &loop.ModelError{Message: failed.ErrorMessage}})
		assert.Equal(t, 1, count(h.printed, "Incorrect API key"), "printed: %q", h.printed)
	})
	t.Run("compaction", func(t *testing.T) {
		h := newHarness(t, Options{})
		h.do(eventMsg{agent.CompactionEnd{Reason: "manual", Error: "connection refused"}})
		h.do(doneMsg{err: &agent.CompactionError{Err: errors.New("connection refused")}, compact: true})
		assert.Equal(t, 1, count(h.printed, "connection refused"), "printed: %q", h.printed)
	})
	t.Run("no event carried it", func(t *testing.T) {
		h := newHarness(t, Options{})
		h.do(doneMsg{err: loop.ErrTurnLimit})
		assert.Equal(t, 1, count(h.printed, "turn limit reached"), "printed: %q", h.printed)
	})
}

// A refusal of a context too long that the session recovers from is not
// shown as an error.
func TestRecoveredOverflowIsNotAnError(t *testing.T) {
	h := newHarness(t, Options{})
	refused := &loop.AssistantMessage{StopReason: loop.StopError, ErrorMessage: "prompt is too long: 210000 tokens > 200000 maximum (HTTP 400)"}
	h.do(eventMsg{loop.MessageStart{Message: refused}})
	h.do(eventMsg{loop.MessageEnd{Message: refused}})
	h.do(eventMsg{agent.CompactionStart{Reason: "overflow"}})
	h.do(eventMsg{agent.CompactionEnd{Reason: "overflow", TokensBefore: 210000, TokensAfter: 20000}})
	h.do(doneMsg{})
	all := strings.Join(h.printed, "\n")
	assert.Contains(t, all, "prompt is too long")
	assert.NotContains(t, all, "error:")
}
