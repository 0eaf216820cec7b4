package agent

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/pi-remote/pi-remote/loop"
)

// ModelInfo is what the session needs to know about a model: how much
// context it takes and what its tokens cost.
type ModelInfo struct {
	// Window is the context window in tokens (prompt and output).
	Window int `json:"contextWindow"`
	// MaxOutput is the most tokens one response may have.
	MaxOutput int `json:"maxOutput"`
	// Price is in US dollars per million tokens; zero when unknown.
	Price Price `json:"price"`
	// Known is false for a model neither the table nor the settings name:
	// it gets DefaultWindow and no price.
	Known bool `json:"-"`
}

// Price is dollars per million tokens of each kind.
type Price struct {
	Input      float64 `json:"input"`
	Output     float64 `json:"output"`
	CacheRead  float64 `json:"cacheRead"`
	CacheWrite float64 `json:"cacheWrite"`
}

// Cost is what usage u costs at price p, in dollars.
func (p Price) Cost(u loop.Usage) float64 {
	return (float64(u.Input)*p.Input + float64(u.Output)*p.Output +
		float64(u.CacheRead)*p.CacheRead + float64(u.CacheWrite)*p.CacheWrite) / 1e6
}

// DefaultWindow is the context window assumed for a model nobody describes
// (a local vLLM or Ollama model, say). A provider's context-length error
// still compacts and retries when the real window is smaller; settings
// give the real figures.
const DefaultWindow = 128_000

// defaultMaxOutput goes with DefaultWindow.
const defaultMaxOutput = 16_384

// models is the built-in table, keyed by provider/ID; a dated ID
// ("claude-sonnet-4-5-20250929", "gpt-4o-2024-08-06") takes its model's
// entry (Lookup). Prices are the
// providers' list prices per million tokens (Anthropic's cache writes at
// the 5-minute rate).
var models = map[string]ModelInfo{
	"openai/gpt-4o":               {Window: 128_000, MaxOutput: 16_384, Price: Price{Input: 2.50, Output: 10, CacheRead: 1.25}},
	"openai/gpt-4o-mini":          {Window: 128_000, MaxOutput: 16_384, Price: Price{Input: 0.15, Output: 0.60, CacheRead: 0.075}},
	"openai/gpt-4.1":              {Window: 1_047_576, MaxOutput: 32_768, Price: Price{Input: 2, Output: 8, CacheRead: 0.50}},
	"openai/gpt-4.1-mini":         {Window: 1_047_576, MaxOutput: 32_768, Price: Price{Input: 0.40, Output: 1.60, CacheRead: 0.10}},
	"openai/gpt-4.1-nano":         {Window: 1_047_576, MaxOutput: 32_768, Price: Price{Input: 0.10, Output: 0.40, CacheRead: 0.025}},
	"openai/o3":                   {Window: 200_000, MaxOutput: 100_000, Price: Price{Input: 2, Output: 8, CacheRead: 0.50}},
	"openai/o4-mini":              {Window: 200_000, MaxOutput: 100_000, Price: Price{Input: 1.10, Output: 4.40, CacheRead: 0.275}},
	"openai/gpt-5":                {Window: 400_000, MaxOutput: 128_000, Price: Price{Input: 1.25, Output: 10, CacheRead: 0.125}},
	"openai/gpt-5-mini":           {Window: 400_000, MaxOutput: 128_000, Price: Price{Input: 0.25, Output: 2, CacheRead: 0.025}},
	"openai/gpt-5-nano":           {Window: 400_000, MaxOutput: 128_000, Price: Price{Input: 0.05, Output: 0.40, CacheRead: 0.005}},
	"anthropic/claude-opus-4-6":   {Window: 200_000, MaxOutput: 64_000, Price: Price{Input: 5, Output: 25, CacheRead: 0.50, CacheWrite: 6.25}},
	"anthropic/claude-opus-4-5":   {Window: 200_000, MaxOutput: 64_000, Price: Price{Input: 5, Output: 25, CacheRead: 0.50, CacheWrite: 6.25}},
	"anthropic/claude-opus-4-1":   {Window: 200_000, MaxOutput: 32_000, Price: Price{Input: 15, Output: 75, CacheRead: 1.50, CacheWrite: 18.75}},
	"anthropic/claude-opus-4":     {Window: 200_000, MaxOutput: 32_000, Price: Price{Input: 15, Output: 75, CacheRead: 1.50, CacheWrite: 18.75}},
	"anthropic/claude-sonnet-4-6": {Window: 200_000, MaxOutput: 64_000, Price: Price{Input: 3, Output: 15, CacheRead: 0.30, CacheWrite: 3.75}},
	"anthropic/claude-sonnet-4-5": {Window: 200_000, MaxOutput: 64_000, Price: Price{Input: 3, Output: 15, CacheRead: 0.30, CacheWrite: 3.75}},
	"anthropic/claude-sonnet-4":   {Window: 200_000, MaxOutput: 64_000, Price: Price{Input: 3, Output: 15, CacheRead: 0.30, CacheWrite: 3.75}},
	"anthropic/claude-3-7-sonnet": {Window: 200_000, MaxOutput: 64_000, Price: Price{Input: 3, Output: 15, CacheRead: 0.30, CacheWrite: 3.75}},
	"anthropic/claude-haiku-4-5":  {Window: 200_000, MaxOutput: 64_000, Price: Price{Input: 1, Output: 5, CacheRead: 0.10, CacheWrite: 1.25}},
	"anthropic/claude-3-5-haiku":  {Window: 200_000, MaxOutput: 8_192, Price: Price{Input: 0.80, Output: 4, CacheRead: 0.08, CacheWrite: 1}},
}

// Models is a model table: the built-in one, extended or overridden by
// settings (keys provider/ID, matched as in the built-in table).
type Models map[string]ModelInfo

// BuiltinModels returns a copy of the built-in table.
func BuiltinModels() Models {
	m := Models{}
	for k, v := range models {
		m[k] = v
	}
	return m
}

// datedSuffix is what may follow a table key in a model ID: a snapshot
// date or "latest" (not a version: claude-opus-4-7 is not claude-opus-4).
var datedSuffix = regexp.MustCompile(`^(\d{8}|\d{4}-\d{2}-\d{2}|latest)$`)

// Lookup returns the entry for provider/ID: an exact key, else the
// longest key that ID starts with followed by "-" and a snapshot date
// (or "latest"), else DefaultWindow and no price (Known false).
func (m Models) Lookup(name string) ModelInfo {
	if info, ok := m[name]; ok {
		info.Known = true
		return info
	}
	best := ""
	for k := range m {
		if rest, ok := strings.CutPrefix(name, k+"-"); ok && datedSuffix.MatchString(rest) && len(k) > len(best) {
			best = k
		}
	}
	if best != "" {
		info := m[best]
		info.Known = true
		return info
	}
	return ModelInfo{Window: DefaultWindow, MaxOutput: defaultMaxOutput}
}

// Validate reports an entry that cannot work: a window too small to hold
// anything, or negative figures.
func (info ModelInfo) Validate() error {
	switch {
	case info.Window < 1024:
		return fmt.Errorf("contextWindow %d: want at least 1024 tokens", info.Window)
	case info.MaxOutput < 0 || info.MaxOutput >= info.Window:
		return fmt.Errorf("maxOutput %d: want 0 (unknown) or less than contextWindow %d", info.MaxOutput, info.Window)
	case info.Price.Input < 0 || info.Price.Output < 0 || info.Price.CacheRead < 0 || info.Price.CacheWrite < 0:
		return fmt.Errorf("negative price")
	}
	return nil
}

// ScopeModels are the models a scoped list (--models, the settings'
// enabledModels) picks from names, in the list's order: for each
// pattern, the names it matches, sorted, each name once. A pattern is
// PROVIDER/ID, or a bare ID that matches the ID of any provider's model;
// "*" stands for any run of characters, and letters match in either case.
// A PROVIDER/ID with no "*" names its model even when names lack it (a
// model no table describes). Only such a full name brings in a scripted
// model: a glob or a bare ID never matches one, so a list cannot replay
// a file nobody named.
func ScopeModels(patterns, names []string) []string {
	sorted := slices.Clone(names)
	slices.Sort(sorted)
	var out []string
	add := func(name string) {
		if !slices.Contains(out, name) {
			out = append(out, name)
		}
	}
	for _, p := range patterns {
		literal := !strings.Contains(p, "*") && strings.Contains(p, "/")
		found := false
		for _, name := range sorted {
			provider, id, _ := strings.Cut(name, "/")
			var ok bool
			switch {
			case literal:
				ok = strings.EqualFold(p, name)
			case provider == "scripted":
			case strings.Contains(p, "/"):
				ok = globMatch(p, name)
			default:
				ok = globMatch(p, id)
			}
			if ok {
				add(name)
				found = true
			}
		}
		if literal && !found {
			add(p)
		}
	}
	return out
}

// globMatch says whether s is pattern, where "*" in pattern stands for
// any run of characters (none, or "/" too), letters in either case.
func globMatch(pattern, s string) bool {
	pattern, s = strings.ToLower(pattern), strings.ToLower(s)
	parts := strings.Split(pattern, "*")
	if len(parts) == 1 {
		return pattern == s
	}
	rest, ok := strings.CutPrefix(s, parts[0])
	if !ok {
		return false
	}
	last := parts[len(parts)-1]
	for _, part := range parts[1 : len(parts)-1] {
		i := strings.Index(rest, part)
		if i < 0 {
			return false
		}
		rest = rest[i+len(part):]
	}
	return len(rest) >= len(last) && strings.HasSuffix(rest, last)
}
