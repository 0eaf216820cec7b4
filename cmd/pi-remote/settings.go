package main

import (
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/pi-remote/pi-remote/agent"
	"github.com/pi-remote/pi-remote/agent/permission"
)

// settings are agent.Settings as the commands use them.
type settings struct {
	agent.Settings
	loaded agent.LoadedSettings
	// projectHost says that the project's settings chose the host and
	// were not applied (see apply).
	projectHost bool
}

// loadSettings reads the user's and the project's settings files (the
// project is the directory pi-remote runs in) and says on warn what of the
// project's file it left out, and why.
func loadSettings(trustProject bool, warn io.Writer) (settings, error) {
	home, err := os.UserHomeDir()
	if err != nil {
		return settings{}, nil // no home: no user settings
	}
	wd, err := os.Getwd()
	if err != nil {
		return settings{}, err
	}
	l, err := agent.LoadSettings(home, wd, trustProject)
	if err != nil {
		return settings{}, err
	}
	fmt.Fprint(warn, l.Notice())
	s := settings{Settings: l.Settings, loaded: l}
	for _, k := range l.Ignored {
		s.projectHost = s.projectHost || k.Key == "host"
	}
	return s, nil
}

func (s settings) compaction() agent.CompactionSettings {
	if s.Compaction == nil {
		return agent.CompactionSettings{}
	}
	return *s.Compaction
}

// apply gives the flags of cmd that the command line left unset their
// values from the settings (flags win over settings; PI_REMOTE_MODEL, set,
// wins over the settings' model), and turns host names from the settings
// into their specs.
func (s settings) apply(cmd *cobra.Command, g *globalOptions) error {
	set := func(name, value string) error {
		f := cmd.Flags().Lookup(name)
		if f == nil || f.Changed || value == "" {
			return nil
		}
		g.fromSettings = append(g.fromSettings, name)
		return cmd.Flags().Set(name, value)
	}
	model := s.Model
	if os.Getenv("PI_REMOTE_MODEL") != "" {
		model = ""
	}
	if f := cmd.Flags().Lookup("model"); f != nil && !f.Changed {
		switch {
		case model != "":
			g.modelSource = `"model" in ` + s.loaded.ModelFile()
		case os.Getenv("PI_REMOTE_MODEL") != "":
			g.modelSource = "PI_REMOTE_MODEL"
		}
	}
	for name, value := range map[string]string{
		"model": model, "base-url": s.BaseURL, "thinking": s.Thinking,
		"tools": strings.Join(s.Tools, ","), "reattach-timeout": s.ReattachTimeout,
		"models": strings.Join(s.EnabledModels, ","),
	} {
		if err := set(name, value); err != nil {
			return usageErrorf("settings: %s: %v", name, err)
		}
	}
	if f := cmd.Flags().Lookup("host"); f != nil && !f.Changed {
		if s.projectHost && len(s.Host) == 0 {
			// Running here instead of where the project meant would be a
			// surprise the warning above might not prevent.
			return usageErrorf("settings: the project's settings choose the host to work on, and were not applied (see above): trust the project, or pass --host (--host local for this machine)")
		}
		for _, h := range s.Host {
			if err := f.Value.Set(h); err != nil {
				return usageErrorf("settings: host: %v", err)
			}
		}
	}
	g.perm.fromSettings, g.perm.settingsFrom, g.perm.entries = map[string]permission.Mode{}, map[string]string{}, map[string]string{}
	for i, v := range g.host.Hosts {
		var entry string
		g.host.Hosts[i], entry = s.expandHost(v)
		name, _, _ := strings.Cut(g.host.Hosts[i], "=")
		if entry != "" && entry != name {
			g.perm.entries[name] = entry
		}
		if h, ok := s.Hosts[entry]; ok && h.Permissions != "" {
			m, err := permission.ParseMode(h.Permissions)
			if err != nil {
				return usageErrorf("settings: hosts: %s: %v", entry, err)
			}
			g.perm.fromSettings[name] = m
			g.perm.settingsFrom[name] = "settings hosts." + entry
		}
	}
	return nil
}

// policy is the permission policy the settings files give.
func (s settings) policy() (permission.Policy, error) {
	if s.loaded.UserFile == "" && s.loaded.ProjectFile == "" {
		return s.Settings.Policy()
	}
	return s.loaded.Policy()
}

// expandHost turns NAME, or NAME=ALIAS, where the settings name a host,
// into NAME=SPEC, and says which entry of the settings' hosts it is
// ("" when none): the one named, or the one whose remote spec is written
// as given (its permission mode follows the machine, whatever the name;
// "local" is told apart by name only).
func (s settings) expandHost(v string) (string, string) {
	name, spec, ok := strings.Cut(v, "=")
	if !ok {
		spec = name
	}
	if h, found := s.Hosts[spec]; found {
		return name + "=" + h.Spec, spec
	}
	for entry, h := range s.Hosts {
		if h.Spec == spec && spec != "local" {
			return v, entry
		}
	}
	return v, ""
}

// usesSettings says whether cmd is one the settings are for (not version
// or help: a broken settings file must not stop those).
func usesSettings(cmd *cobra.Command) bool {
	uses := false
	cmd.Flags().VisitAll(func(f *pflag.Flag) {
		if f.Name == "host" || f.Name == "model" {
			uses = true
		}
	})
	return uses && cmd.Name() != "version" && cmd.Name() != "help"
}
