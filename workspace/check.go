package workspace

import (
	"context"
	"fmt"
	"github.com/pi-remote/pi-remote/agent/permission"
	"time"

	"github.com/pi-remote/pi-remote/mcpclient"
	"github.com/pi-remote/pi-remote/ops/ssh"
)

// Report is what a host offers pi-remote: how it was reached, what it
// has, its round-trip time (what `pi-remote check` shows).
type Report struct {
	Name     string   `json:"name"`
	Host     string   `json:"host"`
	Via      []string `json:"via,omitempty"`
	HostKey  string   `json:"hostKey,omitempty"`
	Auth     string   `json:"auth,omitempty"`
	SFTP     bool     `json:"sftp"`
	Setsid   bool     `json:"setsid"`
	Home     string   `json:"home,omitempty"`
	Bash     bool     `json:"bash"`
	Rg       bool     `json:"rg"`
	Fd       string   `json:"fd,omitempty"`
	Helpers  []string `json:"helpers,omitempty"`
	RTTMilli float64  `json:"rttMs"`
	Error    string   `json:"error,omitempty"` // why the host could not be reached
	// Permissions is the host's permission mode and the rules that apply
	// there (set by WithPolicy).
	Permissions *PermissionReport `json:"permissions,omitempty"`
	// MCPServers are the session's MCP servers (check puts them in the
	// first host's report).
	MCPServers []mcpclient.Status `json:"mcpServers,omitempty"`
}

// PermissionReport is a host's permission mode and the rules that apply
// there, each with where it came from.
type PermissionReport struct {
	Mode  string       `json:"mode"`
	From  string       `json:"from"`
	Rules []RuleReport `json:"rules,omitempty"`
}

// RuleReport is one rule in force.
type RuleReport struct {
	Kind string `json:"kind"` // deny, ask or allow
	Rule string `json:"rule"`
	From string `json:"from"`
}

// PolicyOn is what policy p means on host: its mode, and the rules for it
// (deny, then ask, then allow: the order they are weighed in).
func PolicyOn(p permission.Policy, host string) *PermissionReport {
	r := &PermissionReport{Mode: string(p.HostMode(host)), From: p.ModeFrom}
	if _, own := p.Hosts[host]; own {
		r.From = p.HostsFrom[host]
	}
	if r.From == "" {
		r.From = "default"
	}
	for _, l := range []struct {
		kind  string
		rules []permission.Rule
	}{{"deny", p.Deny}, {"ask", p.Ask}, {"allow", p.Allow}} {
		for _, rule := range l.rules {
			if p.ForHost(rule, host) {
				r.Rules = append(r.Rules, RuleReport{Kind: l.kind, Rule: rule.Text, From: rule.From})
			}
		}
	}
	return r
}

// Check connects to every host and reports it. With one host, a failure
// is the error and there is no report; with several, a host that cannot
// be reached is reported so (Report.Error) along with the others, and the
// first such failure is the error, a *ConnectionError. Any other failure
// is the error, with no reports.
func (hs Hosts) Check(ctx context.Context) ([]Report, error) {
	var reports []Report
	var unreachable error
	for _, h := range hs {
		r, err := h.check(ctx)
		if err != nil && (len(hs) == 1 || !IsConnectionFailure(err)) {
			return nil, err
		}
		if err != nil {
			r = Report{Name: h.Name, Host: h.Where(), Error: err.Error()}
			if unreachable == nil {
				unreachable = &ConnectionError{Err: fmt.Errorf("host %s: %w", h.Name, err)}
			}
		}
		reports = append(reports, r)
	}
	return reports, unreachable
}

// check reaches h and reports it.
func (h *Host) check(ctx context.Context) (Report, error) {
	r := Report{Name: h.Name, Host: "local"}
	if h.SSH != nil {
		info, err := h.SSH.Connect(ctx)
		if err != nil {
			return r, &ConnectionError{Err: err}
		}
		r = reportFrom(info)
		r.Name = h.Name
		// The best of a few round trips: the first may pay for warm-up.
		best := time.Duration(0)
		for range 5 {
			d, err := h.SSH.Ping(ctx)
			if err != nil {
				return r, &ConnectionError{Err: err}
			}
			if best == 0 || d < best {
				best = d
			}
		}
		r.RTTMilli = float64(best.Microseconds()) / 1000
	}
	caps, err := h.Env.Capabilities(ctx)
	if err != nil {
		return r, HostError(err)
	}
	r.Home, r.Bash, r.Rg, r.Fd = caps.Home, caps.Bash != "", caps.Rg != "", caps.Fd
	return r, nil
}

func reportFrom(info ssh.Info) Report {
	r := Report{
		Host:    info.Config.Alias + " (" + info.Config.User + "@" + info.Config.Addr() + ")",
		HostKey: info.HostKey, Auth: info.Auth, SFTP: info.SFTP, Setsid: info.Setsid, Helpers: info.Tools,
	}
	for _, j := range info.Config.Jump {
		r.Via = append(r.Via, j.String())
	}
	return r
}
