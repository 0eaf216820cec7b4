package agent

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func writeSettings(t *testing.T, path, content string) {
	t.Helper()
	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
	require.NoError(t, os.WriteFile(path, []byte(content), 0o644))
}

// The project's file wins over the user's, field by field and key by key;
// what neither sets keeps its default.
func TestSettingsPrecedence(t *testing.T) {
	home, project := t.TempDir(), t.TempDir()
	files := SettingsFiles(home, project)
	writeSettings(t, files[0], `{
  "model": "anthropic/claude-sonnet-4-5",
  "thinking": "low",
  "hosts": {"devbox": "alice@devbox:2222", "gpu": "bob@gpu"},
  "host": ["devbox"],
  "compaction": {"reserveTokens": 20000, "keepRecentTokens": 30000},
  "models": {"openai/qwen3-coder": {"contextWindow": 32768, "maxOutput": 8192}}
}`)
	writeSettings(t, files[1], `{
  "model": "openai/qwen3-coder",
  "baseUrl": "http://127.0.0.1:8000/v1",
  "hosts": {"devbox": "alice@devbox2"},
  "compaction": {"keepRecentTokens": 4000},
  "models": {"anthropic/claude-sonnet-4-5": {"contextWindow": 1000000, "maxOutput": 64000, "price": {"input": 6, "output": 22.5}}}
}`)
	s, err := LoadSettings(files...)
	require.NoError(t, err)
	assert.Equal(t, "openai/qwen3-coder", s.Model, "project over user")
	assert.Equal(t, "http://127.0.0.1:8000/v1", s.BaseURL)
	assert.Equal(t, "low", s.Thinking, "the user's, where the project says nothing")
	assert.Equal(t, map[string]string{"devbox": "alice@devbox2", "gpu": "bob@gpu"}, s.Hosts)
	assert.Equal(t, []string{"devbox"}, s.Host)
	assert.Equal(t, &CompactionSettings{ReserveTokens: 20000, KeepRecentTokens: 4000}, s.Compaction)

	table := s.ModelTable()
	assert.Equal(t, ModelInfo{Window: 32768, MaxOutput: 8192, Known: true}, table.Lookup("openai/qwen3-coder"))
	assert.Equal(t, 1_000_000, table.Lookup("anthropic/claude-sonnet-4-5-20250929").Window, "an override applies to dated IDs too")
	assert.Equal(t, 6.0, table.Lookup("anthropic/claude-sonnet-4-5").Price.Input)
	assert.Equal(t, 200_000, BuiltinModels().Lookup("anthropic/claude-sonnet-4-5").Window, "the built-in table is untouched")

	none, err := LoadSettings(filepath.Join(t.TempDir(), "missing.json"))
	require.NoError(t, err)
	assert.Equal(t, Settings{}, none)
}

// A file that is not valid settings is an error naming the file and the
// line, never a silent default.
func TestSettingsErrorsNameFileAndLine(t *testing.T) {
	for name, tc := range map[string]struct {
		content, want string
	}{
		"syntax":         {"{\n  \"model\": \"openai/x\",\n  \"thinking\" \"low\"\n}", ":3: invalid character"},
		"trailing comma": {"{\n  \"model\": \"openai/x\",\n}\n", ":3: invalid character '}'"},
		"wrong type":     {"{\n  \"model\": \"x\",\n  \"tools\": \"read\"\n}", ":3: json: cannot unmarshal string"},
		"unknown field":  {"{\n  \"model\": \"x\",\n\n  \"modle\": \"y\"\n}", `:4: json: unknown field "modle"`},
		"truncated":      {"{\n  \"model\": \"x\",\n  \"hosts\": {", ":3: unexpected EOF"},
		"bad level":      {`{"thinking": "max"}`, `:1: thinking "max": want off, low, medium or high`},
		"bad duration":   {`{"reattachTimeout": "5 minutes"}`, ":1: reattachTimeout:"},
		"bad model":      {`{"models": {"qwen": {"contextWindow": 100}}}`, `:1: models: "qwen": want PROVIDER/ID`},
		"tiny window":    {`{"models": {"openai/qwen": {"contextWindow": 100}}}`, `:1: models: openai/qwen: contextWindow 100`},
		"two values":     {"{}\n{}", ":2: more than one JSON value"},
	} {
		t.Run(name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "settings.json")
			writeSettings(t, p, tc.content)
			_, err := LoadSettings(p)
			require.Error(t, err)
			assert.Contains(t, err.Error(), p+tc.want)
		})
	}
	empty := filepath.Join(t.TempDir(), "settings.json")
	writeSettings(t, empty, "\n")
	_, err := LoadSettings(empty)
	assert.NoError(t, err, "an empty file sets nothing")
}
