package permission

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"strconv"
	"strings"
	"sync"
)

// A Request is a call that waits for a person's decision.
type Request struct {
	ID     string // unique in the session
	CallID string // the loop's id of the call ("" when unknown)
	Host   string
	Tool   string
	Args   json.RawMessage
	// Command is bash's line; Path the canonical path of a path tool's
	// target.
	Command, Path string
	// Reason says why the call needs approval ("host prod asks before
	// bash", "rule `bash(git push*)` asks for approval").
	Reason string
}

// Answers a person may give.
const (
	Once    = "once"    // run this call
	Session = "session" // run it, and identical calls for the rest of the session
	Deny    = "deny"    // refuse it
)

// An Answer is a person's decision on a Request.
type Answer struct {
	Decision string // Once, Session or Deny
	Reason   string // for Deny, optional: what the model is told
}

// ParseDecision reads a decision as front ends write it.
func ParseDecision(s string) (string, error) {
	switch d := strings.ToLower(strings.TrimSpace(s)); d {
	case Once, Session, Deny:
		return d, nil
	case "always":
		return Session, nil
	case "reject":
		return Deny, nil
	}
	return "", fmt.Errorf("decision %q: want once, session or deny", s)
}

// An Asker asks a person about a call and waits for the answer; it
// returns ctx's error when the call is abandoned first.
type Asker func(ctx context.Context, r Request) (Answer, error)

// Gate applies a policy to calls: it decides, asks a person through its
// Asker when the policy says to, and keeps the rules a person added
// ("always for this session"). Safe for concurrent use.
type Gate struct {
	mu     sync.Mutex
	policy Policy
	asker  Asker
	seq    int
}

// NewGate is a gate applying p. Without an Asker (SetAsker), a call that
// needs a person's decision is refused, saying so: front ends with no
// person (print and JSON modes, the MCP server) fail closed.
func NewGate(p Policy) *Gate { return &Gate{policy: p} }

// SetAsker sets how the gate asks a person (nil: nobody to ask).
func (g *Gate) SetAsker(a Asker) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.asker = a
}

// Policy is the policy in force, with the rules added in this session.
func (g *Gate) Policy() Policy {
	g.mu.Lock()
	defer g.mu.Unlock()
	p := g.policy
	p.Allow = append([]Rule(nil), p.Allow...)
	return p
}

// Quiet says whether no call of tool on host can be asked about or
// refused (the mode runs it and no rule names the tool there): the gate
// then needs no canonical path, and costs nothing. readOnly is the tool's
// Call.ReadOnly.
func (g *Gate) Quiet(host, tool string, readOnly bool) bool {
	if g == nil {
		return true
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	tool = strings.ToLower(tool)
	mode := g.policy.HostMode(host)
	if !readOnly && (mode == ReadOnly || mode == Ask) {
		return false
	}
	for _, rules := range [][]Rule{g.policy.Deny, g.policy.Ask} {
		for _, r := range rules {
			if g.policy.applies(r, host, tool) {
				return false
			}
		}
	}
	return true
}

// Denied is the error of a refused call: the model reads it as the
// call's result.
type Denied struct{ Message string }

func (d *Denied) Error() string { return d.Message }

// Check decides c (whose arguments are args), asking a person when the
// policy says to; nil lets the call run, a *Denied refuses it.
func (g *Gate) Check(ctx context.Context, c Call, args json.RawMessage) error {
	g.mu.Lock()
	d := g.policy.Decide(c)
	asker := g.asker
	g.seq++
	id := "approval-" + strconv.Itoa(g.seq)
	g.mu.Unlock()
	switch d.Verdict {
	case Run:
		return nil
	case Refuse:
		return &Denied{Message: "Permission denied: " + d.Reason + "."}
	}
	if asker == nil {
		return &Denied{Message: fmt.Sprintf("Permission needed: %s, and nobody is here to approve it (this mode runs without a person). %s", d.Reason, suggestion(c))}
	}
	a, err := asker(ctx, Request{ID: id, CallID: c.CallID, Host: c.Host, Tool: c.Tool, Args: args, Command: c.Command, Path: c.Path, Reason: d.Reason})
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return &Denied{Message: "Permission needed: " + d.Reason + ", and asking failed: " + err.Error() + "."}
	}
	switch a.Decision {
	case Once:
		return nil
	case Session:
		g.allowForSession(c)
		return nil
	}
	msg := "Denied by the user"
	if r := strings.TrimSpace(a.Reason); r != "" {
		msg += ": " + r
	} else {
		msg += "."
	}
	return &Denied{Message: msg}
}

// SetHostMode makes m host's own mode from now on: a person's choice in a
// front end (the editor's mode selector), said by from ("the editor").
// Calls decided after it follow m; the rules stay as they are.
func (g *Gate) SetHostMode(host string, m Mode, from string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	hosts := make(map[string]Mode, len(g.policy.Hosts)+1)
	maps.Copy(hosts, g.policy.Hosts)
	froms := make(map[string]string, len(g.policy.HostsFrom)+1)
	maps.Copy(froms, g.policy.HostsFrom)
	hosts[host], froms[host] = m, from
	g.policy.Hosts, g.policy.HostsFrom = hosts, froms
}

// NewSession forgets the rules a person added with "always for this
// session": a front end that switches to another session (a new one, a
// resumed one, a fork) calls it, and the next session asks anew.
func (g *Gate) NewSession() {
	g.mu.Lock()
	defer g.mu.Unlock()
	var kept []Rule
	for _, r := range g.policy.Allow {
		if !r.exact {
			kept = append(kept, r)
		}
	}
	g.policy.Allow = kept
}

// allowForSession adds a rule that lets calls identical to c through: the
// same host, tool, and bash line or path.
func (g *Gate) allowForSession(c Call) {
	r := Rule{Host: c.Host, Tool: strings.ToLower(c.Tool), From: "this session", exact: true}
	switch {
	case r.Tool == "bash":
		r.Pattern = c.Command
	case c.Path != "":
		r.Pattern = c.Path
	}
	r.Text = r.Tool
	if r.Host != "" {
		r.Text = r.Host + ":" + r.Tool
	}
	if r.Pattern != "" {
		r.Text += "(" + r.Pattern + ")"
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.policy.Allow = append(g.policy.Allow, r)
}

// suggestion says which allow rule would let c run without a person.
func suggestion(c Call) string {
	tool := strings.ToLower(c.Tool)
	rule := tool
	switch {
	case tool == "bash":
		if cmds, _ := Commands(c.Command); len(cmds) > 0 && len(cmds[0].Words) > 0 {
			rule = "bash(" + cmds[0].Words[0] + " *)"
		}
	case c.Path != "":
		rule = tool + "(" + c.Path + ")"
	}
	return fmt.Sprintf("An allow rule such as `%s` in the user's settings (\"permissions\": {\"allow\": [...]}) would let it run.", rule)
}
