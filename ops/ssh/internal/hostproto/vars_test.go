package hostproto

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// The server's variables keep to their owners, as serve.sh's opening
// comment says: a private one (a leading underscore) is used by one
// function alone; a result (named after the function that sets it, as
// job_info_pid) is set by that function alone; shared state (named
// with a group's prefix, as sv_status) is used by the functions its
// "# group PREFIX_: FUNCTION..." comment lists alone.
func TestVariablesKeepToTheirOwners(t *testing.T) {
	misuses := variableMisuses(Source())
	assert.Empty(t, misuses, "the misuses:\n%s", strings.Join(misuses, "\n"))
}

// The check finds each kind of misuse, however the variable is set.
func TestVariableMisusesAreFound(t *testing.T) {
	for _, tc := range []struct {
		name, src string
		want      []string
	}{
		{"a private one read by another", "f() {\n\t_f_x=1\n}\ng() {\n\techo \"$_f_x\"\n}\n",
			[]string{"_f_x, private, used by f, g"}},
		{"a private one outside any function", "_f_x=1\nf() {\n\t: \"${_f_x:-}\"\n}\n",
			[]string{"_f_x, private, used by (top), f"}},
		{"a result set by another", "f() {\n\tf_out=1\n}\ng() {\n\t[ -n \"$x\" ] || f_out=2\n}\n",
			[]string{"f_out, a result of f, set by g"}},
		{"a result set by read", "f() {\n\tf_out=1\n}\ng() {\n\tread -r _ f_out <x\n}\n",
			[]string{"f_out, a result of f, set by g"}},
		{"a result set by for", "f() {\n\tf_out=1\n}\ng() {\n\tfor f_out in a; do :; done\n}\n",
			[]string{"f_out, a result of f, set by g"}},
		{"a result set by arithmetic", "f() {\n\tf_out=1\n\tf_two=1\n}\ng() {\n\t: $((f_out += 1)) $((n = f_two = 0))\n}\n",
			[]string{"f_out, a result of f, set by g", "f_two, a result of f, set by g"}},
		{"a result set by a default", "f() {\n\tf_out=1\n}\ng() {\n\t: \"${f_out:=2}\"\n}\n",
			[]string{"f_out, a result of f, set by g"}},
		{"a result set in an eval'd string", "f() {\n\tf_out=1\n}\ng() {\n\teval 'f_out=2'\n}\n",
			[]string{"f_out, a result of f, set by g"}},
		{"a result unset by another", "f() {\n\tf_out=1\n}\ng() {\n\tunset -v f_out\n}\n",
			[]string{"f_out, a result of f, set by g"}},
		{"a result set by read after --", "f() {\n\tf_out=1\n}\ng() {\n\tread -r -- _ f_out <x\n}\n",
			[]string{"f_out, a result of f, set by g"}},
		{"a result in capitals set by another", "f() {\n\tf_Out=1\n}\ng() {\n\tf_Out=2\n}\n",
			[]string{"f_Out, a result of f, set by g"}},
		{"a result compared, not set", "f() {\n\tf_out=1\n}\ng() {\n\t[ $((f_out == 1)) = 1 ] && [ \"$f_out\" = x ]\n}\n", nil},
		{"a private one in capitals", "f() {\n\t_F_x=1\n}\ng() {\n\techo \"$_F_x\"\n}\n",
			[]string{"_F_x, private, used by f, g"}},
		{"a private one with two underscores", "f() {\n\t__x=1\n}\ng() {\n\techo \"$__x\"\n}\n",
			[]string{"__x, private, used by f, g"}},
		{"a private one in arithmetic and a length", "f() {\n\t_f_x=1\n}\ng() {\n\techo \"${#_f_x}\" $((1+_f_x))\n}\n",
			[]string{"_f_x, private, used by f, g"}},
		{"a function's end the check cannot see", "f() {\n\t_f_x=1\n} >/dev/null\necho \"$_f_x\"\n",
			[]string{"line 3, \"} >/dev/null\": a function's end not written \"}\" alone"}},
		{"a function's start the check cannot see", "f() {\n\t_f_x=1\n}\ng ()\n{\n\techo \"$_f_x\"\n}\n",
			[]string{"_f_x, private, used by (top), f", "line 4, \"g ()\": a function's start not written \"NAME() {\""}},
		{"a result read by another", "f() {\n\tf_out=1\n}\ng() {\n\techo \"$f_out\"\n}\n", nil},
		{"shared state outside its group", "# group gr_: f\nf() {\n\tgr_x=1\n}\ng() {\n\techo $((gr_x + 1))\n}\n",
			[]string{"gr_x, shared state of group gr_, used by g"}},
		{"shared state in its group", "# group gr_: f\n# g\nf() {\n\tgr_x=1\n}\ng() {\n\techo \"$gr_x\"\n}\n", nil},
		{"a group listing no function", "# group gr_: f h\nf() {\n\tgr_x=1\n}\n",
			[]string{"group gr_ lists h, no function of the program"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, variableMisuses(tc.src))
		})
	}
}

var (
	funcHead    = regexp.MustCompile(`^([a-z_][a-z0-9_]*)\(\) \{$`)
	anyFuncHead = regexp.MustCompile(`^\s*[A-Za-z_][A-Za-z0-9_]*\s*\(\s*\)`)
	groupHead   = regexp.MustCompile(`^# group ([a-z][a-z0-9]*_): ([a-z_ ]+)$`)
	groupMore   = regexp.MustCompile(`^# ([a-z_ ]+)$`)
	privateName = regexp.MustCompile(`(?:^|[^A-Za-z0-9_])(_[A-Za-z0-9_]+)`)
	joinedName  = regexp.MustCompile(`(?:^|[^A-Za-z0-9_])([a-z][a-z0-9]*(?:_[A-Za-z0-9]+)+)`)
	readList    = regexp.MustCompile(`\bread(?:\s+-[-a-zA-Z]*)*((?:\s+[A-Za-z_][A-Za-z0-9_]*)+)`)
	unsetList   = regexp.MustCompile(`\bunset(?:\s+-[-a-zA-Z]*)*((?:\s+[A-Za-z_][A-Za-z0-9_]*)+)`)
	forName     = regexp.MustCompile(`\bfor\s+([A-Za-z_][A-Za-z0-9_]*)`)
	// (After a quote too: a string eval runs.)
	assignment = regexp.MustCompile(`(?:^|[\s;&|({"'])([A-Za-z_][A-Za-z0-9_]*)=`)
	defaulted  = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*):?=`)
	arithmetic = regexp.MustCompile(`\$\(\(((?:[^()]|\([^()]*\))*)\)\)`)
	arithSet   = regexp.MustCompile(`([A-Za-z_][A-Za-z0-9_]*)\s*(?:[-+*/%&|^]|<<|>>)?=`)
)

// variableMisuses lists what breaks the rule in the modules' text src:
// a private variable used by two functions, a result set by a function
// other than its owner, shared state used outside its group (and a group
// that names no function of the program), and a function written other
// than from a line "NAME() {" to a line "}" (the check could not tell
// whose its code is). Code outside any function counts as one more
// function, "(top)"; a subshell or a background block counts as the
// function it is written in. "_" alone is the throwaway of read,
// anybody's.
func variableMisuses(src string) []string {
	bodies := map[string]*strings.Builder{}
	groups := map[string][]string{} // prefix -> functions
	fn, group := "(top)", ""
	// (Where a function starts and ends is read from its first and last
	// lines: one written otherwise would lend its code to another.)
	var misuses []string
	n := 0
	for line := range strings.Lines(src) {
		n++
		line = strings.TrimRight(line, "\n")
		if m := groupHead.FindStringSubmatch(line); m != nil {
			group = m[1]
			groups[group] = append(groups[group], strings.Fields(m[2])...)
			continue
		}
		if m := groupMore.FindStringSubmatch(line); m != nil && group != "" {
			groups[group] = append(groups[group], strings.Fields(m[1])...)
			continue
		}
		group = ""
		if strings.HasPrefix(strings.TrimSpace(line), "#") {
			continue
		}
		if m := funcHead.FindStringSubmatch(line); m != nil {
			fn = m[1]
		} else if line == "}" {
			fn = "(top)"
		} else if anyFuncHead.MatchString(line) {
			misuses = append(misuses, fmt.Sprintf("line %d, %q: a function's start not written \"NAME() {\"", n, line))
		} else if strings.HasPrefix(line, "}") {
			misuses = append(misuses, fmt.Sprintf("line %d, %q: a function's end not written \"}\" alone", n, line))
		}
		if bodies[fn] == nil {
			bodies[fn] = &strings.Builder{}
		}
		bodies[fn].WriteString(line + "\n")
	}

	inGroup := map[string]map[string]bool{}
	for prefix, fns := range groups {
		inGroup[prefix] = map[string]bool{}
		for _, f := range fns {
			if bodies[f] == nil {
				misuses = append(misuses, fmt.Sprintf("group %s lists %s, no function of the program", prefix, f))
			}
			inGroup[prefix][f] = true
		}
		for f := range bodies {
			if strings.HasPrefix(f, prefix) {
				misuses = append(misuses, fmt.Sprintf("group %s's prefix starts the function %s", prefix, f))
			}
		}
	}

	privateUsers := map[string][]string{}
	for f, body := range bodies {
		code := body.String()
		for _, name := range submatches(privateName, code) {
			if !slices.Contains(privateUsers[name], f) {
				privateUsers[name] = append(privateUsers[name], f)
			}
		}
		sets := setNames(code)
		for _, name := range submatches(joinedName, code) {
			if bodies[name] != nil {
				continue // a function's name
			}
			if prefix := groupOf(name, groups); prefix != "" {
				if !inGroup[prefix][f] {
					misuses = append(misuses, fmt.Sprintf("%s, shared state of group %s, used by %s", name, prefix, f))
				}
				continue
			}
			if owner := resultOwner(name, bodies); owner != "" && owner != f && sets[name] {
				misuses = append(misuses, fmt.Sprintf("%s, a result of %s, set by %s", name, owner, f))
			}
		}
	}
	for name, users := range privateUsers {
		if len(users) > 1 {
			slices.Sort(users)
			misuses = append(misuses, fmt.Sprintf("%s, private, used by %s", name, strings.Join(users, ", ")))
		}
	}
	slices.Sort(misuses)
	return slices.Compact(misuses)
}

// setNames are the variables code assigns to (or unsets): NAME=...
// (in a string for eval too), ${NAME=...} and ${NAME:=...}, NAME = and
// NAME += (and the like) in $(( )), read's names, unset's, for's.
func setNames(code string) map[string]bool {
	set := map[string]bool{}
	for _, re := range []*regexp.Regexp{assignment, defaulted} {
		for _, name := range submatches(re, code) {
			set[name] = true
		}
	}
	for _, expr := range submatches(arithmetic, code) {
		for _, m := range arithSet.FindAllStringSubmatchIndex(expr, -1) {
			// (Not $NAME, nor the tail of a longer name; not ==.)
			expanded := m[0] > 0 && strings.ContainsRune("$_"+alnum, rune(expr[m[0]-1]))
			compared := m[1] < len(expr) && expr[m[1]] == '='
			if !expanded && !compared {
				set[expr[m[2]:m[3]]] = true
			}
		}
	}
	for _, re := range []*regexp.Regexp{readList, unsetList} {
		for _, names := range submatches(re, code) {
			for _, name := range strings.Fields(names) {
				set[name] = true
			}
		}
	}
	for _, name := range submatches(forName, code) {
		set[name] = true
	}
	return set
}

// groupOf is the prefix of the group whose shared state name is, or "".
func groupOf(name string, groups map[string][]string) string {
	for prefix := range groups {
		if strings.HasPrefix(name, prefix) {
			return prefix
		}
	}
	return ""
}

// resultOwner is the function whose result name is (the longest function
// name that, with "_", starts it), or "".
func resultOwner(name string, bodies map[string]*strings.Builder) string {
	owner := ""
	for f := range bodies {
		if strings.HasPrefix(name, f+"_") && len(f) > len(owner) {
			owner = f
		}
	}
	return owner
}

const alnum = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"

func submatches(re *regexp.Regexp, s string) []string {
	var found []string
	for _, m := range re.FindAllStringSubmatch(s, -1) {
		found = append(found, m[1])
	}
	return found
}
