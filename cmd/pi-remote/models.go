package main

import (
	"os"
	"strings"

	"github.com/pi-remote/pi-remote/agent"
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
// be used with the keys and settings present (see missingKey).
func modelChoices(names []string, baseURL, first string) []tui.Choice {
	var usable, not []tui.Choice
	for _, name := range names {
		if env := missingKey(name, baseURL, first); env != "" {
			not = append(not, tui.Choice{Label: name + " — needs " + env, Value: name})
		} else {
			usable = append(usable, tui.Choice{Label: name, Value: name})
		}
	}
	return append(usable, not...)
}

// missingKey is the environment variable whose key the model name needs
// and does not have, "" when it can be used: a scripted model always; a
// provider's with its key in the environment, or at the session's base
// URL (a server that may need no key).
func missingKey(name, baseURL, first string) string {
	env, needsKey := providerKeys[providerOf(name)]
	if !needsKey || os.Getenv(env) != "" || baseURLFor(baseURL, first, name) != "" {
		return ""
	}
	return env
}

// modelScope is the scoped list (--models) as things are: the models its
// patterns pick from the model table and the model in use, those without
// their key skipped.
func modelScope(patterns string, table agent.Models, current, baseURL, first string) tui.ModelScope {
	var list []string
	for _, p := range strings.Split(patterns, ",") {
		if p = strings.TrimSpace(p); p != "" {
			list = append(list, p)
		}
	}
	if len(list) == 0 {
		return tui.ModelScope{}
	}
	var names []string
	if current != "" {
		names = append(names, current)
	}
	for name := range table {
		names = append(names, name)
	}
	s := tui.ModelScope{Set: true}
	for _, name := range agent.ScopeModels(list, names) {
		if env := missingKey(name, baseURL, first); env != "" {
			s.Skipped = append(s.Skipped, name+" — needs "+env)
		} else {
			s.Models = append(s.Models, name)
		}
	}
	return s
}

// modelFrom names where the session's model came from, for its errors.
func (g *globalOptions) modelFrom() string {
	if g.modelSource != "" {
		return g.modelSource
	}
	return "--model"
}
