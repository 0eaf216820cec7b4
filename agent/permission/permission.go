// Package permission decides whether a tool call runs, waits for a
// person, or is refused: the permission mode of the call's host, and
// allow, ask and deny rules in the shape Claude Code's settings use
// ("bash(git status*)", "edit(src/**)", "prod:bash(systemctl status *)").
// It decides only; the agent asks the person and reports the refusal.
package permission

import (
	"fmt"
	"path"
	"strings"
)

// A Mode is a host's permission mode.
type Mode string

const (
	// Auto runs every call (Pi's default).
	Auto Mode = "auto"
	// Ask has calls that change something (write, edit, bash, and any
	// tool not read-only: Call.ReadOnly) wait for a person's decision;
	// reads run.
	Ask Mode = "ask"
	// ReadOnly refuses write, edit and every other tool not read-only,
	// and bash unless a rule allows the command.
	ReadOnly Mode = "read-only"
)

// ParseMode parses a mode as flags and settings write it.
func ParseMode(s string) (Mode, error) {
	switch m := Mode(strings.ToLower(strings.TrimSpace(s))); m {
	case Auto, Ask, ReadOnly:
		return m, nil
	case "readonly", "read_only":
		return ReadOnly, nil
	}
	return "", fmt.Errorf("permission mode %q: want auto, ask or read-only", s)
}

// isMCP says whether tool is an MCP server's (mcp__SERVER__TOOL).
func isMCP(tool string) bool { return strings.HasPrefix(tool, "mcp__") }

// matchTool says whether a rule's tool names tool: the same name; for MCP
// tools also a server's prefix ("mcp__db" is every tool of server db) or
// a glob ("mcp__db__*", "mcp__*").
func matchTool(rule, tool string) bool {
	if rule == tool {
		return true
	}
	if !isMCP(rule) || !isMCP(tool) {
		return false
	}
	if strings.Contains(rule, "*") {
		ok, _ := path.Match(rule, tool)
		return ok
	}
	return strings.HasPrefix(tool, rule+"__")
}

// A Rule is one allow, ask or deny rule: [HOST:]TOOL[(PATTERN)].
type Rule struct {
	Text    string // as written
	Host    string // "": every host
	Tool    string // lower case: bash, write, edit, read, grep, find, ls, or an extension's
	Pattern string // "": every call of Tool
	// From says where the rule came from ("user settings", "this
	// session"…), for the person; it decides nothing.
	From string
	// exact, for a rule a person added by answering "always for this
	// session": the pattern is a whole bash line, or a path, matched as
	// written (no glob).
	exact bool
}

// ParseRule parses a rule. The tool's name is taken in any case
// ("Bash(npm test)" as Claude Code writes it); a host prefix is a name
// of letters, digits, "-", "_" and ".".
func ParseRule(text string) (Rule, error) {
	r := Rule{Text: text}
	s := strings.TrimSpace(text)
	if open := strings.IndexByte(s, '('); open >= 0 {
		if !strings.HasSuffix(s, ")") {
			return r, fmt.Errorf("permission rule %q: no closing parenthesis", text)
		}
		r.Pattern = strings.TrimSpace(s[open+1 : len(s)-1])
		s = s[:open]
	}
	if host, tool, ok := strings.Cut(s, ":"); ok {
		r.Host, s = strings.TrimSpace(host), tool
		if r.Host == "" || strings.Trim(r.Host, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.") != "" {
			return r, fmt.Errorf("permission rule %q: %q is no host name", text, r.Host)
		}
	}
	r.Tool = strings.ToLower(strings.TrimSpace(s))
	if r.Tool == "" || strings.ContainsAny(r.Tool, " \t()") {
		return r, fmt.Errorf("permission rule %q: want TOOL or TOOL(PATTERN), optionally after HOST:", text)
	}
	if isMCP(r.Tool) && r.Pattern != "" {
		return r, fmt.Errorf("permission rule %q: an MCP tool's rule takes no pattern: name the tool (mcp__SERVER__TOOL), the server (mcp__SERVER) or a glob (mcp__SERVER__*)", text)
	}
	if _, err := path.Match(r.Tool, ""); err != nil {
		return r, fmt.Errorf("permission rule %q: %v", text, err)
	}
	return r, nil
}

// Policy is what is in force: the session's mode, each host's own mode,
// and the rules.
type Policy struct {
	Mode  Mode            // the session's ("" is Auto)
	Hosts map[string]Mode // a host's own mode, winning over Mode
	// ModeFrom and HostsFrom say where the modes came from, for the
	// person; they decide nothing.
	ModeFrom  string
	HostsFrom map[string]string
	// Aliases name, for a host whose session name is not the name of the
	// settings' hosts entry it is ("--host x=prod"), that entry: rules
	// written for the entry's name ("prod:bash(…)") are for it too, as
	// its mode is.
	Aliases map[string]string
	Allow   []Rule
	Ask     []Rule
	Deny    []Rule
}

// HostMode is the mode in force on host.
func (p Policy) HostMode(host string) Mode {
	if m, ok := p.Hosts[host]; ok && m != "" {
		return m
	}
	if p.Mode == "" {
		return Auto
	}
	return p.Mode
}

// A Call is a tool call as rules see it.
type Call struct {
	Host string
	Tool string
	// ReadOnly says that the tool changes nothing on its host
	// (tools.Definition.ReadOnly: read, grep, find, ls). A tool that does
	// not say so is taken to change its host: a read-only host refuses it,
	// as it refuses write and edit, and an asking host asks. (bash is
	// decided on its command line.)
	ReadOnly bool
	// Command is bash's command line.
	Command string
	// Path is the canonical path of a path tool's target (absolute,
	// slash-separated: the key the host's mutation queue uses), Cwd the
	// host's canonical working directory, against which relative
	// patterns are read.
	Path, Cwd string
	// CallID is the loop's id of the call, for the person asked about it
	// (Request.CallID); it decides nothing.
	CallID string
}

// Verdict is what happens to a call.
type Verdict int

const (
	Run       Verdict = iota // the call runs
	AskPerson                // the call waits for a person's decision
	Refuse                   // the call is refused: an error result
)

func (v Verdict) String() string {
	return [...]string{"run", "ask", "deny"}[v]
}

// A Decision is a verdict and why.
type Decision struct {
	Verdict Verdict
	// Rule is the rule that decided ("" when the mode did).
	Rule string
	// Reason says why, for the model and the person.
	Reason string
}

// Decide decides a call: a deny rule refuses it; read-only refuses a tool
// that changes its host (not Call.ReadOnly: write, edit, a program's own
// tool), and bash unless allow rules let the line through; a person's
// "always for this session" answer lets an identical call run; then an
// ask rule asks, whatever the mode; then the host's mode decides, an allow
// rule letting through what it would ask for. A bash line is decided
// command by command (Commands): any command denied denies the line; a
// rule allows the line only when it allows every command of it, and the
// line could be read whole.
func (p Policy) Decide(c Call) Decision {
	mode := p.HostMode(c.Host)
	tool := strings.ToLower(c.Tool)
	if r, ok := p.first(p.Deny, c, tool); ok {
		return Decision{Refuse, r.Text, "denied by rule `" + r.Text + "`"}
	}
	if mode == ReadOnly && tool != "bash" && !c.ReadOnly {
		return Decision{Refuse, "", where(c) + " is read-only: " + tool + " is refused"}
	}
	// A person's "always for this session" answered this very call.
	if r, ok := p.approved(c, tool); ok {
		return Decision{Run, r.Text, ""}
	}
	allowed, rule := p.allowed(c, tool)
	// (Before the ask rules: asking is looser than read-only's refusal,
	// and ask rules may come from a project the user has not trusted.)
	if mode == ReadOnly && tool == "bash" && !allowed {
		return Decision{Refuse, "", "host " + c.Host + " is read-only: bash runs only commands an allow rule names"}
	}
	if r, ok := p.first(p.Ask, c, tool); ok {
		return Decision{AskPerson, r.Text, "rule `" + r.Text + "` asks for approval"}
	}
	switch {
	case mode == Ask && !c.ReadOnly && !allowed:
		return Decision{AskPerson, "", where(c) + " asks before " + tool}
	}
	return Decision{Run, rule, ""}
}

// where names the call's host for a reason: an MCP server of this
// machine has none, and the session's mode decides its calls.
func where(c Call) string {
	if c.Host == "" {
		return "the session"
	}
	return "host " + c.Host
}

// approved is the rule a person added for calls identical to c, if any.
func (p Policy) approved(c Call, tool string) (Rule, bool) {
	for _, r := range p.Allow {
		if !r.exact || !p.applies(r, c.Host, tool) {
			continue
		}
		switch {
		case r.Pattern == "",
			tool == "bash" && r.Pattern == c.Command,
			tool != "bash" && c.Path != "" && r.Pattern == c.Path:
			return r, true
		}
	}
	return Rule{}, false
}

// first is the first rule of rules that matches c (for deny and ask: any
// command of a bash line, and its wrapped forms, see candidates).
func (p Policy) first(rules []Rule, c Call, tool string) (Rule, bool) {
	var cmds []Command
	if tool == "bash" {
		cmds, _ = Commands(c.Command)
	}
	for _, r := range rules {
		if !p.applies(r, c.Host, tool) {
			continue
		}
		if r.Pattern == "" {
			return r, true
		}
		if tool == "bash" {
			for _, cmd := range cmds {
				for _, text := range candidates(cmd.Words) {
					// (Also with arguments to come: "xargs rm -rf"
					// is "rm -rf *".)
					if matchCommand(r.Pattern, text) || matchCommand(r.Pattern, text+" ") {
						return r, true
					}
				}
			}
			continue
		}
		if c.Path != "" && matchPath(r.Pattern, c.Path, c.Cwd) {
			return r, true
		}
	}
	return Rule{}, false
}

// allowed says whether allow rules let c through, and the first that
// did.
func (p Policy) allowed(c Call, tool string) (bool, string) {
	if tool != "bash" {
		for _, r := range p.Allow {
			if !r.exact && p.applies(r, c.Host, tool) && (r.Pattern == "" || c.Path != "" && matchPath(r.Pattern, c.Path, c.Cwd)) {
				return true, r.Text
			}
		}
		return false, ""
	}
	cmds, complete := Commands(c.Command)
	if len(cmds) == 0 {
		return false, ""
	}
	// A bare bash rule allows every line.
	for _, r := range p.Allow {
		if !r.exact && p.applies(r, c.Host, tool) && r.Pattern == "" {
			return true, r.Text
		}
	}
	if !complete {
		return false, ""
	}
	first := ""
	for _, cmd := range cmds {
		if cmd.Writes {
			return false, ""
		}
		ok := false
		for _, r := range p.Allow {
			if !r.exact && p.applies(r, c.Host, tool) && matchCommand(r.Pattern, cmd.Text) {
				ok = true
				if first == "" {
					first = r.Text
				}
				break
			}
		}
		if !ok {
			return false, ""
		}
	}
	return true, first
}

// applies says whether rule r is for tool on host: a rule without a host
// is for every host; one with a host is for the host of that name, or the
// one that is that settings entry under another name (Aliases).
func (p Policy) applies(r Rule, host, tool string) bool {
	return matchTool(r.Tool, tool) && (r.Host == "" || r.Host == host || r.Host == p.Aliases[host])
}

// ForHost says whether rule r is for host, whatever the tool.
func (p Policy) ForHost(r Rule, host string) bool {
	return r.Host == "" || r.Host == host || r.Host == p.Aliases[host]
}

// matchCommand matches a command against a bash rule's pattern: "*"
// stands for any text (spaces too), and a pattern ending ":*" (Claude
// Code's prefix form) matches the command before it, alone or followed by
// a space and anything. Blanks in the pattern match one blank.
func matchCommand(pattern, cmd string) bool {
	pattern = strings.Join(strings.Fields(pattern), " ")
	if prefix, ok := strings.CutSuffix(pattern, ":*"); ok {
		return cmd == prefix || strings.HasPrefix(cmd, prefix+" ")
	}
	return globText(pattern, cmd)
}

// globText matches s against pattern, where "*" stands for any text.
func globText(pattern, s string) bool {
	parts := strings.Split(pattern, "*")
	if len(parts) == 1 {
		return pattern == s
	}
	if !strings.HasPrefix(s, parts[0]) {
		return false
	}
	s = s[len(parts[0]):]
	for _, part := range parts[1 : len(parts)-1] {
		i := strings.Index(s, part)
		if i < 0 {
			return false
		}
		s = s[i+len(part):]
	}
	return strings.HasSuffix(s, parts[len(parts)-1])
}

// wrappers run the command after them (and their options): a deny or ask
// rule sees through them, an allow rule does not.
var wrappers = map[string]bool{
	"sudo": true, "doas": true, "env": true, "command": true, "builtin": true, "exec": true,
	"nohup": true, "nice": true, "ionice": true, "time": true, "timeout": true, "xargs": true,
	"setsid": true, "stdbuf": true, "chrt": true, "taskset": true,
}

// candidates are the forms of a command a deny or ask rule is matched
// against: as written, and after each leading variable assignment, or
// wrapper with its options (words starting with "-", and the number
// timeout and nice take), is taken off.
func candidates(words []string) []string {
	var out []string
	for _, f := range unwrapped(words) {
		out = append(out, strings.Join(f, " "))
	}
	return out
}

// unwrapped are the forms of candidates, as words.
func unwrapped(words []string) [][]string {
	out := [][]string{words}
	for len(words) > 0 {
		w := words[0]
		switch {
		case isAssignment(w):
			words = words[1:]
		case wrappers[path.Base(w)]:
			words = words[1:]
			for len(words) > 0 && (strings.HasPrefix(words[0], "-") || isNumber(words[0]) || isAssignment(words[0])) {
				words = words[1:]
			}
		case path.Base(w) != w:
			// /bin/rm is rm.
			words = append([]string{path.Base(w)}, words[1:]...)
		default:
			return out
		}
		if len(words) > 0 {
			out = append(out, words)
		}
	}
	return out
}

func isAssignment(w string) bool {
	name, _, ok := strings.Cut(w, "=")
	if !ok || name == "" {
		return false
	}
	for i, r := range name {
		if r != '_' && (r < 'a' || r > 'z') && (r < 'A' || r > 'Z') && (i == 0 || r < '0' || r > '9') {
			return false
		}
	}
	return true
}

func isNumber(w string) bool {
	return w != "" && strings.Trim(w, "0123456789.smhd") == ""
}

// matchPath matches a canonical path against a path rule's pattern, a
// glob whose "**" stands for any number of directories and "*" for any
// text within one name; a pattern starting "**" matches anywhere, another
// relative one is read against cwd. "~" is not expanded: patterns name
// paths as the host sees them.
func matchPath(pattern, p, cwd string) bool {
	if strings.HasPrefix(pattern, "**") {
		pattern = "/" + pattern
	}
	if !strings.HasPrefix(pattern, "/") {
		if cwd == "" {
			return false
		}
		pattern = strings.TrimSuffix(cwd, "/") + "/" + strings.TrimPrefix(pattern, "./")
	}
	return globPath(strings.Split(path.Clean(pattern), "/"), strings.Split(path.Clean(p), "/"))
}

func globPath(pat, name []string) bool {
	for len(pat) > 0 {
		if pat[0] == "**" {
			for k := 0; k <= len(name); k++ {
				if globPath(pat[1:], name[k:]) {
					return true
				}
			}
			return false
		}
		if len(name) == 0 {
			return false
		}
		if ok, err := path.Match(pat[0], name[0]); err != nil || !ok {
			return false
		}
		pat, name = pat[1:], name[1:]
	}
	return len(name) == 0
}
