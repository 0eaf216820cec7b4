package main

import (
	"strings"

	"github.com/spf13/pflag"

	"github.com/pi-remote/pi-remote/agent/permission"
)

// permissionOptions are the flags that set permission modes; they win over
// the settings.
type permissionOptions struct {
	mode      string   // --permissions
	hostModes []string // --host-permissions NAME=MODE
	// fromSettings are the hosts' modes the settings give, by the name
	// the host has in this session (see settings.apply).
	fromSettings map[string]permission.Mode
	settingsFrom map[string]string
	entries      map[string]string // the settings' hosts entry a host is, by its name, when they differ
}

func registerPermissionFlags(fs *pflag.FlagSet, p *permissionOptions) {
	fs.StringVar(&p.mode, "permissions", "", "permission mode: auto (every call runs), ask (write, edit and bash wait for your approval) or read-only (write and edit refused, bash only as allow rules say); default the settings' permissions.mode, else auto")
	fs.StringArrayVar(&p.hostModes, "host-permissions", nil, "a host's own permission mode, NAME=MODE (repeatable; wins over --permissions for that host)")
}

// policy is the permission policy of this command: the settings' rules
// and modes, the flags' modes over them.
func (g *globalOptions) policy() (permission.Policy, error) {
	p, err := g.settings.policy()
	if err != nil {
		return permission.Policy{}, usageErrorf("settings: %v", err)
	}
	hosts := map[string]permission.Mode{}
	from := map[string]string{}
	for name, m := range g.perm.fromSettings {
		hosts[name], from[name] = m, g.perm.settingsFrom[name]
	}
	if g.perm.mode != "" {
		m, err := permission.ParseMode(g.perm.mode)
		if err != nil {
			return permission.Policy{}, usageErrorf("--permissions: %v", err)
		}
		p.Mode, p.ModeFrom = m, "--permissions"
	}
	for _, v := range g.perm.hostModes {
		name, mode, ok := strings.Cut(v, "=")
		if !ok || name == "" {
			return permission.Policy{}, usageErrorf("--host-permissions %q: want NAME=MODE", v)
		}
		m, err := permission.ParseMode(mode)
		if err != nil {
			return permission.Policy{}, usageErrorf("--host-permissions %q: %v", v, err)
		}
		hosts[name], from[name] = m, "--host-permissions"
	}
	p.Hosts, p.HostsFrom, p.Aliases = hosts, from, g.perm.entries
	return p, nil
}

// gate is the permission gate of this command's calls, over the hosts it
// opened: a host named in --host-permissions must be one of them.
func (g *globalOptions) gate(hostNames []string) (*permission.Gate, error) {
	p, err := g.policy()
	if err != nil {
		return nil, err
	}
	for _, v := range g.perm.hostModes {
		name, _, _ := strings.Cut(v, "=")
		found := false
		for _, h := range hostNames {
			found = found || h == name
		}
		if !found {
			return nil, usageErrorf("--host-permissions %q: no host is named %q (hosts: %s)", v, name, strings.Join(hostNames, ", "))
		}
	}
	return permission.NewGate(p), nil
}
