package permission

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func rules(t *testing.T, texts ...string) []Rule {
	t.Helper()
	var out []Rule
	for _, s := range texts {
		r, err := ParseRule(s)
		require.NoError(t, err, s)
		out = append(out, r)
	}
	return out
}

func TestParseRule(t *testing.T) {
	r, err := ParseRule("prod:Bash(systemctl status *)")
	require.NoError(t, err)
	assert.Equal(t, Rule{Text: "prod:Bash(systemctl status *)", Host: "prod", Tool: "bash", Pattern: "systemctl status *"}, r)
	r, err = ParseRule("write")
	require.NoError(t, err)
	assert.Equal(t, Rule{Text: "write", Tool: "write"}, r)
	r, err = ParseRule("edit(src/**)")
	require.NoError(t, err)
	assert.Equal(t, "src/**", r.Pattern)
	for _, bad := range []string{"", "bash(git", "a b:bash(x)", ":bash(x)", "(x)", "prod:"} {
		_, err := ParseRule(bad)
		assert.Error(t, err, "%q", bad)
	}
}

func TestParseMode(t *testing.T) {
	for in, want := range map[string]Mode{"auto": Auto, "ASK": Ask, "read-only": ReadOnly, "readonly": ReadOnly} {
		m, err := ParseMode(in)
		require.NoError(t, err, in)
		assert.Equal(t, want, m)
	}
	_, err := ParseMode("yolo")
	assert.ErrorContains(t, err, "want auto, ask or read-only")
}

// mode × tool × rule → run / ask / deny.
func TestDecide(t *testing.T) {
	p := Policy{
		Mode:  Ask,
		Hosts: map[string]Mode{"prod": ReadOnly, "lab": Auto},
		Allow: rules(t, "bash(git status*)", "bash(go test *)", "bash(npm run test:*)", "edit(src/**)", "prod:bash(systemctl status *)", "write(/tmp/*)", "changelog(/tmp/*)"),
		Ask:   rules(t, "bash(git push*)", "lab:write(**/deploy.yaml)"),
		Deny:  rules(t, "bash(rm -rf *)", "write(**/.env)", "read(/etc/shadow)"),
	}
	const cwd = "/home/alice/proj"
	for _, tc := range []struct {
		name string
		call Call
		want Verdict
		rule string
	}{
		// The session's mode, ask: changes wait, reads run.
		{"ask: a read runs", Call{Host: "dev", Tool: "read", ReadOnly: true, Path: cwd + "/a"}, Run, ""},
		{"ask: a write asks", Call{Host: "dev", Tool: "write", Path: cwd + "/a", Cwd: cwd}, AskPerson, ""},
		{"ask: an allowed edit runs", Call{Host: "dev", Tool: "edit", Path: cwd + "/src/x/y.go", Cwd: cwd}, Run, "edit(src/**)"},
		{"ask: an edit outside the rule asks", Call{Host: "dev", Tool: "edit", Path: cwd + "/docs/y.md", Cwd: cwd}, AskPerson, ""},
		{"ask: an allowed command runs", Call{Host: "dev", Tool: "bash", Command: "git status --short"}, Run, "bash(git status*)"},
		{"ask: every command of a line allowed", Call{Host: "dev", Tool: "bash", Command: "git status && go test ./..."}, Run, "bash(git status*)"},
		{"ask: one command of a line not allowed", Call{Host: "dev", Tool: "bash", Command: "git status && curl x | sh"}, AskPerson, ""},
		{"ask: a substitution not allowed", Call{Host: "dev", Tool: "bash", Command: "git status $(curl x)"}, AskPerson, ""},
		{"ask: a redirection to a file is no allowed command", Call{Host: "dev", Tool: "bash", Command: "git status > ~/.bashrc"}, AskPerson, ""},
		{"ask: a redirection to /dev/null is", Call{Host: "dev", Tool: "bash", Command: "git status 2>/dev/null"}, Run, "bash(git status*)"},
		{"ask: prefix form", Call{Host: "dev", Tool: "bash", Command: "npm run test:unit"}, AskPerson, ""},
		{"ask: prefix form, alone", Call{Host: "dev", Tool: "bash", Command: "npm run test"}, Run, "bash(npm run test:*)"},
		{"ask: prefix form, with arguments", Call{Host: "dev", Tool: "bash", Command: "npm run test -- --watch"}, Run, "bash(npm run test:*)"},
		{"ask: a line that cannot be read whole", Call{Host: "dev", Tool: "bash", Command: "git status; for f in *; do echo $f; done"}, AskPerson, ""},

		// Deny beats ask beats allow, in every mode.
		{"deny beats allow", Call{Host: "dev", Tool: "bash", Command: "git status && rm -rf /"}, Refuse, "bash(rm -rf *)"},
		{"deny in auto", Call{Host: "lab", Tool: "bash", Command: "rm -rf /tmp/x"}, Refuse, "bash(rm -rf *)"},
		{"deny sees through sudo", Call{Host: "lab", Tool: "bash", Command: "sudo -n rm -rf /"}, Refuse, "bash(rm -rf *)"},
		{"deny sees through env and assignments", Call{Host: "lab", Tool: "bash", Command: "FOO=1 env -i rm -rf /"}, Refuse, "bash(rm -rf *)"},
		{"deny sees /bin/rm as rm", Call{Host: "lab", Tool: "bash", Command: "/bin/rm -rf /"}, Refuse, "bash(rm -rf *)"},
		{"deny sees into sh -c", Call{Host: "lab", Tool: "bash", Command: "sh -c 'rm -rf /'"}, Refuse, "bash(rm -rf *)"},
		{"deny sees into a substitution", Call{Host: "lab", Tool: "bash", Command: "echo $(rm -rf ~)"}, Refuse, "bash(rm -rf *)"},
		{"deny sees a quoted spelling", Call{Host: "lab", Tool: "bash", Command: "'rm' -rf /"}, Refuse, "bash(rm -rf *)"},
		{"deny on a path", Call{Host: "lab", Tool: "write", Path: "/srv/app/.env", Cwd: cwd}, Refuse, "write(**/.env)"},
		{"deny on a path at the root", Call{Host: "lab", Tool: "write", Path: "/.env", Cwd: cwd}, Refuse, "write(**/.env)"},
		{"deny on a read", Call{Host: "lab", Tool: "read", ReadOnly: true, Path: "/etc/shadow"}, Refuse, "read(/etc/shadow)"},
		{"ask beats allow", Call{Host: "dev", Tool: "bash", Command: "git status; git push"}, AskPerson, "bash(git push*)"},
		{"ask in auto", Call{Host: "lab", Tool: "bash", Command: "git push origin main"}, AskPerson, "bash(git push*)"},

		// A host's own mode wins over the session's.
		{"auto host: a write runs", Call{Host: "lab", Tool: "write", Path: cwd + "/a", Cwd: cwd}, Run, ""},
		{"read-only host: write refused", Call{Host: "prod", Tool: "write", Path: "/tmp/a", Cwd: cwd}, Refuse, ""},
		{"read-only host: an allow rule does not open edit", Call{Host: "prod", Tool: "edit", Path: cwd + "/src/a.go", Cwd: cwd}, Refuse, ""},
		{"read-only host: bash refused", Call{Host: "prod", Tool: "bash", Command: "ls /"}, Refuse, ""},
		{"read-only host: a host rule allows its command", Call{Host: "prod", Tool: "bash", Command: "systemctl status nginx"}, Run, "prod:bash(systemctl status *)"},
		{"read-only host: a session rule too", Call{Host: "prod", Tool: "bash", Command: "git status"}, Run, "bash(git status*)"},
		{"read-only host: reads run", Call{Host: "prod", Tool: "grep", ReadOnly: true, Path: "/var/log"}, Run, ""},

		// A program's own tool is decided on what its definition says:
		// one that does not say it is read-only is taken to change its
		// host.
		{"read-only host: a custom tool refused", Call{Host: "prod", Tool: "changelog", Path: cwd + "/CHANGES", Cwd: cwd}, Refuse, ""},
		{"read-only host: a read-only custom tool runs", Call{Host: "prod", Tool: "count_lines", ReadOnly: true, Path: cwd + "/CHANGES", Cwd: cwd}, Run, ""},
		{"ask: a custom tool asks", Call{Host: "dev", Tool: "changelog", Path: cwd + "/CHANGES", Cwd: cwd}, AskPerson, ""},
		{"ask: a read-only custom tool runs", Call{Host: "dev", Tool: "count_lines", ReadOnly: true, Path: cwd + "/CHANGES", Cwd: cwd}, Run, ""},
		{"auto host: a custom tool runs", Call{Host: "lab", Tool: "changelog", Path: cwd + "/CHANGES", Cwd: cwd}, Run, ""},
		{"ask: an allow rule names a custom tool", Call{Host: "dev", Tool: "changelog", Path: "/tmp/CHANGES", Cwd: cwd}, Run, "changelog(/tmp/*)"},
		{"read-only host: an allow rule does not open a custom tool", Call{Host: "prod", Tool: "changelog", Path: "/tmp/CHANGES", Cwd: cwd}, Refuse, ""},
		{"a host rule is that host's", Call{Host: "dev", Tool: "bash", Command: "systemctl status nginx"}, AskPerson, ""},
		{"a host's ask rule", Call{Host: "lab", Tool: "write", Path: "/srv/deploy.yaml", Cwd: cwd}, AskPerson, "lab:write(**/deploy.yaml)"},
		{"another host's ask rule", Call{Host: "dev", Tool: "write", Path: "/tmp/deploy.yaml", Cwd: cwd}, Run, "write(/tmp/*)"},

		// Path rules match the canonical path: the caller resolves ./a,
		// x/../a and symbolic links (canonpath); relative patterns are
		// read against the host's cwd.
		{"a relative pattern, ./ form", Call{Host: "dev", Tool: "edit", Path: cwd + "/src/a.go", Cwd: cwd}, Run, "edit(src/**)"},
		{"a relative pattern needs a cwd", Call{Host: "dev", Tool: "edit", Path: cwd + "/src/a.go"}, AskPerson, ""},
		{"one star stays in its directory", Call{Host: "dev", Tool: "write", Path: "/tmp/a/b", Cwd: cwd}, AskPerson, ""},
	} {
		got := p.Decide(tc.call)
		assert.Equal(t, tc.want, got.Verdict, "%s: %+v", tc.name, got)
		assert.Equal(t, tc.rule, got.Rule, "%s: the deciding rule", tc.name)
		if tc.want != Run {
			assert.NotEmpty(t, got.Reason, tc.name)
		}
	}
}

// The default mode is auto: every call runs, but for the rules.
func TestDecideDefaultsToAuto(t *testing.T) {
	var p Policy
	assert.Equal(t, Run, p.Decide(Call{Host: "h", Tool: "bash", Command: "rm -rf /"}).Verdict)
	assert.Equal(t, Auto, p.HostMode("h"))
	p.Deny = rules(t, "bash")
	d := p.Decide(Call{Host: "h", Tool: "bash", Command: "ls"})
	assert.Equal(t, Refuse, d.Verdict)
	assert.Equal(t, "denied by rule `bash`", d.Reason)
}

func TestPatterns(t *testing.T) {
	for _, tc := range []struct {
		pattern, cmd string
		want         bool
	}{
		{"git status*", "git status", true},
		{"git status*", "git statusx", true},
		{"git status *", "git status", false},
		{"go test *", "go test ./...", true},
		{"*", "anything at all", true},
		{"a*b*c", "a123b456c", true},
		{"a*b*c", "a123c456b", false},
		{"npm run test:*", "npm run testx", false},
		{"ls   -l", "ls -l", true},
	} {
		assert.Equal(t, tc.want, matchCommand(tc.pattern, tc.cmd), "%q ~ %q", tc.pattern, tc.cmd)
	}
	for _, tc := range []struct {
		pattern, path, cwd string
		want               bool
	}{
		{"**/.env", "/a/b/.env", "", true},
		{"**/.env", "/.env", "", true},
		{"src/**", "/p/src", "/p", true},
		{"src/**", "/p/src/a/b", "/p", true},
		{"src/**", "/p/srcx/a", "/p", false},
		{"./src/*.go", "/p/src/a.go", "/p", true},
		{"../other/*", "/other/x", "/p", true},
		{"/etc/*", "/etc/passwd", "", true},
		{"/etc/*", "/etc/ssh/sshd_config", "", false},
		{"/etc/**", "/etc/ssh/sshd_config", "", true},
		{"[", "/x", "/", false},
	} {
		assert.Equal(t, tc.want, matchPath(tc.pattern, tc.path, tc.cwd), "%q ~ %q (cwd %q)", tc.pattern, tc.path, tc.cwd)
	}
}

// Ask rules never loosen read-only: a bash line no allow rule lets
// through is refused there even when an ask rule (which a project may add)
// names it; one an allow rule lets through is asked about.
func TestAskRulesDoNotLoosenReadOnly(t *testing.T) {
	p := Policy{Mode: ReadOnly, Allow: rules(t, "bash(git push*)"), Ask: rules(t, "bash(*)")}
	assert.Equal(t, Refuse, p.Decide(Call{Host: "h", Tool: "bash", Command: "rm -rf /"}).Verdict)
	assert.Equal(t, AskPerson, p.Decide(Call{Host: "h", Tool: "bash", Command: "git push origin"}).Verdict)
	assert.Equal(t, Refuse, p.Decide(Call{Host: "h", Tool: "write", Path: "/x"}).Verdict)
}

// A gate with nobody to ask refuses what needs a person, saying which
// rule would allow it; a person's answers decide otherwise, and "session"
// lets identical calls (same host, tool, line or path) run from then on,
// but never past a deny rule or a read-only write.
func TestGate(t *testing.T) {
	g := NewGate(Policy{Mode: Ask, Hosts: map[string]Mode{"prod": ReadOnly}, Deny: rules(t, "bash(rm *)")})
	ctx := t.Context()
	err := g.Check(ctx, Call{Host: "dev", Tool: "bash", Command: "make test && make lint"}, nil)
	var d *Denied
	require.ErrorAs(t, err, &d)
	assert.Contains(t, d.Message, "host dev asks before bash, and nobody is here to approve it")
	assert.Contains(t, d.Message, "`bash(make *)`")

	var asked []Request
	answer := Answer{Decision: Session}
	g.SetAsker(func(_ context.Context, r Request) (Answer, error) {
		asked = append(asked, r)
		return answer, nil
	})
	line := Call{Host: "dev", Tool: "bash", Command: "make test && make lint"}
	require.NoError(t, g.Check(ctx, line, nil))
	require.NoError(t, g.Check(ctx, line, nil))
	assert.Len(t, asked, 1, "asked once, then the session rule holds")
	assert.Equal(t, "approval-2", asked[0].ID)
	other := line
	other.Command = "make test && make lint && make install"
	require.NoError(t, g.Check(ctx, other, nil))
	assert.Len(t, asked, 2, "another line is asked about")
	onProd := line
	onProd.Host = "prod"
	require.Error(t, g.Check(ctx, onProd, nil), "read-only: refused, not asked")
	assert.Len(t, asked, 2)
	rm := Call{Host: "dev", Tool: "bash", Command: "rm x"}
	require.Error(t, g.Check(ctx, rm, nil))
	assert.Len(t, asked, 2, "denied without asking")

	answer = Answer{Decision: Deny, Reason: "  use the staging box  "}
	err = g.Check(ctx, Call{Host: "dev", Tool: "write", Path: "/srv/a"}, nil)
	require.ErrorAs(t, err, &d)
	assert.Equal(t, "Denied by the user: use the staging box", d.Message)
	answer = Answer{Decision: Deny}
	err = g.Check(ctx, Call{Host: "dev", Tool: "write", Path: "/srv/a"}, nil)
	assert.EqualError(t, err, "Denied by the user.")

	p := g.Policy()
	require.Len(t, p.Allow, 2)
	assert.Equal(t, "dev:bash(make test && make lint)", p.Allow[0].Text)
	assert.Equal(t, "this session", p.Allow[0].From)

	// Another session asks anew; the settings' rules stay.
	g.NewSession()
	answer = Answer{Decision: Once}
	require.NoError(t, g.Check(ctx, line, nil))
	assert.Len(t, asked, 5, "asked again in the next session")
	g.NewSession()
	assert.Empty(t, g.Policy().Allow)
	assert.Len(t, NewGate(Policy{Allow: rules(t, "read")}).Policy().Allow, 1)

	// An asker that gives up with the call's context reports that, not a
	// refusal.
	cctx, cancel := context.WithCancel(ctx)
	g.SetAsker(func(ctx context.Context, _ Request) (Answer, error) {
		cancel()
		<-ctx.Done()
		return Answer{}, ctx.Err()
	})
	err = g.Check(cctx, Call{Host: "dev", Tool: "edit", Path: "/srv/b"}, nil)
	assert.ErrorIs(t, err, context.Canceled)

	assert.True(t, g.Quiet("dev", "read", true))
	assert.False(t, g.Quiet("dev", "write", false))
	assert.False(t, g.Quiet("dev", "changelog", false), "a tool not read-only is asked about")
	assert.True(t, g.Quiet("dev", "count_lines", true))
	assert.False(t, g.Quiet("lab", "bash", false), "a deny rule names bash everywhere")
	assert.True(t, NewGate(Policy{}).Quiet("dev", "write", false))
	var none *Gate
	assert.True(t, none.Quiet("dev", "bash", false))
}

func TestParseDecision(t *testing.T) {
	for in, want := range map[string]string{"once": Once, "Session": Session, "always": Session, "deny": Deny, "reject": Deny} {
		got, err := ParseDecision(in)
		require.NoError(t, err)
		assert.Equal(t, want, got)
	}
	_, err := ParseDecision("maybe")
	assert.Error(t, err)
}

// A mode set in a front end is the host's own from then on: it wins over
// the session's mode, leaves other hosts and the rules alone, and says
// who set it.
func TestGateSetHostMode(t *testing.T) {
	p := Policy{Mode: Ask, Deny: rules(t, "bash(rm *)")}
	g := NewGate(p)
	g.SetHostMode("dev", Auto, "the editor")
	assert.Equal(t, Auto, g.Policy().HostMode("dev"))
	assert.Equal(t, Ask, g.Policy().HostMode("prod"))
	assert.Equal(t, "the editor", g.Policy().HostsFrom["dev"])
	assert.Nil(t, p.Hosts, "the policy given to NewGate is not changed")
	assert.NoError(t, g.Check(t.Context(), Call{Host: "dev", Tool: "write", Path: "/srv/a"}, nil), "auto runs it without asking")
	var denied *Denied
	assert.ErrorAs(t, g.Check(t.Context(), Call{Host: "dev", Tool: "bash", Command: "rm -rf x"}, nil), &denied, "deny rules still hold")
	g.SetHostMode("dev", ReadOnly, "the editor")
	assert.ErrorAs(t, g.Check(t.Context(), Call{Host: "dev", Tool: "write", Path: "/srv/a"}, nil), &denied)
}
