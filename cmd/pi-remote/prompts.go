package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/pi-remote/pi-remote/agent"
	"github.com/pi-remote/pi-remote/prompts"
	"github.com/pi-remote/pi-remote/skills"
	"github.com/pi-remote/pi-remote/tui"
	"github.com/pi-remote/pi-remote/workspace"
)

// loadSkillsAndTemplates reads the user's own skills (~/.pi-remote/skills)
// and the prompt templates: the user's (~/.pi-remote/prompts) and, when
// the user trusts the project — the directory pi-remote runs in, whose
// .pi-remote/settings.json is the project's settings, on this machine
// whatever the host — the project's (.pi-remote/prompts). What it leaves
// out, and why, goes to warn. (Each host's project skills are found when
// the workspace describes it.)
func loadSkillsAndTemplates(s settings, warn io.Writer) ([]skills.Skill, []prompts.Template) {
	home, err := os.UserHomeDir()
	if err != nil {
		return nil, nil
	}
	userDir := filepath.Join(home, ".pi-remote")
	mine, problems := skills.Load(filepath.Join(userDir, "skills"))
	for _, p := range problems {
		fmt.Fprintf(warn, "pi-remote: skill left out: %v\n", p)
	}
	user, problems := prompts.Load(filepath.Join(userDir, "prompts"), true, nil)
	var project []prompts.Template
	if dir := s.loaded.ProjectDir; dir != "" && !sameDir(dir, home) {
		projectPrompts := filepath.Join(dir, ".pi-remote", "prompts")
		if s.loaded.Trusted {
			var more []error
			project, more = prompts.Load(projectPrompts, false, agent.ProjectFileRefusal)
			problems = append(problems, more...)
		} else if fi, err := os.Stat(projectPrompts); err == nil && fi.IsDir() {
			fmt.Fprintf(warn, "pi-remote: not using the prompt templates in %s, as you have not trusted the project %s (add it to \"trustedProjects\" in ~/.pi-remote/settings.json, or pass --trust-project)\n", projectPrompts, dir)
		}
	}
	for _, p := range problems {
		fmt.Fprintf(warn, "pi-remote: prompt template left out: %v\n", p)
	}
	templates, notes := prompts.Resolve(user, project, tui.BuiltinCommands())
	for _, n := range notes {
		fmt.Fprintf(warn, "pi-remote: %s\n", n)
	}
	return mine, templates
}

// sameDir says whether a and b are one directory.
func sameDir(a, b string) bool {
	ai, err := os.Stat(a)
	if err != nil {
		return false
	}
	bi, err := os.Stat(b)
	return err == nil && os.SameFile(ai, bi)
}

// promptCommands are the workspace's templates and skills as the
// terminal offers them.
func promptCommands(w *workspace.Workspace) []tui.PromptCommand {
	var out []tui.PromptCommand
	for _, c := range w.Commands() {
		out = append(out, tui.PromptCommand{Name: c.Name, Description: c.Description})
	}
	return out
}
