package main

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pi-remote/pi-remote/agent/permission"
)

func TestColorOnlyOnATerminalWithoutNoColor(t *testing.T) {
	env := func(kv ...string) func(string) string {
		return func(k string) string {
			for i := 0; i+1 < len(kv); i += 2 {
				if kv[i] == k {
					return kv[i+1]
				}
			}
			return ""
		}
	}
	assert.True(t, colorFor(true, env("TERM", "xterm-256color")))
	assert.False(t, colorFor(false, env("TERM", "xterm-256color")), "piped")
	assert.False(t, colorFor(true, env("NO_COLOR", "1")), "NO_COLOR")
	assert.False(t, colorFor(true, env("TERM", "dumb")), "dumb terminal")
}

// /session's account of the permissions: each host's mode and where it
// came from, the rules in the order they win, each with its origin, a
// rule a person added this session among them.
func TestDescribePolicy(t *testing.T) {
	rule := func(text, from string) permission.Rule {
		r, err := permission.ParseRule(text)
		require.NoError(t, err)
		r.From = from
		return r
	}
	p := permission.Policy{
		Mode: permission.Ask, ModeFrom: "--permissions",
		Hosts: map[string]permission.Mode{"prod": permission.ReadOnly}, HostsFrom: map[string]string{"prod": "user settings /home/a/.pi-remote/settings.json"},
		Allow: []permission.Rule{rule("bash(git status*)", "user settings /home/a/.pi-remote/settings.json")},
		Deny:  []permission.Rule{rule("bash(rm -rf *)", "project settings /src/.pi-remote/settings.json")},
	}
	g := permission.NewGate(p)
	g.SetAsker(func(context.Context, permission.Request) (permission.Answer, error) {
		return permission.Answer{Decision: permission.Session}, nil
	})
	require.NoError(t, g.Check(t.Context(), permission.Call{Host: "dev", Tool: "write", Path: "/src/notes.txt"}, nil))
	assert.Equal(t, `permissions:
  dev   ask        (--permissions)
  prod  read-only  (user settings /home/a/.pi-remote/settings.json)
rules (deny wins over ask, ask over allow):
  deny   bash(rm -rf *)  (project settings /src/.pi-remote/settings.json)
  allow  bash(git status*)  (user settings /home/a/.pi-remote/settings.json)
  allow  dev:write(/src/notes.txt)  (this session)`, describePolicy(g.Policy(), []string{"dev", "prod"}))

	assert.Equal(t, "permissions:\n  local  auto       (default)\nrules: none", describePolicy(permission.Policy{}, []string{"local"}))
}

// /export writes to the directory pi-remote runs in by default, named
// after the session; a path given is made absolute, so the notice says
// where the file is.
func TestExportPath(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	assert.Equal(t, filepath.Join(dir, "pi-remote-c19108d0.md"), exportPath("", "c19108d0eb2e6db7d828d48fe458f626"))
	assert.Equal(t, filepath.Join(dir, "out", "s.html"), exportPath("out/s.html", "c19108d0"))
	assert.Equal(t, "/tmp/x.md", exportPath("/tmp/x.md", "c1"))
}
