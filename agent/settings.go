package agent

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Settings are the defaults a user or a project gives pi-remote, from
// ~/.pi-remote/settings.json and, winning over it, .pi-remote/settings.json
// in the directory pi-remote runs in. Flags override both. Every field is
// optional.
type Settings struct {
	// Model is the default --model (PROVIDER/ID), BaseURL --base-url.
	Model   string `json:"model,omitempty"`
	BaseURL string `json:"baseUrl,omitempty"`
	// Thinking is the default --thinking level.
	Thinking string `json:"thinking,omitempty"`
	// Tools are the default active tools.
	Tools []string `json:"tools,omitempty"`
	// Hosts name host specs: --host NAME uses the spec, and so does NAME
	// in NAME=SPEC lists.
	Hosts map[string]string `json:"hosts,omitempty"`
	// Host is the default --host list (names from Hosts, or specs).
	Host []string `json:"host,omitempty"`
	// Compaction tunes compaction; unset fields keep the defaults.
	Compaction *CompactionSettings `json:"compaction,omitempty"`
	// ReattachTimeout is the default --reattach-timeout ("2m", "30s").
	ReattachTimeout string `json:"reattachTimeout,omitempty"`
	// Models add models to the built-in table or override its entries
	// (keys provider/ID).
	Models map[string]ModelInfo `json:"models,omitempty"`
}

// SettingsFiles are the user's and the project's settings files, in the
// order they apply (later wins).
func SettingsFiles(home, projectDir string) []string {
	return []string{
		filepath.Join(home, ".pi-remote", "settings.json"),
		filepath.Join(projectDir, ".pi-remote", "settings.json"),
	}
}

// LoadSettings reads the files that exist among paths and merges them,
// later over earlier field by field (maps key by key). A file that is not
// valid is an error naming the file and the line; a missing file is none.
func LoadSettings(paths ...string) (Settings, error) {
	var merged Settings
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return Settings{}, err
		}
		s, err := parseSettings(data)
		if err != nil {
			return Settings{}, fmt.Errorf("%s:%v", p, err)
		}
		merged = merged.over(s)
	}
	return merged, nil
}

// lineError is an error at a line of a settings file.
type lineError struct {
	line int
	err  error
}

func (e *lineError) Error() string { return fmt.Sprintf("%d: %v", e.line, e.err) }

func parseSettings(data []byte) (Settings, error) {
	var s Settings
	if len(bytes.TrimSpace(data)) == 0 {
		return s, nil // an empty file sets nothing
	}
	d := json.NewDecoder(bytes.NewReader(data))
	d.DisallowUnknownFields()
	if err := d.Decode(&s); err != nil {
		return Settings{}, &lineError{line: errorLine(data, err), err: err}
	}
	if d.More() {
		return Settings{}, &lineError{line: lineAt(data, d.InputOffset()), err: errors.New("more than one JSON value")}
	}
	if key, err := s.validate(); err != nil {
		line := 1
		if i := bytes.Index(data, []byte(strconv.Quote(key))); i >= 0 {
			line = lineAt(data, int64(i)+1)
		}
		return Settings{}, &lineError{line: line, err: err}
	}
	return s, nil
}

// errorLine finds the line a decoding error is about.
func errorLine(data []byte, err error) int {
	var syntax *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syntax):
		return lineAt(data, syntax.Offset)
	case errors.As(err, &typ):
		return lineAt(data, typ.Offset)
	}
	// Unknown field: the decoder says its name, not where.
	if name, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
		if i := bytes.Index(data, []byte(name)); i >= 0 {
			return lineAt(data, int64(i)+1)
		}
	}
	if errors.Is(err, io.ErrUnexpectedEOF) {
		return lineAt(data, int64(len(bytes.TrimRight(data, " \t\r\n"))))
	}
	return 1
}

// lineAt is the line (from 1) of the byte before offset: where a JSON
// error's offset (the bytes read when it was found) points.
func lineAt(data []byte, offset int64) int {
	offset = min(max(offset, 0), int64(len(data)))
	return bytes.Count(data[:offset], []byte("\n")) + 1
}

// validate checks the values JSON cannot; on error it says which key
// (for the line) and why.
func (s Settings) validate() (string, error) {
	if s.Thinking != "" && !validThinking(s.Thinking) {
		return "thinking", fmt.Errorf("thinking %q: want off, low, medium or high", s.Thinking)
	}
	if s.ReattachTimeout != "" {
		if _, err := time.ParseDuration(s.ReattachTimeout); err != nil {
			return "reattachTimeout", fmt.Errorf("reattachTimeout: %v", err)
		}
	}
	if c := s.Compaction; c != nil && (c.ReserveTokens < 0 || c.KeepRecentTokens < 0) {
		return "compaction", errors.New("compaction: token counts must not be negative")
	}
	for name, m := range s.Models {
		if !strings.Contains(name, "/") {
			return name, fmt.Errorf("models: %q: want PROVIDER/ID", name)
		}
		if err := m.Validate(); err != nil {
			return name, fmt.Errorf("models: %s: %v", name, err)
		}
	}
	return "", nil
}

// over is o applied over s.
func (s Settings) over(o Settings) Settings {
	pick := func(a, b string) string {
		if b != "" {
			return b
		}
		return a
	}
	s.Model, s.BaseURL, s.Thinking, s.ReattachTimeout = pick(s.Model, o.Model), pick(s.BaseURL, o.BaseURL), pick(s.Thinking, o.Thinking), pick(s.ReattachTimeout, o.ReattachTimeout)
	if o.Tools != nil {
		s.Tools = o.Tools
	}
	if o.Host != nil {
		s.Host = o.Host
	}
	s.Hosts = mergeMap(s.Hosts, o.Hosts)
	s.Models = mergeMap(s.Models, o.Models)
	if o.Compaction != nil {
		c := CompactionSettings{}
		if s.Compaction != nil {
			c = *s.Compaction
		}
		c.Off = o.Compaction.Off
		if o.Compaction.ReserveTokens > 0 {
			c.ReserveTokens = o.Compaction.ReserveTokens
		}
		if o.Compaction.KeepRecentTokens > 0 {
			c.KeepRecentTokens = o.Compaction.KeepRecentTokens
		}
		s.Compaction = &c
	}
	return s
}

func mergeMap[V any](a, b map[string]V) map[string]V {
	if len(b) == 0 {
		return a
	}
	out := map[string]V{}
	for k, v := range a {
		out[k] = v
	}
	for k, v := range b {
		out[k] = v
	}
	return out
}

// ModelTable is the built-in table with the settings' models over it.
func (s Settings) ModelTable() Models {
	m := BuiltinModels()
	for k, v := range s.Models {
		m[k] = v
	}
	return m
}

// ThinkingLevels are the --thinking values.
var ThinkingLevels = []string{"off", "low", "medium", "high"}

func validThinking(level string) bool {
	for _, l := range ThinkingLevels {
		if l == level {
			return true
		}
	}
	return false
}
