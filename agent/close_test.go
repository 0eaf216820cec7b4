package agent

import (
	"context"
	"iter"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pi-remote/pi-remote/loop"
	"github.com/pi-remote/pi-remote/session"
)

// waitingModel answers nothing until its request is cancelled; entered
// tells that a request came.
type waitingModel struct{ entered chan struct{} }

func (w waitingModel) Stream(ctx context.Context, _ loop.Request) iter.Seq[loop.StreamEvent] {
	return func(yield func(loop.StreamEvent) bool) {
		close(w.entered)
		<-ctx.Done()
		yield(&loop.StreamError{StopReason: loop.StopAborted, Message: "aborted"})
	}
}

// A front end that quits mid-run cancels the run and closes the session:
// Close waits for the run to save its end, so the file is closed after
// the last append (no "file already closed"), and later calls are refused.
func TestCloseWaitsForTheRunToSave(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.jsonl")
	file, err := session.Create(path, session.Header{Host: "local", Cwd: "/"})
	require.NoError(t, err)
	var saveErrs []error
	m := waitingModel{entered: make(chan struct{})}
	s := New(Options{
		Config:    loop.Config{Model: m},
		Model:     ModelInfo{Window: DefaultWindow},
		File:      file,
		SaveError: func(err error) { saveErrs = append(saveErrs, err) },
	})
	ctx, cancel := context.WithCancel(t.Context())
	ran := make(chan error, 1)
	go func() {
		_, err := s.Prompt(ctx, loop.NewUserText("go"))
		ran <- err
	}()
	<-m.entered
	cancel() // the front end quits: it cancels the run, then closes
	s.Close()
	require.NoError(t, file.Close())
	assert.ErrorIs(t, <-ran, context.Canceled)
	assert.Empty(t, saveErrs)

	_, entries, err := session.Branch(path)
	require.NoError(t, err)
	require.Len(t, entries, 2, "the prompt and the aborted answer")
	answer, ok := entries[1].Message.(*loop.AssistantMessage)
	require.True(t, ok)
	assert.Equal(t, loop.StopAborted, answer.StopReason)

	_, err = s.Prompt(t.Context(), loop.NewUserText("more"))
	assert.ErrorIs(t, err, ErrClosed)
	assert.ErrorIs(t, s.Compact(t.Context(), ""), ErrClosed)
}
