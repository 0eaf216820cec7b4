package permission

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// What bash evaluates as code is no plain argument to an allow rule: an
// arithmetic expansion runs the substitutions in it, and evaluates the
// values of the variables it names as expressions — whose array
// subscripts run substitutions too ($_ is the previous command's last
// argument, which the model writes); ${x@P} expands a value as a prompt,
// with substitutions; ${!x} and ${a[x]} and ${x:x} evaluate x's value.
// Each of evaluatedLines ran `touch pwned` in bash 5.2 while the echo and
// git status allow rules let it through on a read-only host.
var evaluatedLines = []string{
	"echo $(( $(touch pwned; echo 1) ))",
	"echo $((touch pwned) )",
	"echo \"$(( $(touch pwned) ))\"",
	"echo '$(touch pwned)'; echo ${_@P}",
	"echo 'a[$(touch pwned)]'; echo $((_))",
	"echo 'a[$(touch pwned)]'; echo $((_ + 1))",
	"echo 'a[$(touch pwned)]'; echo ${!_}",
	"echo 'a[$(touch pwned)]'; echo ${a[_]}",
	"echo 'a[$(touch pwned)]'; echo \"${HOME:_}\"",
	"echo 'a[$(touch pwned)]'; echo $[_]",
	"git status 'a[$(touch pwned)]'; git status $((_))",
	// Builtins that take a variable's name evaluate its subscript.
	"printf -v 'a[$(touch pwned)]' %s x",
	"test -v \"$(printf 'a[\\x24(touch pwned)]')\"",
	"[ -v \"$(printf 'a[\\x24(touch pwned)]')\" ]",
	"echo \"$(printf 'a[\\x24(touch pwned)]')\"; echo ${_@P} $((_))",
}

func TestAllowRefusesEvaluatedExpansions(t *testing.T) {
	p := Policy{Mode: ReadOnly, Allow: rules(t, "bash(echo *)", "bash(git status*)", "bash(printf *)", "bash(test *)", "bash([ *)")}
	for _, line := range append(slices.Clone(evaluatedLines),
		// Redirections to a file named by digits, or "-", write it.
		"git status > 1",
		"git status 2> 2",
		"git status > -",
		"git status &> -",
		"git status 1<>out",
	) {
		d := p.Decide(Call{Host: "prod", Tool: "bash", Command: line})
		assert.Equal(t, Refuse, d.Verdict, "%q is let through by %s", line, d.Rule)
	}
	// Plain expansions stay allowed.
	for _, line := range []string{
		"echo $((1+2)) $(( (4 - 1) * 2 ))",
		"echo $HOME ${HOME} ${x:-default} ${x-d} ${x:+set} ${#x} ${f%.go} ${f##*/} ${f/a/b} ${1} ${#} ${x:1} ${x: -1} ${@:2:1}",
		"echo \"${HOME}/x\"",
		"git status 2>&1 >/dev/null",
		"echo x >&2",
		"git status 2>&-",
		"test -f go.mod",
		"[ -d .git ]",
		"printf '%s\\n' \"$HOME\"",
		"echo '$HOME' \"cost: \\$5\"",
	} {
		d := p.Decide(Call{Host: "prod", Tool: "bash", Command: line})
		assert.Equal(t, Run, d.Verdict, "%q: %s", line, d.Reason)
	}
}

// A deny rule sees the commands bash runs from inside an arithmetic
// expansion, a backquote within backquotes, a coprocess, and a command
// name spelled with $'…' escapes. Each of hiddenLines ran `touch pwned` in bash 5.2
// past the deny rule.
var hiddenLines = []string{
	"echo $((touch pwned) )",
	"echo $(( $(touch pwned; echo 1) ))",
	"echo `echo \\`touch pwned\\``",
	"echo \"`echo \\`touch pwned\\``\"",
	"coproc touch pwned; wait",
	"coproc { touch pwned; }; wait",
	"$'\\x74ouch' pwned",
	"$'\\164ouch' pwned",
	"$'\\u0074ouch' pwned",
	// A shell's script behind a wrapper or options, eval behind one, and
	// what xargs runs with the arguments it reads.
	"bash -c -- 'touch pwned'",
	"bash -ec 'touch pwned'",
	"env sh -c 'touch pwned'",
	"/bin/sh -c 'touch pwned'",
	"command eval 'touch pwned'",
	"echo pwned | xargs touch",
}

func TestDenySeesHiddenCommands(t *testing.T) {
	p := Policy{Mode: Auto, Deny: rules(t, "bash(touch *)")}
	for _, line := range hiddenLines {
		d := p.Decide(Call{Host: "dev", Tool: "bash", Command: line})
		assert.Equal(t, Refuse, d.Verdict, "%q runs past the deny rule", line)
	}
}

// bashRuns says whether line, run by bash 5 or later in a new directory,
// creates the file pwned there; it skips the test without such a bash.
func bashRuns(t *testing.T, line string) bool {
	t.Helper()
	sh, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash")
	}
	if out, err := exec.Command(sh, "-c", "echo ${BASH_VERSINFO[0]}").Output(); err != nil || strings.TrimSpace(string(out)) < "5" {
		t.Skip("bash older than 5")
	}
	dir := t.TempDir()
	cmd := exec.Command(sh, "-c", line)
	cmd.Dir = dir
	_ = cmd.Run()
	_, err = os.Stat(filepath.Join(dir, "pwned"))
	return err == nil
}

// The lines of the tests above do what they say in bash itself.
func TestBreakerLinesRunInBash(t *testing.T) {
	for _, line := range append(slices.Clone(evaluatedLines), hiddenLines...) {
		assert.True(t, bashRuns(t, line), "%q", line)
	}
}

// What people run on a read-only host stays allowed by rules naming the
// programs: the refusals above take no everyday line with them.
func TestAllowKeepsEverydayLines(t *testing.T) {
	var texts []string
	for _, p := range []string{"grep", "cat", "ls", "git", "find", "wc", "go", "systemctl", "journalctl", "awk", "sed", "jq", "ps", "df", "du", "echo", "printf", "test", "[", "head", "sort", "uniq", "tail"} {
		texts = append(texts, "bash("+p+":*)")
	}
	p := Policy{Mode: ReadOnly, Allow: rules(t, texts...)}
	for _, line := range []string{
		`grep -rn "func main" .`,
		"git log --oneline -5 && git diff HEAD~1 -- a.go",
		"find . -name '*.go' -newer go.mod | wc -l",
		"go test ./... 2>&1 | tail -20",
		"systemctl status nginx; journalctl -u nginx --since '1 hour ago' --no-pager",
		"awk '{print $1}' access.log | sort | uniq -c | sort -rn | head",
		"sed -n '1,10p' f; jq '.a[0].b' f.json",
		"ps aux | grep '[n]ginx'",
		"df -h; du -sh ./*",
		`echo "$PATH" ${HOME}; printf '%s\n' "$USER"`,
		"[ -f x ] && cat x; test -d y || ls -la",
		"cat $'a\\tb'",
	} {
		d := p.Decide(Call{Host: "prod", Tool: "bash", Command: line})
		assert.Equal(t, Run, d.Verdict, "%q: %s", line, d.Reason)
	}
}
