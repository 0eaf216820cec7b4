package llm

import (
	"fmt"
	"os"
	"strings"

	"github.com/pi-remote/pi-remote/loop"
)

// Providers are the provider names New knows, in the order they are
// offered to a user.
var Providers = []string{"openai", "anthropic", "scripted"}

// SpecError says that a model spec is not one New can build: malformed
// (not PROVIDER/ID) or naming an unknown provider.
type SpecError struct {
	Spec string
	Why  string // e.g. "want PROVIDER/ID, e.g. openai/gpt-4o-mini"
}

func (e *SpecError) Error() string { return fmt.Sprintf("model %q: %s", e.Spec, e.Why) }

// KeyError says that a provider needs an API key and has none: none in
// Options.APIKey, none in its environment variable, and no BaseURL (a
// server of one's own may need no key).
type KeyError struct {
	Provider string // "openai" or "anthropic"
	API      string // the API's name for a person: "OpenAI", "Anthropic"
	Env      string // the environment variable that holds the key
}

func (e *KeyError) Error() string { return e.Env + " is not set" }

// New builds the model spec names, "PROVIDER/ID":
//
//   - openai/ID: OpenAI or any OpenAI-compatible server (o.BaseURL); the
//     key is o.APIKey, else $OPENAI_API_KEY.
//   - anthropic/ID: the Anthropic Messages API (or a compatible server at
//     o.BaseURL); the key is o.APIKey, else $ANTHROPIC_API_KEY.
//   - scripted/FILE: assistant turns replayed from a JSON file (LoadScript).
//
// o.Model is ignored: the ID comes from spec. A malformed spec or an
// unknown provider is a *SpecError, a missing key a *KeyError, and a
// script that cannot be loaded LoadScript's error.
func New(spec string, o Options) (loop.Model, error) {
	provider, id, ok := strings.Cut(spec, "/")
	if !ok || id == "" {
		return nil, &SpecError{Spec: spec, Why: "want PROVIDER/ID, e.g. openai/gpt-4o-mini"}
	}
	o.Model = id
	switch provider {
	case "openai":
		if err := key(&o, &KeyError{Provider: provider, API: "OpenAI", Env: "OPENAI_API_KEY"}); err != nil {
			return nil, err
		}
		if o.APIKey == "" {
			o.APIKey = "none" // a server of one's own that wants no key
		}
		return NewOpenAI(o), nil
	case "anthropic":
		if err := key(&o, &KeyError{Provider: provider, API: "Anthropic", Env: "ANTHROPIC_API_KEY"}); err != nil {
			return nil, err
		}
		return NewAnthropic(o), nil
	case "scripted":
		return LoadScript(id)
	}
	return nil, &SpecError{Spec: spec, Why: fmt.Sprintf("unknown provider %q (%s)", provider, strings.Join(Providers, ", "))}
}

// key fills o.APIKey from the environment variable missing names when
// it is empty; it is an error only when there is no key and no BaseURL.
func key(o *Options, missing *KeyError) error {
	if o.APIKey == "" {
		o.APIKey = os.Getenv(missing.Env)
	}
	if o.APIKey == "" && o.BaseURL == "" {
		return missing
	}
	return nil
}
