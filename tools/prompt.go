package tools

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/pi-remote/pi-remote/env"
	"github.com/pi-remote/pi-remote/ops"
)

// DefaultIntro opens the system prompt unless the user gives their own.
const DefaultIntro = "You are an expert coding assistant. You help with software tasks by reading files, running commands, editing code and writing new files with the tools below."

// contextFileNames are the project instruction files, in order of
// preference within one directory.
var contextFileNames = []string{"AGENTS.md", "CLAUDE.md"}

// maxContextFile bounds what one context file adds to the prompt.
const maxContextFile = 64 << 10

// ContextFile is a project instruction file found on the host.
type ContextFile struct {
	Path    string
	Content string
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
}

// Describe asks the host who and where it is and reads the project context
// files from its working directory upwards (one command, one round trip).
// In each directory AGENTS.md is preferred to CLAUDE.md; files come root
// first, so the nearest one has the last word.
func Describe(ctx context.Context, e *env.ExecutionEnv) (HostInfo, []ContextFile, error) {
	cwd, err := e.Cwd(ctx)
	if err != nil {
		return HostInfo{}, nil, err
	}
	script := `printf '%s\0%s\0%s\0' "$(id -un 2>/dev/null)" "$(hostname 2>/dev/null || uname -n)" "$(uname -sm 2>/dev/null)"
d=$PWD
while :; do
	for f in ` + strings.Join(contextFileNames, " ") + `; do
		if [ -f "$d/$f" ] && [ -r "$d/$f" ]; then
			printf '%s\0' "${d%/}/$f"
			dd if="$d/$f" bs=` + fmt.Sprint(maxContextFile) + ` count=1 2>/dev/null | tr -d '\000'
			printf '\0'
			break
		fi
	done
	[ "$d" = / ] && break
	d=$(dirname "$d")
done`
	var out bytes.Buffer
	if err := e.Exec(ctx, ops.Command{Script: script, Dir: cwd, Output: &out}); err != nil {
		return HostInfo{}, nil, err
	}
	fields := strings.Split(out.String(), "\x00")
	info := HostInfo{Name: e.Name(), Cwd: cwd}
	if len(fields) >= 3 {
		info.User, info.Host, info.OS = fields[0], fields[1], fields[2]
	}
	var files []ContextFile
	for i := 3; i+1 < len(fields); i += 2 {
		files = append(files, ContextFile{Path: fields[i], Content: fields[i+1]})
	}
	// Found nearest first; the prompt lists them root first.
	for i, j := 0, len(files)-1; i < j; i, j = i+1, j-1 {
		files[i], files[j] = files[j], files[i]
	}
	return info, files, nil
}

// PromptParts are the pieces of a run's system prompt.
type PromptParts struct {
	Intro        string // DefaultIntro when empty
	Active       []Definition
	Hosts        []HostInfo
	ContextFiles []ContextFile
	Date         time.Time
}

// BuildSystemPrompt assembles the system prompt: intro, the active tools'
// snippets and guidelines, the hosts the tools act on, the date, and the
// project context files.
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
			continue
		}
		fmt.Fprintf(&b, "- Host %q: %s; working directory %s. Every path and command acts on this host, not on the machine running the agent.\n", h.Name, where, h.Cwd)
	}
	if len(p.Hosts) > 1 {
		fmt.Fprintf(&b, "- Every tool takes a \"host\" argument naming one of these hosts; without it the tool acts on %q. The same path on two hosts is two different files.\n", p.Hosts[0].Name)
	}
	fmt.Fprintf(&b, "- Current date: %s\n", p.Date.Format("2006-01-02"))
	if len(p.ContextFiles) > 0 {
		b.WriteString("\nProject context (instructions from the repository; follow them):\n")
		for _, f := range p.ContextFiles {
			fmt.Fprintf(&b, "\n## %s\n\n%s\n", f.Path, strings.TrimRight(f.Content, "\n"))
		}
	}
	return b.String()
}
