package workspace

import (
	"fmt"
	"io"
	"strings"

	"github.com/pi-remote/pi-remote/prompts"
	"github.com/pi-remote/pi-remote/skills"
	"github.com/pi-remote/pi-remote/tools"
)

// Command is a slash command the workspace gives every front end: a
// prompt template (/NAME) or a skill (/skill:NAME). Name has no slash.
type Command struct {
	Name, Description string
	// Skill says it is a skill's command.
	Skill bool
	// Path is the template's or the skill's file (on Host, for a skill).
	Path, Host string
}

// SkillPrefix begins a skill's command name.
const SkillPrefix = "skill:"

// Commands are the workspace's prompt templates, then its skills, each by
// name.
func (w *Workspace) Commands() []Command {
	var out []Command
	for _, t := range w.templates {
		out = append(out, Command{Name: t.Name, Description: t.Description, Path: t.Path})
	}
	for _, s := range w.Skills {
		out = append(out, Command{Name: SkillPrefix + s.Name, Description: s.Description, Skill: true, Path: s.Path, Host: s.Host})
	}
	return out
}

// Expand is the user message that /NAME ARGS stands for (name without
// its slash): a prompt template's text with ARGS put in, or a skill's
// body followed by ARGS. ok is false when name is neither.
func (w *Workspace) Expand(name, args string) (text string, ok bool) {
	if s, found := strings.CutPrefix(name, SkillPrefix); found {
		k, ok := skills.Find(w.Skills, s)
		if !ok {
			return "", false
		}
		return k.Message(args), true
	}
	t, ok := prompts.Find(w.templates, name)
	if !ok {
		return "", false
	}
	return t.Expand(args), true
}

// hostSkills parses the SKILL.md files Describe found on host, saying on
// warn which it left out and why.
func hostSkills(warn io.Writer, host string, files []tools.ContextFile) []skills.Skill {
	var out []skills.Skill
	for _, f := range files {
		if f.Skipped != "" {
			say(warn, "pi-remote: not using the skill at %s on host %q: %s\n", f.Path, host, f.Skipped)
			continue
		}
		s, err := skills.Parse(f.Path, f.Content)
		if err != nil {
			say(warn, "pi-remote: skill left out, on host %q: %v\n", host, err)
			continue
		}
		s.Host = host
		out = append(out, s)
	}
	return out
}

// resolveSkills makes the session's skills from the user's own and each
// host's (in w.Hosts' order, the default first): one of each name (see
// skills.Resolve). The user's skills are on this machine: a host that is
// this machine reads them; with none, only the person can use them
// (/skill:NAME), and the system prompt does not list them.
func (w *Workspace) resolveSkills() []skills.Skill {
	local := ""
	for _, h := range w.Hosts {
		if h.SSH == nil && h.Down == nil {
			local = h.Name
			break
		}
	}
	var all []skills.Skill
	for _, s := range w.userSkills {
		s.Host = local
		all = append(all, s)
	}
	for _, h := range w.Hosts {
		all = append(all, w.hostSkills[h.Name]...)
	}
	kept, hidden := skills.Resolve(all)
	w.hidden = hidden
	return kept
}

// promptSkills are the skills the system prompt lists: those on a host.
func promptSkills(ss []skills.Skill) []tools.PromptSkill {
	var out []tools.PromptSkill
	for _, s := range ss {
		if s.Host != "" {
			out = append(out, tools.PromptSkill{Name: s.Name, Description: s.Description, Host: s.Host, Path: s.Path})
		}
	}
	return out
}

// tellHidden says which skills of a name another skill hides.
func tellHidden(warn io.Writer, hidden []skills.Hidden) {
	for _, h := range hidden {
		say(warn, "pi-remote: %s\n", h)
	}
}

func say(w io.Writer, format string, args ...any) {
	if w != nil {
		fmt.Fprintf(w, format, args...)
	}
}
