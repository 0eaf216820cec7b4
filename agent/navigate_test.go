package agent

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pi-remote/pi-remote/loop"
	"github.com/pi-remote/pi-remote/session"
)

func userTexts(msgs []loop.Message) []string {
	var out []string
	for _, m := range msgs {
		if u, ok := m.(*loop.UserMessage); ok {
			out = append(out, u.Content.Text())
		}
	}
	return out
}

// Navigate takes the session back to an entry: the next request sends
// that branch's context, the new prompt is saved as the entry's child,
// and a reopened file continues there. Not during a run.
func TestNavigate(t *testing.T) {
	m := &fakeModel{limit: 100_000}
	path := filepath.Join(t.TempDir(), "s.jsonl")
	s, _ := newTestSession(t, m, 100_000, path)
	_, err := s.Prompt(t.Context(), loop.NewUserText("one"))
	require.NoError(t, err)
	s.mu.Lock()
	firstAnswer := s.ids[1]
	s.mu.Unlock()
	_, err = s.Prompt(t.Context(), loop.NewUserText("two"))
	require.NoError(t, err)

	end, err := s.begin()
	require.NoError(t, err)
	assert.ErrorIs(t, s.Navigate(firstAnswer), ErrBusy, "not while a run goes on")
	end()

	require.NoError(t, s.Navigate(firstAnswer))
	assert.Equal(t, []string{"one"}, userTexts(s.Messages()))
	_, err = s.Prompt(t.Context(), loop.NewUserText("two, again"))
	require.NoError(t, err)
	last := m.requests[len(m.requests)-1]
	assert.Equal(t, []string{"one", "two, again"}, userTexts(last.Messages), "the model sees the new branch")

	_, branch, err := session.Branch(path)
	require.NoError(t, err)
	require.Len(t, branch, 4)
	assert.Equal(t, firstAnswer, branch[2].ParentID)
	_, c, err := session.Open(path)
	require.NoError(t, err)
	assert.Equal(t, []string{"one", "two, again"}, userTexts(c.Messages))

	assert.Error(t, s.Navigate("no-such-entry"))
	assert.Equal(t, []string{"one", "two, again"}, userTexts(s.Messages()), "a failed move changes nothing")

	unsaved := New(Options{Config: loop.Config{Model: m}})
	assert.Error(t, unsaved.Navigate(""), "no file to go back in")
}
