// Package skills reads Agent Skills: folders whose SKILL.md begins with a
// YAML frontmatter naming the skill and saying when to use it (the open
// format of agentskills.io), the rest of the file being instructions the
// model reads when the task calls for them.
//
// It owns what a skill is (Parse checks the frontmatter against the
// format's rules), which of two skills of one name is used (Resolve), the
// list the system prompt carries (only names, descriptions and where the
// files are: the model reads a body with the read tool when it needs it),
// and the message /skill:name sends (Message). Finding SKILL.md files on
// a host is the tools package's (tools.Describe); Load reads a folder of
// the machine pi-remote runs on.
package skills

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/pi-remote/pi-remote/internal/frontmatter"
)

// FileName is a skill's file in its folder.
const FileName = "SKILL.md"

// Limits of the format.
const (
	MaxName        = 64
	MaxDescription = 1024
	// MaxFile bounds the part of a SKILL.md that is read.
	MaxFile = 64 << 10
)

// Skill is one skill found on a host. Safe to share: nothing changes it.
type Skill struct {
	Name        string
	Description string
	// Host is the host whose read tool reaches Path ("" for a user's
	// skill of this machine when no host is this machine: then only the
	// person may use it, with /skill:name).
	Host string
	// Path is the SKILL.md file (absolute, on Host).
	Path string
	// User says it is the user's own (~/.pi-remote/skills), not a
	// project's.
	User bool
	// Body is the file after its frontmatter, as read when the session
	// started.
	Body string
}

// Dir is the skill's folder: the files the body names are relative to it.
func (s Skill) Dir() string {
	if s.User {
		return filepath.Dir(s.Path)
	}
	return path.Dir(s.Path)
}

// nameRule is the format's rule for a name: lowercase letters, digits
// and single hyphens, neither first nor last.
var nameRule = regexp.MustCompile(`^[a-z0-9]+(-[a-z0-9]+)*$`)

// Parse reads the SKILL.md at file (slash-separated on a remote host)
// from its content. The frontmatter must give a name — the folder's own,
// lowercase letters, digits and single hyphens, at most MaxName
// characters — and a description of at most MaxDescription. An error
// says the file and the line.
func Parse(file, content string) (Skill, error) {
	fail := func(line int, err error) (Skill, error) {
		return Skill{}, fmt.Errorf("%s:%d: %w", file, line, err)
	}
	fields, body, err := frontmatter.Split([]byte(content))
	if err != nil {
		var fe *frontmatter.Error
		switch {
		case errors.Is(err, frontmatter.ErrNone):
			return fail(1, errors.New("a SKILL.md begins with a frontmatter: ---, name: and description: lines, ---"))
		case errors.As(err, &fe) && fe.Line == 0:
			return Skill{}, fmt.Errorf("%s: %w", file, err)
		case errors.As(err, &fe):
			return fail(fe.Line, fe.Err)
		}
		return Skill{}, fmt.Errorf("%s: %w", file, err)
	}
	name, err := fields.String("name")
	if err != nil {
		return Skill{}, lineErr(file, err)
	}
	desc, err := fields.String("description")
	if err != nil {
		return Skill{}, lineErr(file, err)
	}
	folder := path.Base(path.Dir(filepath.ToSlash(file)))
	switch {
	case name == "":
		return fail(fields.Line("name"), errors.New("no name"))
	case utf8.RuneCountInString(name) > MaxName:
		return fail(fields.Line("name"), fmt.Errorf("the name is longer than %d characters", MaxName))
	case !nameRule.MatchString(name):
		return fail(fields.Line("name"), fmt.Errorf("name %q: want lowercase letters, digits and single hyphens, neither first nor last", name))
	case name != folder:
		return fail(fields.Line("name"), fmt.Errorf("name %q is not its folder's name %q", name, folder))
	case strings.TrimSpace(desc) == "":
		return fail(fields.Line("description"), errors.New("no description"))
	case utf8.RuneCountInString(desc) > MaxDescription:
		return fail(fields.Line("description"), fmt.Errorf("the description is longer than %d characters", MaxDescription))
	}
	return Skill{Name: name, Description: strings.TrimSpace(desc), Path: file, Body: body}, nil
}

// lineErr puts file before a frontmatter error at a line.
func lineErr(file string, err error) error {
	var fe *frontmatter.Error
	if errors.As(err, &fe) {
		return fmt.Errorf("%s:%d: %w", file, fe.Line, fe.Err)
	}
	return fmt.Errorf("%s: %w", file, err)
}

// Load reads the skills of dir, a folder of this machine (the user's
// ~/.pi-remote/skills): each subfolder with a SKILL.md, by name. The
// skills are the user's; a missing dir has none. Each SKILL.md that
// cannot be used is an error in problems, and left out.
func Load(dir string) (found []Skill, problems []error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			problems = append(problems, err)
		}
		return nil, problems
	}
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".") {
			continue
		}
		file := filepath.Join(dir, e.Name(), FileName)
		content, err := readHead(file)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			problems = append(problems, err)
			continue
		}
		s, err := Parse(file, content)
		if err != nil {
			problems = append(problems, err)
			continue
		}
		s.User = true
		found = append(found, s)
	}
	return found, problems
}

// readHead reads the first MaxFile bytes of a regular file.
func readHead(file string) (string, error) {
	fi, err := os.Stat(file)
	if err != nil {
		return "", err
	}
	if !fi.Mode().IsRegular() {
		return "", fmt.Errorf("%s: not a regular file", file)
	}
	f, err := os.Open(file)
	if err != nil {
		return "", err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, MaxFile))
	return string(b), err
}

// Hidden is a skill left out because another of the same name is used.
type Hidden struct {
	Skill, By Skill
}

func (h Hidden) String() string {
	why := "nearer the working directory"
	switch {
	case h.By.User && !h.Skill.User:
		why = "your own skills come before a project's"
	case h.By.Host != h.Skill.Host:
		why = "the default host's come first, then the other hosts' in order"
	case project(h.By.Path) == project(h.Skill.Path):
		why = ".agents comes before .claude"
	}
	return fmt.Sprintf("skill %q at %s%s is hidden by the one at %s%s (%s)", h.Skill.Name, h.Skill.Path, onHost(h.Skill.Host), h.By.Path, onHost(h.By.Host), why)
}

// project is the directory whose .agents or .claude holds the SKILL.md
// at file.
func project(file string) string {
	return path.Dir(path.Dir(path.Dir(path.Dir(file))))
}

func onHost(h string) string {
	if h == "" {
		return " on this machine"
	}
	return fmt.Sprintf(" on host %q", h)
}

// Resolve keeps one skill of each name: the first in order. The order a
// workspace gives is the precedence: the user's own skills
// (~/.pi-remote/skills) first, then the default host's project skills
// nearest the working directory first (.agents before .claude within a
// directory), then each other host's the same way. A repository cannot
// put its words in the place of a skill the user wrote, and the nearer
// project is the more specific one, as with AGENTS.md. The result is
// sorted by name; hidden lists the rest.
func Resolve(all []Skill) (kept []Skill, hidden []Hidden) {
	first := map[string]Skill{}
	for _, s := range all {
		if w, ok := first[s.Name]; ok {
			hidden = append(hidden, Hidden{Skill: s, By: w})
			continue
		}
		first[s.Name] = s
		kept = append(kept, s)
	}
	slices.SortFunc(kept, func(a, b Skill) int { return strings.Compare(a.Name, b.Name) })
	return kept, hidden
}

// Find is the skill called name in ss.
func Find(ss []Skill, name string) (Skill, bool) {
	i := slices.IndexFunc(ss, func(s Skill) bool { return s.Name == name })
	if i < 0 {
		return Skill{}, false
	}
	return ss[i], true
}

// Message is the user message /skill:NAME ARGS sends: the skill's body,
// said to be the skill's (its folder, for the files it names), then the
// person's words.
func (s Skill) Message(args string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Use the skill %q (%s%s). Paths in it are relative to %s.\n\n", s.Name, s.Path, onHost(s.Host), s.Dir())
	b.WriteString(strings.Trim(s.Body, "\n"))
	b.WriteString("\n")
	if args = strings.TrimSpace(args); args != "" {
		b.WriteString("\n" + args + "\n")
	}
	return b.String()
}
