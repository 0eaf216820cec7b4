package agent

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestSettingsNotice(t *testing.T) {
	assert.Empty(t, LoadedSettings{}.Notice(), "all used")
	assert.Equal(t, "pi-remote: not using the settings in /p/.pi-remote/settings.json: other users may write to it\n",
		LoadedSettings{ProjectFile: "/p/.pi-remote/settings.json", Refused: "other users may write to it"}.Notice())
	l := LoadedSettings{UserFile: "/home/me/.pi-remote/settings.json", ProjectFile: "/p/.pi-remote/settings.json", ProjectDir: `/p "x"`,
		Ignored: []IgnoredKey{{Key: "hooks", Why: "runs commands"}, {Key: "trustedProjects", Why: "only yours", UserOnly: true}}}
	assert.Equal(t, `pi-remote: ignoring settings in /p/.pi-remote/settings.json, as you have not trusted the project /p "x":
  hooks: runs commands
  trustedProjects: only yours
To use them, trust the project: add "/p \"x\"" to "trustedProjects" in /home/me/.pi-remote/settings.json, or pass --trust-project for one run.
`, l.Notice())
	l.Trusted, l.Ignored = true, l.Ignored[1:]
	assert.Equal(t, "pi-remote: ignoring settings in /p/.pi-remote/settings.json:\n  trustedProjects: only yours\n", l.Notice(), "nothing trusting would add")
}

// With no settings file of the user's, the notice names the file to make.
func TestSettingsNoticeWithoutAUserFile(t *testing.T) {
	home, project := t.TempDir(), t.TempDir()
	writeSettings(t, SettingsFile(project), `{"model": "scripted/turns.json"}`)
	l, err := LoadSettings(home, project, false)
	require.NoError(t, err)
	assert.Empty(t, l.UserFile)
	assert.Contains(t, l.Notice(), `"trustedProjects" in `+SettingsFile(home)+`, or pass`)
}
