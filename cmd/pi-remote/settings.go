package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/pi-remote/pi-remote/agent"
)

// settings are agent.Settings as the commands use them.
type settings struct {
	agent.Settings
	// projectHost says that the project's settings chose the host and
	// were not applied (see apply).
	projectHost bool
}

// loadSettings reads the user's and the project's settings files (the
// project is the directory pi-remote runs in) and says on warn which keys
// of an untrusted project's file it left out, and why.
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
	if l.Refused != "" {
		fmt.Fprintf(warn, "pi-remote: not using the settings in %s: %s\n", l.ProjectFile, l.Refused)
	}
	if len(l.Ignored) > 0 {
		fmt.Fprint(warn, ignoredNotice(l, agent.SettingsFile(home)))
	}
	s := settings{Settings: l.Settings}
	for _, k := range l.Ignored {
		s.projectHost = s.projectHost || k.Key == "host"
	}
	return s, nil
}

// ignoredNotice tells the user which keys of the project's settings were
// left out, why, and how to trust the project (userFile is where the list
// of trusted projects lives).
func ignoredNotice(l agent.LoadedSettings, userFile string) string {
	var b strings.Builder
	if l.Trusted {
		fmt.Fprintf(&b, "pi-remote: ignoring settings in %s:\n", l.ProjectFile)
	} else {
		fmt.Fprintf(&b, "pi-remote: ignoring settings in %s, as you have not trusted the project %s:\n", l.ProjectFile, l.ProjectDir)
	}
	trustable := false
	for _, k := range l.Ignored {
		fmt.Fprintf(&b, "  %s: %s\n", k.Key, k.Why)
		trustable = trustable || !k.UserOnly
	}
	if trustable {
		fmt.Fprintf(&b, "To use them, trust the project: add %s to \"trustedProjects\" in %s, or pass --trust-project for one run.\n", jsonString(l.ProjectDir), userFile)
	}
	return b.String()
}

// jsonString is s as a JSON string, to paste into a settings file.
func jsonString(s string) string {
	b, err := json.Marshal(s)
	if err != nil { // not for a string; Quote is close enough
		return strconv.Quote(s)
	}
	return string(b)
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
		return cmd.Flags().Set(name, value)
	}
	model := s.Model
	if os.Getenv("PI_REMOTE_MODEL") != "" {
		model = ""
	}
	for name, value := range map[string]string{
		"model": model, "base-url": s.BaseURL, "thinking": s.Thinking,
		"tools": strings.Join(s.Tools, ","), "reattach-timeout": s.ReattachTimeout,
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
	for i, v := range g.host.Hosts {
		g.host.Hosts[i] = s.expandHost(v)
	}
	return nil
}

// expandHost turns NAME, or NAME=ALIAS, where the settings name a host,
// into NAME=SPEC.
func (s settings) expandHost(v string) string {
	name, spec, ok := strings.Cut(v, "=")
	if !ok {
		spec = name
	}
	if full, found := s.Hosts[spec]; found {
		return name + "=" + full
	}
	return v
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
