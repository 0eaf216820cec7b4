package llm

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pi-remote/pi-remote/loop"
)

func TestScriptedReplaysTurns(t *testing.T) {
	p := filepath.Join(t.TempDir(), "script.json")
	require.NoError(t, os.WriteFile(p, []byte(`{"turns":[
		{"thinking":"hmm","text":"Reading.","toolCalls":[{"id":"c1","name":"read","arguments":{"path":"a"}}]},
		{"text":"Done."}
	]}`), 0o644))
	m, err := LoadScript(p)
	require.NoError(t, err)
	evs := collect(m, t.Context(), loop.Request{})
	assert.Equal(t, []loop.StreamEvent{
		&loop.StreamStart{Model: "scripted"},
		&loop.ThinkingDelta{Index: 0, Delta: "hmm"},
		&loop.TextDelta{Index: 1, Delta: "Reading."},
		&loop.ToolCallDelta{Index: 2, ID: "c1", Name: "read", ArgumentsDelta: `{"path":"a"}`},
		&loop.StreamDone{StopReason: loop.StopToolUse},
	}, evs)
	evs = collect(m, t.Context(), loop.Request{})
	assert.Equal(t, &loop.StreamDone{StopReason: loop.StopEnd}, evs[len(evs)-1])
	evs = collect(m, t.Context(), loop.Request{})
	assert.Contains(t, evs[0].(*loop.StreamError).Message, "no turn 3")

	_, err = LoadScript(filepath.Join(t.TempDir(), "missing.json"))
	assert.Error(t, err)
	bad := filepath.Join(t.TempDir(), "bad.json")
	require.NoError(t, os.WriteFile(bad, []byte(`{"turns":[]}`), 0o644))
	_, err = LoadScript(bad)
	assert.ErrorContains(t, err, "no turns")
}
