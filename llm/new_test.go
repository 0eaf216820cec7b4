package llm

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestNewBuildsEachProvider(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "")
	t.Setenv("ANTHROPIC_API_KEY", "")
	script := filepath.Join(t.TempDir(), "s.json")
	require.NoError(t, os.WriteFile(script, []byte(`{"turns":[{"text":"hi"}]}`), 0o644))
	for _, tc := range []struct {
		spec string
		o    Options
		want any
	}{
		{"openai/gpt-4o-mini", Options{APIKey: "k"}, &OpenAI{}},
		{"openai/qwen", Options{BaseURL: "http://127.0.0.1:1/v1"}, &OpenAI{}},
		{"anthropic/claude-sonnet-4-5", Options{APIKey: "k"}, &Anthropic{}},
		{"anthropic/x", Options{BaseURL: "http://127.0.0.1:1"}, &Anthropic{}},
		{"scripted/" + script, Options{}, &Scripted{}},
	} {
		t.Run(tc.spec, func(t *testing.T) {
			m, err := New(tc.spec, tc.o)
			require.NoError(t, err)
			assert.IsType(t, tc.want, m)
		})
	}
}

func TestNewTakesTheKeyFromTheEnvironment(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "from-env")
	t.Setenv("ANTHROPIC_API_KEY", "from-env")
	m, err := New("openai/gpt-4o-mini", Options{})
	require.NoError(t, err)
	assert.Equal(t, "gpt-4o-mini", m.(*OpenAI).model, "the ID comes from the spec")
	_, err = New("anthropic/claude-sonnet-4-5", Options{})
	require.NoError(t, err)
}

func TestNewWithoutAKey(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "")
	t.Setenv("ANTHROPIC_API_KEY", "")
	for spec, env := range map[string]string{"openai/gpt-4o-mini": "OPENAI_API_KEY", "anthropic/claude-sonnet-4-5": "ANTHROPIC_API_KEY"} {
		_, err := New(spec, Options{})
		var ke *KeyError
		require.ErrorAs(t, err, &ke, spec)
		assert.Equal(t, env, ke.Env)
		assert.Equal(t, env+" is not set", err.Error())
	}
}

func TestNewRefusesABadSpec(t *testing.T) {
	for spec, why := range map[string]string{
		"nope/x":      `unknown provider "nope" (openai, anthropic, scripted)`,
		"gpt-4o-mini": "want PROVIDER/ID, e.g. openai/gpt-4o-mini",
		"openai/":     "want PROVIDER/ID, e.g. openai/gpt-4o-mini",
		"/gpt":        `unknown provider "" (openai, anthropic, scripted)`,
		"":            "want PROVIDER/ID, e.g. openai/gpt-4o-mini",
	} {
		_, err := New(spec, Options{APIKey: "k"})
		var se *SpecError
		require.ErrorAs(t, err, &se, spec)
		assert.Equal(t, spec, se.Spec)
		assert.Equal(t, why, se.Why, spec)
	}
}

func TestNewReportsAScriptThatCannotBeLoaded(t *testing.T) {
	_, err := New("scripted/"+filepath.Join(t.TempDir(), "missing.json"), Options{})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "scripted model")
	var se *SpecError
	assert.False(t, errors.As(err, &se), "a script's own failure is not a spec error")
}
