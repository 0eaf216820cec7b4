package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/pi-remote/pi-remote/loop"
)

// Host is one named environment's set of tool definitions.
type Host struct {
	Name string
	Defs []Definition
}

// ForHosts combines the tools of several environments. With one host the
// definitions are returned as they are. With more, each tool gains an
// optional "host" argument — an enum of the names, defaulting to the
// first — and every call runs entirely on the chosen host's definition:
// preparation, validation, admission to that host's mutation queue and
// execution. The same path on two hosts never shares a queue or a result.
func ForHosts(hosts []Host) ([]Definition, error) {
	switch len(hosts) {
	case 0:
		return nil, fmt.Errorf("no host")
	case 1:
		return hosts[0].Defs, nil
	}
	var names []string
	for _, h := range hosts {
		if slices.Contains(names, h.Name) {
			return nil, fmt.Errorf("host name %q given twice", h.Name)
		}
		names = append(names, h.Name)
	}
	var out []Definition
	for i, base := range hosts[0].Defs {
		per := map[string]Definition{}
		for _, h := range hosts {
			if i >= len(h.Defs) || h.Defs[i].Name != base.Name {
				return nil, fmt.Errorf("host %s: tools differ from host %s", h.Name, hosts[0].Name)
			}
			per[h.Name] = h.Defs[i]
		}
		d, err := multiHost(base, names, per)
		if err != nil {
			return nil, err
		}
		out = append(out, d)
	}
	return out, nil
}

func multiHost(base Definition, names []string, per map[string]Definition) (Definition, error) {
	params, err := withHostParameter(base.Parameters, names)
	if err != nil {
		return Definition{}, fmt.Errorf("%s: %w", base.Name, err)
	}
	d := base
	d.Parameters = params
	d.Description = base.Description + " Runs on the host named by \"host\" (default " + names[0] + ")."
	pick := func(args json.RawMessage) (Definition, string, json.RawMessage, error) {
		name, rest, err := splitHost(args, names[0])
		if err != nil {
			return Definition{}, "", nil, err
		}
		def, ok := per[name]
		if !ok {
			return Definition{}, "", nil, fmt.Errorf("unknown host %q (hosts: %s)", name, strings.Join(names, ", "))
		}
		return def, name, rest, nil
	}
	// Each stage strips "host", runs the chosen host's stage and puts the
	// choice back, so the next stage sees it.
	d.PrepareArguments = func(args json.RawMessage) (json.RawMessage, error) {
		def, name, rest, err := pick(args)
		if err != nil {
			return nil, err
		}
		if def.PrepareArguments != nil {
			if rest, err = def.PrepareArguments(rest); err != nil {
				return nil, err
			}
		}
		return putHost(rest, name)
	}
	d.Validate = func(args json.RawMessage) (json.RawMessage, error) {
		def, name, rest, err := pick(args)
		if err != nil {
			return nil, err
		}
		if def.Validate != nil {
			if rest, err = def.Validate(rest); err != nil {
				return nil, err
			}
		}
		return putHost(rest, name)
	}
	d.Admit = func(ctx context.Context, args json.RawMessage) (any, func(), error) {
		def, _, rest, err := pick(args)
		if err != nil || def.Admit == nil {
			return nil, func() {}, err
		}
		return def.Admit(ctx, rest)
	}
	d.Execute = func(ctx context.Context, callID string, args json.RawMessage, onUpdate func(loop.Result)) (loop.Result, error) {
		def, _, rest, err := pick(args)
		if err != nil {
			return loop.Result{}, err
		}
		return def.Execute(ctx, callID, rest, onUpdate)
	}
	d.RenderCall = func(args json.RawMessage) string {
		def, name, rest, err := pick(args)
		if err != nil {
			return RenderCall(base, args)
		}
		return "[" + name + "] " + RenderCall(def, rest)
	}
	return d, nil
}

// withHostParameter adds the optional "host" enum to a JSON schema.
func withHostParameter(schema json.RawMessage, names []string) (json.RawMessage, error) {
	var s map[string]any
	if err := json.Unmarshal(schema, &s); err != nil {
		return nil, err
	}
	props, _ := s["properties"].(map[string]any)
	if props == nil {
		props = map[string]any{}
	}
	props["host"] = map[string]any{
		"type":        "string",
		"enum":        names,
		"description": "Host to act on (default " + names[0] + ")",
	}
	s["properties"] = props
	return json.Marshal(s)
}

// splitHost takes "host" out of an argument object.
func splitHost(args json.RawMessage, def string) (string, json.RawMessage, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(args, &m); err != nil || m == nil {
		// Not an object: let the host's own stages report it.
		return def, args, nil
	}
	raw, ok := m["host"]
	if !ok {
		return def, args, nil
	}
	var name string
	if err := json.Unmarshal(raw, &name); err != nil {
		return "", nil, fmt.Errorf(`"host" must be a string`)
	}
	delete(m, "host")
	rest, err := json.Marshal(m)
	return name, rest, err
}

func putHost(args json.RawMessage, name string) (json.RawMessage, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(args, &m); err != nil || m == nil {
		return args, nil
	}
	b, _ := json.Marshal(name)
	m["host"] = b
	return json.Marshal(m)
}
