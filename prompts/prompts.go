// Package prompts reads prompt templates: Markdown files whose name is a
// slash command (review.md is /review) and whose text, with the
// command's arguments put in its $1, $2, $@ and $ARGUMENTS, is sent as the
// person's message. An optional YAML frontmatter's description says what
// the command does where commands are listed.
package prompts

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"github.com/pi-remote/pi-remote/internal/frontmatter"
)

// maxFile bounds a template.
const maxFile = 64 << 10

// Template is one prompt template. Safe to share: nothing changes it.
type Template struct {
	Name        string // the command, without its slash
	Description string
	Path        string
	// User says it is the user's own (~/.pi-remote/prompts), not a
	// project's.
	User bool
	Body string
}

// nameRule is what a template's file name (without .md) must be to be a
// command.
var nameRule = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_-]*$`)

// Load reads the templates of dir (*.md; user says whose they are). A
// missing dir has none. Each file that cannot be used is an error in
// problems, and left out; so is each file for which refuse (when not
// nil) gives a reason, given the open file and its info.
func Load(dir string, user bool, refuse func(*os.File, fs.FileInfo) string) (found []Template, problems []error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			problems = append(problems, err)
		}
		return nil, problems
	}
	for _, e := range entries {
		name, ok := strings.CutSuffix(e.Name(), ".md")
		if !ok || e.IsDir() || strings.HasPrefix(name, ".") {
			continue
		}
		file := filepath.Join(dir, e.Name())
		if !nameRule.MatchString(name) {
			problems = append(problems, fmt.Errorf("%s: a template's name is letters, digits, _ and -, the first a letter or digit", file))
			continue
		}
		data, err := readFile(file, refuse)
		if err != nil {
			problems = append(problems, err)
			continue
		}
		t, err := Parse(file, data)
		if err != nil {
			problems = append(problems, err)
			continue
		}
		t.Name, t.User = name, user
		found = append(found, t)
	}
	return found, problems
}

// readFile reads a regular file of at most maxFile bytes, unless refuse
// says why not.
func readFile(file string, refuse func(*os.File, fs.FileInfo) string) (string, error) {
	// Not blocking on a FIFO: what is not a regular file is refused.
	f, err := os.OpenFile(file, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return "", err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return "", err
	}
	if refuse != nil {
		if why := refuse(f, fi); why != "" {
			return "", fmt.Errorf("%s: not used: %s", file, why)
		}
	}
	if !fi.Mode().IsRegular() {
		return "", fmt.Errorf("%s: not a regular file", file)
	}
	if fi.Size() > maxFile {
		return "", fmt.Errorf("%s: larger than %d KiB", file, maxFile>>10)
	}
	b, err := io.ReadAll(io.LimitReader(f, maxFile))
	return string(b), err
}

// Parse reads a template's file: its body, and the description of its
// frontmatter (if it has one) or else its first line of text.
func Parse(file, content string) (Template, error) {
	t := Template{Path: file}
	fields, body, err := frontmatter.Split([]byte(content))
	var fe *frontmatter.Error
	switch {
	case errors.Is(err, frontmatter.ErrNone):
	case errors.As(err, &fe) && fe.Line == 0:
		return Template{}, fmt.Errorf("%s: %w", file, err)
	case errors.As(err, &fe):
		return Template{}, fmt.Errorf("%s:%d: %w", file, fe.Line, fe.Err)
	case err != nil:
		return Template{}, fmt.Errorf("%s: %w", file, err)
	default:
		d, err := fields.String("description")
		if errors.As(err, &fe) {
			return Template{}, fmt.Errorf("%s:%d: %w", file, fe.Line, fe.Err)
		}
		t.Description = strings.TrimSpace(d)
	}
	t.Body = body
	if t.Description == "" {
		for _, l := range strings.Split(body, "\n") {
			if l = strings.TrimSpace(l); l != "" {
				t.Description = l
				break
			}
		}
	}
	if r := []rune(t.Description); len(r) > 80 {
		t.Description = string(r[:79]) + "…"
	}
	return t, nil
}

// Resolve makes one list of the user's templates and the project's, by
// name. A template may not take the name of a reserved (built-in)
// command, and the user's come before the project's: a repository does
// not change what the user's own command says. Each left out has a line
// in notes.
func Resolve(user, project []Template, reserved []string) (kept []Template, notes []string) {
	seen := map[string]Template{}
	for _, t := range append(slices.Clone(user), project...) {
		if slices.Contains(reserved, t.Name) {
			notes = append(notes, fmt.Sprintf("prompt template %s is not used: /%s is a built-in command", t.Path, t.Name))
			continue
		}
		if w, ok := seen[t.Name]; ok {
			notes = append(notes, fmt.Sprintf("prompt template %s is not used: /%s is %s (your own templates come before a project's)", t.Path, t.Name, w.Path))
			continue
		}
		seen[t.Name] = t
		kept = append(kept, t)
	}
	slices.SortFunc(kept, func(a, b Template) int { return strings.Compare(a.Name, b.Name) })
	return kept, notes
}

// Find is the template called name in ts.
func Find(ts []Template, name string) (Template, bool) {
	i := slices.IndexFunc(ts, func(t Template) bool { return t.Name == name })
	if i < 0 {
		return Template{}, false
	}
	return ts[i], true
}

// placeholder is what Expand replaces: $ARGUMENTS, $@, or $ and a number.
var placeholder = regexp.MustCompile(`\$(ARGUMENTS|@|[1-9][0-9]*)`)

// Expand is the message the template sends for the command's arguments
// (the text after /name): $1, $2, … are the first, second, … argument
// ("" when there is none), $@ and $ARGUMENTS all of them, separated by
// spaces. Arguments are split at spaces; quotes ("a b" or 'a b') keep
// one together. Text an argument brings is not looked at again. A
// template with none of these gets the arguments after its text, so they
// are not lost.
func (t Template) Expand(args string) string {
	words := SplitArgs(args)
	all := strings.Join(words, " ")
	used := false
	out := placeholder.ReplaceAllStringFunc(t.Body, func(p string) string {
		used = true
		switch p {
		case "$ARGUMENTS", "$@":
			return all
		}
		n, err := strconv.Atoi(p[1:])
		if err != nil || n > len(words) {
			return ""
		}
		return words[n-1]
	})
	out = strings.Trim(out, "\n")
	if !used && strings.TrimSpace(args) != "" {
		out += "\n\n" + strings.TrimSpace(args)
	}
	return out
}

// SplitArgs splits a command's arguments at spaces; a double- or
// single-quoted part keeps its spaces (the quotes go).
func SplitArgs(s string) []string {
	var words []string
	var cur strings.Builder
	in, quote := false, rune(0)
	for _, r := range s {
		switch {
		case quote != 0 && r == quote:
			quote = 0
		case quote != 0:
			cur.WriteRune(r)
		case r == '"' || r == '\'':
			quote, in = r, true
		case r == ' ' || r == '\t' || r == '\n':
			if in {
				words = append(words, cur.String())
				cur.Reset()
				in = false
			}
		default:
			cur.WriteRune(r)
			in = true
		}
	}
	if in {
		words = append(words, cur.String())
	}
	return words
}
