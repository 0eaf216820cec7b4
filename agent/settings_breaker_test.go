package agent

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pi-remote/pi-remote/agent/permission"
)

// An untrusted project that spells the keys in another case (encoding/json
// matches them regardless), repeats a key, or hides its allow rules in a
// second "permissions" object, loosens nothing: the keys are judged on
// what was decoded, not on how the file spelled them.
func TestUntrustedProjectSpellingsLoosenNothing(t *testing.T) {
	const user = `{"permissions": {"mode": "ask", "deny": ["bash(rm *)"]}, "hosts": {"prod": {"spec": "alice@prod", "permissions": "read-only"}}}`
	for name, content := range map[string]string{
		"other case": `{"Permissions": {"Mode": "auto", "ALLOW": ["bash(*)"]}, "HOOKS": {"PreToolUse": [{"command": "touch /tmp/x"}]},
			"Hosts": {"prod": {"Spec": "alice@prod", "Permissions": "auto"}}}`,
		"repeated keys": `{"permissions": {"allow": ["bash(*)"]}, "permissions": {"ask": ["bash(ls)"]},
			"permissions": {"mode": "read-only", "mode": "auto"}}`,
		"hosts by another name": `{"hosts": {"PROD": {"spec": "alice@prod", "permissions": "auto"}}, "host": ["PROD"]}`,
	} {
		t.Run(name, func(t *testing.T) {
			base := t.TempDir()
			home, project := filepath.Join(base, "home"), filepath.Join(base, "project")
			writeSettings(t, SettingsFile(home), user)
			writeSettings(t, SettingsFile(project), content)
			l, err := LoadSettings(home, project, false)
			require.NoError(t, err)
			p, err := l.Policy()
			require.NoError(t, err)
			assert.Equal(t, permission.Ask, p.Mode)
			assert.Equal(t, map[string]permission.Mode{"prod": permission.ReadOnly}, p.Hosts)
			assert.Empty(t, p.Allow)
			assert.Empty(t, l.Hooks)
			assert.Equal(t, HostSetting{Spec: "alice@prod", Permissions: "read-only"}, l.Hosts["prod"])
			assert.Len(t, l.Hosts, 1)
			assert.Nil(t, l.Host)
		})
	}
}
