package main

import (
	"os"
	"strings"

	"github.com/pi-remote/pi-remote/tui"
)

// providerKeys name the environment variable each provider's key is in.
var providerKeys = map[string]string{"openai": "OPENAI_API_KEY", "anthropic": "ANTHROPIC_API_KEY"}

func providerOf(model string) string {
	p, _, _ := strings.Cut(model, "/")
	return p
}

// baseURLFor is the base URL a model switched to mid-session uses: the
// session's (--base-url, or the settings' baseUrl) is the address of the
// server for the model it was given with, so it goes with that model's
// provider only; another provider is reached at its own API.
func baseURLFor(baseURL, first, name string) string {
	if providerOf(name) != providerOf(first) {
		return ""
	}
	return baseURL
}

// modelChoices are the models /model offers, each saying whether it can
// be used with the keys and settings present: a scripted model always; a
// provider's with its key in the environment, or at the session's base
// URL (a server that may need no key).
func modelChoices(names []string, baseURL, first string) []tui.Choice {
	var usable, not []tui.Choice
	for _, name := range names {
		env, needsKey := providerKeys[providerOf(name)]
		switch {
		case !needsKey || os.Getenv(env) != "" || baseURLFor(baseURL, first, name) != "":
			usable = append(usable, tui.Choice{Label: name, Value: name})
		default:
			not = append(not, tui.Choice{Label: name + " — needs " + env, Value: name})
		}
	}
	return append(usable, not...)
}

// modelFrom names where the session's model came from, for its errors.
func (g *globalOptions) modelFrom() string {
	if g.modelSource != "" {
		return g.modelSource
	}
	return "--model"
}
