package tools

import (
	"bytes"
	"context"
	_ "embed"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/pi-remote/pi-remote/env"
	"github.com/pi-remote/pi-remote/internal/shellquote"
	"github.com/pi-remote/pi-remote/ops"
)

// DefaultIntro opens the system prompt unless the user gives their own.
const DefaultIntro = "You are an expert coding assistant. You help with software tasks by reading files, running commands, editing code and writing new files with the tools below."

// contextFileNames are the context files, in order of preference within
// one directory.
var contextFileNames = []string{"AGENTS.md", "CLAUDE.md"}

// maxContextFile bounds what one context file adds to the prompt, and the
// part of a SKILL.md read.
const maxContextFile = 64 << 10

// maxSkills bounds the skills read from one skills directory.
const maxSkills = 100

// ContextFile is a context file (AGENTS.md, CLAUDE.md) found on the host.
type ContextFile struct {
	Path    string
	Content string
	// Skipped, when set, says why the file was left out of the prompt:
	// another user of the host could have written it. Content is empty
	// then.
	Skipped string
}

// HostInfo describes the environment the tools act on.
type HostInfo struct {
	Name string // "local", "devbox"
	User string
	Host string
	OS   string
	Cwd  string
	// Unreachable says why the host could not be reached when the
	// session started; its calls are tried again.
	Unreachable string
	// Permissions says what the host's permission mode lets the agent
	// do ("": nothing to say).
	Permissions string
	// SkillFiles are the SKILL.md files of the working directory's
	// .agents/skills and .claude/skills and of each directory above it,
	// nearest first (.agents before .claude in one directory): each read
	// whole up to 64 KiB, or skipped, and why (then its Path may be a
	// directory on the way that was left out).
	SkillFiles []ContextFile
}

// contextSh is the host side of Describe.
//
//go:embed context.sh
var contextSh string

// Describe asks the host who and where it is and reads the context files
// and the skills (HostInfo.SkillFiles) from its working directory upwards
// (one command, one round trip). In each directory AGENTS.md is preferred
// to CLAUDE.md; files come root first, so the nearest one has the last
// word. A file is read only when the host's user or root owns it and its
// directory and no other user may write either (a sticky directory
// protects its files): otherwise it is listed with the reason it was
// skipped. A skill's folders up to the directory holding .agents or
// .claude are held to the same rules.
func Describe(ctx context.Context, e *env.ExecutionEnv) (HostInfo, []ContextFile, error) {
	cwd, err := e.Cwd(ctx)
	if err != nil {
		return HostInfo{}, nil, err
	}
	script := contextSh + "\ndescribe_host " + shellquote.Join(append([]string{fmt.Sprint(maxContextFile), fmt.Sprint(maxSkills)}, contextFileNames...)...) + "\n"
	var out bytes.Buffer
	if err := e.Exec(ctx, ops.Command{Script: script, Dir: cwd, Output: &out, Label: "describe the host"}); err != nil {
		return HostInfo{}, nil, err
	}
	info, files := parseDescription(out.String())
	info.Name, info.Cwd = e.Name(), cwd
	return info, files, nil
}

// parseDescription reads the records of describe_host (context.sh).
func parseDescription(out string) (HostInfo, []ContextFile) {
	fields := strings.Split(out, "\x00")
	var info HostInfo
	if len(fields) >= 3 {
		info.User, info.Host, info.OS = fields[0], fields[1], fields[2]
	}
	var files []ContextFile
	for i := 3; i+1 < len(fields); i += 2 {
		if path, ok := strings.CutPrefix(fields[i], "F"); ok {
			files = append(files, ContextFile{Path: path, Content: fields[i+1]})
		} else if path, ok := strings.CutPrefix(fields[i], "S"); ok {
			files = append(files, ContextFile{Path: path, Skipped: skipReason(fields[i+1])})
		} else if path, ok := strings.CutPrefix(fields[i], "K"); ok {
			info.SkillFiles = append(info.SkillFiles, ContextFile{Path: path, Content: fields[i+1]})
		} else if path, ok := strings.CutPrefix(fields[i], "X"); ok {
			info.SkillFiles = append(info.SkillFiles, ContextFile{Path: path, Skipped: skillSkipReason(fields[i+1])})
		}
	}
	// Found nearest first; the prompt lists them root first.
	slices.Reverse(files)
	return info, files
}

// skipReason says in words why describe_host left a file out.
func skipReason(r string) string {
	code, uid, _ := strings.Cut(r, " ")
	switch code {
	case "owner":
		return fmt.Sprintf("it is owned by uid %s, neither you nor root", uid)
	case "writable":
		return "other users may write to it"
	case "link-dir":
		return "it is a symbolic link into a directory another user owns or may write, so they choose the file it leads to"
	case "linked":
		return "it has other names (hard links) and other users may write to its directory, so one of them could have linked it there"
	case "dir-owner":
		return fmt.Sprintf("its directory is owned by uid %s, who could replace it", uid)
	case "dir-writable":
		return "other users may write to its directory, which is not sticky, so they could replace it"
	}
	return "its owner could not be checked"
}

// skillSkipReason says in words why describe_skills left a SKILL.md, or
// a directory on the way to it, out.
func skillSkipReason(r string) string {
	code, uid, _ := strings.Cut(r, " ")
	switch code {
	case "dir-owner":
		return fmt.Sprintf("it is owned by uid %s, neither you nor root", uid)
	case "dir-writable":
		return "other users may write to it, and it is not sticky"
	}
	return skipReason(r)
}

// PromptParts are the pieces of a run's system prompt.
type PromptParts struct {
	Intro        string // DefaultIntro when empty
	Active       []Definition
	Hosts        []HostInfo
	ContextFiles []ContextFile
	// Skills are listed (never their bodies: the model reads a skill's
	// file when it needs it).
	Skills []PromptSkill
	Date   time.Time
}

// PromptSkill is a skill as the system prompt lists it: the model reads
// the file at Path on Host with the read tool.
type PromptSkill struct {
	Name, Description, Host, Path string
}

// BuildSystemPrompt assembles the system prompt: intro, the active tools'
// snippets and guidelines, the hosts the tools act on, the date, the
// skills (when the read tool is active: it is how a skill is used), and
// the project context files.
func BuildSystemPrompt(p PromptParts) string {
	var b strings.Builder
	intro := p.Intro
	if intro == "" {
		intro = DefaultIntro
	}
	b.WriteString(strings.TrimSpace(intro) + "\n\n")
	b.WriteString(SystemPrompt(p.Active))
	b.WriteString("\nEnvironment:\n")
	for _, h := range p.Hosts {
		where := h.Host
		if h.User != "" {
			where = h.User + "@" + h.Host
		}
		if h.OS != "" {
			where += " (" + h.OS + ")"
		}
		if h.Unreachable != "" {
			fmt.Fprintf(&b, "- Host %q: %s; unreachable when this session started (%s). Its calls fail until it answers; each call tries again.\n", h.Name, where, h.Unreachable)
		} else {
			fmt.Fprintf(&b, "- Host %q: %s; working directory %s. Every path and command acts on this host, not on the machine running the agent.\n", h.Name, where, h.Cwd)
		}
		if h.Permissions != "" {
			fmt.Fprintf(&b, "  Permission mode on %q: %s.\n", h.Name, h.Permissions)
		}
	}
	if len(p.Hosts) > 1 {
		fmt.Fprintf(&b, "- Every tool takes a \"host\" argument naming one of these hosts; without it the tool acts on %q. The same path on two hosts is two different files.\n", p.Hosts[0].Name)
	}
	fmt.Fprintf(&b, "- Current date: %s\n", p.Date.Format("2006-01-02"))
	if len(p.Skills) > 0 && slices.ContainsFunc(p.Active, func(d Definition) bool { return d.Name == "read" }) {
		b.WriteString("\nSkills: instructions for particular kinds of task, each in a SKILL.md file on a host. When a task matches a skill's description, read its file with the read tool on that host before you start and follow it; paths it names are relative to its folder.\n")
		for _, k := range p.Skills {
			fmt.Fprintf(&b, "- %s (host %q, %s): %s\n", k.Name, k.Host, k.Path, strings.Join(strings.Fields(k.Description), " "))
		}
	}
	var files []ContextFile
	for _, f := range p.ContextFiles {
		if f.Skipped == "" {
			files = append(files, f)
		}
	}
	if len(files) > 0 {
		// They come from the default host's working directory upwards.
		host, who := "", "the host's user"
		if len(p.Hosts) > 0 {
			host = fmt.Sprintf(" on host %q", p.Hosts[0].Name)
			if p.Hosts[0].User != "" {
				who = p.Hosts[0].User
			}
		}
		fmt.Fprintf(&b, "\nContext files%s: the AGENTS.md or CLAUDE.md of the working directory and of each directory above it, outermost first; each is owned by %s or root, in a directory no other user may change. Follow them where they apply:\n", host, who)
		for _, f := range files {
			fmt.Fprintf(&b, "\n## %s\n\n%s\n", f.Path, strings.TrimRight(f.Content, "\n"))
		}
	}
	return b.String()
}
