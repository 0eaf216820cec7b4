package agent

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/pi-remote/pi-remote/agent/permission"
)

// HostSetting is one entry of the settings' "hosts": the spec a name
// stands for, and that host's own permission mode. It is written either as
// the spec alone ("alice@prod") or as {"spec": …, "permissions": …}.
type HostSetting struct {
	Spec        string `json:"spec"`
	Permissions string `json:"permissions,omitempty"`
}

// UnmarshalJSON reads a spec string or an object.
func (h *HostSetting) UnmarshalJSON(data []byte) error {
	data = bytes.TrimSpace(data)
	if len(data) > 0 && data[0] == '"' {
		*h = HostSetting{}
		return json.Unmarshal(data, &h.Spec)
	}
	type plain HostSetting
	var p plain
	d := json.NewDecoder(bytes.NewReader(data))
	d.DisallowUnknownFields()
	if err := d.Decode(&p); err != nil {
		return err
	}
	*h = HostSetting(p)
	return nil
}

// PermissionSettings are the settings' "permissions": the session's mode
// and the rules, in Claude Code's shape ("bash(git status*)",
// "prod:edit(src/**)").
type PermissionSettings struct {
	Mode  string   `json:"mode,omitempty"`
	Allow []string `json:"allow,omitempty"`
	Ask   []string `json:"ask,omitempty"`
	Deny  []string `json:"deny,omitempty"`
}

// HookEvents are the hook events pi-remote runs.
var HookEvents = []string{"PreToolUse", "PostToolUse"}

// HookMatcher is one entry of an event's hooks: the tools it is for (a
// regular expression matched against the whole tool name, in any case;
// "" or "*" is every tool) and the commands, either Command alone (the
// short form) or Hooks, Claude Code's form.
type HookMatcher struct {
	Matcher string        `json:"matcher,omitempty"`
	Command string        `json:"command,omitempty"`
	Timeout float64       `json:"timeout,omitempty"` // seconds; 0: the default (60)
	Hooks   []HookCommand `json:"hooks,omitempty"`
}

// HookCommand is one command of a HookMatcher, in Claude Code's form.
type HookCommand struct {
	Type    string  `json:"type,omitempty"` // "command" (the only kind)
	Command string  `json:"command"`
	Timeout float64 `json:"timeout,omitempty"`
}

// validatePolicy checks the permissions, hosts' modes and hooks.
func (s Settings) validatePolicy() (string, error) {
	if p := s.Permissions; p != nil {
		if p.Mode != "" {
			if _, err := permission.ParseMode(p.Mode); err != nil {
				return "mode", fmt.Errorf("permissions: %v", err)
			}
		}
		for _, list := range [][]string{p.Allow, p.Ask, p.Deny} {
			for _, r := range list {
				if _, err := permission.ParseRule(r); err != nil {
					return r, fmt.Errorf("permissions: %v", err)
				}
			}
		}
	}
	for name, h := range s.Hosts {
		if h.Spec == "" {
			return name, fmt.Errorf("hosts: %s: no spec", name)
		}
		if h.Permissions != "" {
			if _, err := permission.ParseMode(h.Permissions); err != nil {
				return name, fmt.Errorf("hosts: %s: %v", name, err)
			}
		}
	}
	for event, ms := range s.Hooks {
		if !slices.Contains(HookEvents, event) {
			return event, fmt.Errorf("hooks: event %q is not one pi-remote runs (%s)", event, strings.Join(HookEvents, ", "))
		}
		for _, m := range ms {
			if _, err := hookPattern(m.Matcher); err != nil {
				return m.Matcher, fmt.Errorf("hooks: %s: matcher %q: %v", event, m.Matcher, err)
			}
			if m.Command == "" && len(m.Hooks) == 0 {
				return event, fmt.Errorf("hooks: %s: an entry has no command", event)
			}
			if m.Timeout < 0 {
				return event, fmt.Errorf("hooks: %s: timeout must not be negative", event)
			}
			for _, c := range m.Hooks {
				if c.Type != "" && c.Type != "command" {
					return c.Type, fmt.Errorf("hooks: %s: hook type %q: only \"command\" hooks run", event, c.Type)
				}
				if c.Command == "" {
					return event, fmt.Errorf("hooks: %s: a hook has no command", event)
				}
				if c.Timeout < 0 {
					return event, fmt.Errorf("hooks: %s: timeout must not be negative", event)
				}
			}
		}
	}
	return "", nil
}

// overPolicy applies o's permissions and hooks over s's: o's mode
// replaces s's; rules and hooks add up.
func (s Settings) overPolicy(o Settings) Settings {
	if o.Permissions != nil {
		p := PermissionSettings{}
		if s.Permissions != nil {
			p = *s.Permissions
		}
		if o.Permissions.Mode != "" {
			p.Mode = o.Permissions.Mode
		}
		p.Allow = appendNew(p.Allow, o.Permissions.Allow)
		p.Ask = appendNew(p.Ask, o.Permissions.Ask)
		p.Deny = appendNew(p.Deny, o.Permissions.Deny)
		s.Permissions = &p
	}
	if len(o.Hooks) > 0 {
		h := map[string][]HookMatcher{}
		for k, v := range s.Hooks {
			h[k] = slices.Clone(v)
		}
		for k, v := range o.Hooks {
			h[k] = append(h[k], v...)
		}
		s.Hooks = h
	}
	return s
}

func appendNew(a, b []string) []string {
	out := slices.Clone(a)
	for _, v := range b {
		if !slices.Contains(out, v) {
			out = append(out, v)
		}
	}
	return out
}

// permissionMode is the session's mode the settings give ("" is auto).
func (s Settings) permissionMode() permission.Mode {
	if s.Permissions == nil || s.Permissions.Mode == "" {
		return permission.Auto
	}
	m, err := permission.ParseMode(s.Permissions.Mode)
	if err != nil {
		return permission.Auto
	}
	return m
}

// Policy is the permission policy the settings give (the session's mode,
// the hosts' modes by settings name, the rules), each rule and mode said
// to come from "settings". (LoadedSettings.Policy says which file.)
func (s Settings) Policy() (permission.Policy, error) {
	return s.policy(func(string, string) string { return "settings" })
}

// policy is Policy with from saying where each rule ("allow", "ask",
// "deny" and its text), mode ("mode", "") and host mode ("host" and its
// name) came from.
func (s Settings) policy(from func(kind, text string) string) (permission.Policy, error) {
	p := permission.Policy{Mode: s.permissionMode(), ModeFrom: "default", Hosts: map[string]permission.Mode{}, HostsFrom: map[string]string{}}
	if s.Permissions != nil && s.Permissions.Mode != "" {
		p.ModeFrom = from("mode", "")
	}
	for name, h := range s.Hosts {
		if h.Permissions == "" {
			continue
		}
		m, err := permission.ParseMode(h.Permissions)
		if err != nil {
			return permission.Policy{}, fmt.Errorf("hosts: %s: %v", name, err)
		}
		p.Hosts[name] = m
		p.HostsFrom[name] = from("host", name)
	}
	if s.Permissions == nil {
		return p, nil
	}
	for _, l := range []struct {
		kind  string
		texts []string
		into  *[]permission.Rule
	}{{"allow", s.Permissions.Allow, &p.Allow}, {"ask", s.Permissions.Ask, &p.Ask}, {"deny", s.Permissions.Deny, &p.Deny}} {
		for _, t := range l.texts {
			r, err := permission.ParseRule(t)
			if err != nil {
				return permission.Policy{}, err
			}
			r.From = from(l.kind, t)
			*l.into = append(*l.into, r)
		}
	}
	return p, nil
}

// hookPattern compiles a hook's matcher: a regular expression matched
// against the whole tool name, in any case ("Bash|Write" as Claude Code's
// settings write it matches bash and write); "" and "*" match every tool.
func hookPattern(m string) (*regexp.Regexp, error) {
	if m == "" || m == "*" {
		return regexp.Compile("")
	}
	return regexp.Compile("(?i)^(?:" + m + ")$")
}

// strictness orders the modes: auto, ask, read-only.
func strictness(m permission.Mode) int {
	switch m {
	case permission.Ask:
		return 1
	case permission.ReadOnly:
		return 2
	}
	return 0
}

// Policy is the permission policy in force, each rule and mode said to
// come from the file that set it.
func (l LoadedSettings) Policy() (permission.Policy, error) {
	user := l.user
	return l.Settings.policy(func(kind, text string) string {
		inUser := false
		switch kind {
		case "mode":
			if l.projectMode {
				return "project settings " + l.ProjectFile
			}
			inUser = user.Permissions != nil && user.Permissions.Mode != ""
		case "host":
			inUser = user.Hosts[text].Permissions != ""
		default:
			if user.Permissions != nil {
				inUser = slices.Contains(map[string][]string{"allow": user.Permissions.Allow, "ask": user.Permissions.Ask, "deny": user.Permissions.Deny}[kind], text)
			}
		}
		switch {
		case inUser:
			return "user settings " + l.UserFile
		case l.ProjectFile != "" && kind != "mode":
			return "project settings " + l.ProjectFile
		}
		return "default"
	})
}

// ModelFile is the settings file that set the model in force.
func (l LoadedSettings) ModelFile() string {
	if l.ProjectFile != "" && l.Model != l.user.Model {
		return l.ProjectFile
	}
	return l.UserFile
}
