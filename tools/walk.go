package tools

import (
	"context"
	_ "embed"
	"errors"
	"path"
	"slices"
	"strings"

	"github.com/go-git/go-git/v5/plumbing/format/gitignore"

	"github.com/pi-remote/pi-remote/env"
	"github.com/pi-remote/pi-remote/internal/shellquote"
	"github.com/pi-remote/pi-remote/ops"
)

// searchSh is the host side of grep and find without rg and fd.
//
//go:embed search.sh
var searchSh string

// hostScript is searchSh followed by a command run in dir.
func hostScript(dir, command string) string {
	return searchSh + "\ncd -- " + shellquote.Quote(dir) + " && " + command + "\n"
}

// hostTree is a directory tree as describe_search_root reports it: what rg
// and fd would walk, read in one round trip, with the ignore files that
// decide what they would skip.
type hostTree struct {
	root       string              // the searched directory, absolute
	kinds      map[string]byte     // "./a/b" → 'd', 'f' or 'l'
	children   map[string][]string // "./a" → names in it
	ignore     map[string]string   // ignore file (absolute, or "./a/.gitignore") → content
	repos      map[string]bool     // directories holding a .git
	complaints []string            // directories find could not read
}

// describeTree lists dir on the host. ops.ErrNotDir means dir is a file.
func describeTree(ctx context.Context, e *env.ExecutionEnv, dir string) (*hostTree, error) {
	var out strings.Builder
	err := e.Exec(ctx, ops.Command{Script: hostScript(dir, "describe_search_root"), Dir: dir, Output: &out})
	if err != nil && (ctx.Err() != nil || errors.Is(err, ops.ErrNotDir) || out.Len() == 0) {
		return nil, err
	}
	return parseTree(dir, out.String()), nil
}

func parseTree(dir, s string) *hostTree {
	t := &hostTree{
		root:     dir,
		kinds:    map[string]byte{},
		children: map[string][]string{},
		ignore:   map[string]string{},
		repos:    map[string]bool{},
	}
	records, complaints, _ := strings.Cut(s, "\x00\x00")
	if strings.HasPrefix(s, "\x00") {
		records, complaints = "", s[1:]
	}
	seen := map[string]bool{}
	for _, l := range strings.Split(strings.TrimSpace(complaints), "\n") {
		if l = strings.TrimSpace(l); l != "" && !seen[l] {
			seen[l] = true
			t.complaints = append(t.complaints, strings.ToValidUTF8(l, "\uFFFD"))
		}
	}
	fields := strings.Split(records, "\x00")
	for i := 0; i < len(fields); i++ {
		r := fields[i]
		if r == "" {
			continue
		}
		kind, p := r[0], r[1:]
		switch kind {
		case 'd', 'f', 'l':
			if p == "." {
				continue
			}
			if _, dup := t.kinds[p]; !dup {
				t.kinds[p] = kind
				parent := parentKey(p)
				t.children[parent] = append(t.children[parent], p[len(parent)+1:])
			}
		case 'G':
			t.repos[parentKey(p)] = true
		case 'I':
			if i+1 < len(fields) {
				t.ignore[p] = fields[i+1]
				i++
			}
		}
	}
	return t
}

// parentKey is the directory of a tree path in the tree's own spelling:
// "./a/b" → "./a", "./a" → ".", "/x/.git" → "/x", "/.git" → "/".
func parentKey(p string) string {
	switch i := strings.LastIndexByte(p, '/'); i {
	case -1:
		return "."
	case 0:
		return "/"
	default:
		return p[:i]
	}
}

// abs is the absolute form of a "./"-relative path of the tree.
func (t *hostTree) abs(p string) string {
	if p == "." {
		return t.root
	}
	return path.Join(t.root, strings.TrimPrefix(p, "./"))
}

// components splits an absolute path for the gitignore matcher.
func components(abs string) []string {
	return strings.Split(strings.Trim(abs, "/"), "/")
}

// rules are the ignore patterns in force in a directory, weakest first.
type rules struct {
	inRepo   bool
	patterns []gitignore.Pattern
}

// enter adds the rules of directory dir (key is how the tree names its
// files: absolute above the root, "./..." inside it). Like rg and fd: a
// .gitignore counts only inside a git repository; .git/info/exclude, then
// .gitignore, then .ignore, each stronger than the last, and a directory's
// files stronger than its parents'.
func (t *hostTree) enter(r rules, key, abs string) rules {
	if t.repos[key] {
		r.inRepo = true
	}
	var files []string
	if t.repos[key] {
		files = append(files, ".git/info/exclude")
	}
	if r.inRepo {
		files = append(files, ".gitignore")
	}
	files = append(files, ".ignore")
	domain := components(abs)
	if abs == "/" {
		domain = nil
	}
	for _, name := range files {
		content, ok := t.ignore[strings.TrimSuffix(key, "/")+"/"+name]
		if !ok {
			continue
		}
		r.patterns = slices.Clip(r.patterns)
		for line := range strings.Lines(content) {
			line = strings.TrimRight(line, "\r\n")
			if line == "" || strings.HasPrefix(line, "#") || strings.TrimSpace(line) == "" {
				continue
			}
			r.patterns = append(r.patterns, gitignore.ParsePattern(line, domain))
		}
	}
	return r
}

// visible returns the tree's paths (relative to the root, sorted as a
// sorted walk visits them) of the kinds wanted, leaving out what the
// ignore files exclude and everything below an excluded directory.
func (t *hostTree) visible(kinds string) []string {
	var r rules
	// The directories above the root, outermost first.
	var above []string
	for d := path.Dir(t.root); ; d = path.Dir(d) {
		above = append(above, d)
		if d == "/" || d == "." {
			break
		}
	}
	for _, d := range slices.Backward(above) {
		r = t.enter(r, d, d)
	}
	var out []string
	var walk func(dir string, r rules)
	walk = func(dir string, r rules) {
		r = t.enter(r, dir, t.abs(dir))
		m := gitignore.NewMatcher(r.patterns)
		names := slices.Clone(t.children[dir])
		slices.Sort(names)
		for _, name := range names {
			p := dir + "/" + name
			kind := t.kinds[p]
			if len(r.patterns) > 0 && m.Match(components(t.abs(p)), kind == 'd') {
				continue
			}
			if kind == 'd' {
				walk(p, r)
			} else if strings.IndexByte(kinds, kind) >= 0 {
				out = append(out, strings.TrimPrefix(p, "./"))
			}
		}
	}
	walk(".", r)
	return out
}
