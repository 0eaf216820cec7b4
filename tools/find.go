package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/pi-remote/pi-remote/env"
	"github.com/pi-remote/pi-remote/internal/shellquote"
	"github.com/pi-remote/pi-remote/loop"
	"github.com/pi-remote/pi-remote/ops"
)

type findInput struct {
	Pattern string `json:"pattern" jsonschema_description:"Glob pattern: '*.go' matches file names at any depth; patterns with '/' match the path, and '**' matches any number of directories (e.g. 'cmd/**/main.go'); '{go,md}' gives alternatives"`
	Path    string `json:"path,omitempty" jsonschema_description:"Directory to search (default: the working directory)"`
	Limit   int    `json:"limit,omitempty" jsonschema:"minimum=1" jsonschema_description:"Maximum number of results (default 1000)"`
}

// FindDetails are the find tool's details.
type FindDetails struct {
	Path         string `json:"path"`
	Results      int    `json:"results"`
	LimitReached bool   `json:"limitReached,omitempty"`
	Truncated    bool   `json:"truncated,omitempty"`
	Engine       string `json:"engine"` // "fd" or "find"
}

const defaultFindLimit = 1000

func findTool(e *env.ExecutionEnv) Definition {
	return Define(Definition{
		Name: "find",
		Description: fmt.Sprintf("Find files by glob pattern on the host. Respects .gitignore and .ignore, includes hidden files, skips .git and node_modules "+
			"(with fd when the host has it, otherwise find(1)). Returns paths relative to the search directory, one per line, sorted; "+
			"at most %d results by default (change with limit) or %dKB."+batchOrder, defaultFindLimit, MaxBytes/1024),
		PromptSnippet: "Find files by glob pattern",
		ReadOnly:      true,
		Admit:         AdmitUnder(e),
		RenderCall:    func(args json.RawMessage) string { return renderPathCall("find", args) },
	}, func(ctx context.Context, in findInput, _ func(loop.Result)) (loop.Result, error) {
		return runFind(ctx, e, in)
	})
}

// globMatch matches a relative, slash-separated path against a find
// pattern: without '/', the pattern matches the file name; with '/', it
// matches the whole path segment by segment, '**' standing for any number
// of segments.
func globMatch(pattern, rel string) bool {
	for _, p := range expandBraces(strings.TrimPrefix(pattern, "./")) {
		if !strings.Contains(p, "/") {
			if ok, err := path.Match(p, path.Base(rel)); err == nil && ok {
				return true
			}
		} else if matchSegments(strings.Split(p, "/"), strings.Split(rel, "/")) {
			return true
		}
	}
	return false
}

// expandBraces turns "*.{go,md}" into "*.go" and "*.md", as rg's and fd's
// globs read it (nested braces too). An unclosed brace is literal.
func expandBraces(pattern string) []string {
	open := strings.IndexByte(pattern, '{')
	if open < 0 {
		return []string{pattern}
	}
	depth, start := 0, open+1
	var alternatives []string
	for i := open; i < len(pattern); i++ {
		switch pattern[i] {
		case '{':
			depth++
		case ',':
			if depth == 1 {
				alternatives = append(alternatives, pattern[start:i])
				start = i + 1
			}
		case '}':
			if depth--; depth == 0 {
				alternatives = append(alternatives, pattern[start:i])
				var out []string
				for _, rest := range expandBraces(pattern[i+1:]) {
					for _, a := range alternatives {
						for _, e := range expandBraces(a) {
							out = append(out, pattern[:open]+e+rest)
						}
					}
				}
				return out
			}
		}
	}
	return []string{pattern}
}

func matchSegments(pat, segs []string) bool {
	for len(pat) > 0 {
		if pat[0] == "**" {
			for i := 0; i <= len(segs); i++ {
				if matchSegments(pat[1:], segs[i:]) {
					return true
				}
			}
			return false
		}
		if len(segs) == 0 {
			return false
		}
		ok, err := path.Match(pat[0], segs[0])
		if err != nil || !ok {
			return false
		}
		pat, segs = pat[1:], segs[1:]
	}
	return len(segs) == 0
}

// nameFilter is the last pattern segment when it can narrow the listing on
// the host (a plain name glob), or "".
func nameFilter(pattern string) string {
	last := path.Base(pattern)
	if last == "**" || last == "." || last == "/" {
		return ""
	}
	return last
}

// fdScript is the fd command for a search. fd's complaints (an unreadable
// directory) come after its NUL-terminated paths, behind an empty record,
// so they are never taken for paths. The pattern is fd's positional
// operand, after "--": fd's --glob is a switch, not an option taking the
// pattern, so without "--" a pattern such as "--exec=rm" is an option.
func fdScript(fd, pattern, dir string) string {
	name := nameFilter(pattern)
	if name == "" {
		name = "*"
	}
	search := shellquote.Join(fd, "--type=f", "--type=l", "--hidden", "--exclude=.git", "--exclude=node_modules", "--color=never", "--show-errors", "--print0", "--glob", "--", name)
	return "cd -- " + shellquote.Quote(dir) + " && { errors=$(" + search + " 2>&1 >&3); } 3>&1; status=$?; printf '\\0%s' \"$errors\"; exit $status"
}

// searchFiles lists the files and links below dir that pattern may match,
// relative to dir, with the directories that could not be read: by fd, or
// without it by walking the tree as fd would.
func searchFiles(ctx context.Context, e *env.ExecutionEnv, fd, pattern, dir string) (paths, complaints []string, err error) {
	if fd == "" {
		tree, err := describeTree(ctx, e, dir)
		if err != nil {
			return nil, nil, err
		}
		return tree.visible("fl"), tree.complaints, nil
	}
	var out bytes.Buffer
	err = e.Exec(ctx, ops.Command{Script: fdScript(fd, pattern, dir), Dir: dir, Output: &out})
	if err != nil && (ctx.Err() != nil || out.Len() == 0) {
		return nil, nil, err
	}
	list, rest, _ := strings.Cut(out.String(), "\x00\x00")
	if strings.HasPrefix(out.String(), "\x00") {
		list, rest = "", out.String()[1:]
	}
	for _, p := range strings.Split(list, "\x00") {
		if p = strings.TrimPrefix(p, "./"); p != "" {
			paths = append(paths, p)
		}
	}
	for _, l := range strings.Split(strings.TrimSpace(rest), "\n") {
		if l = strings.TrimSpace(l); l != "" {
			complaints = append(complaints, l)
		}
	}
	return paths, complaints, nil
}

func runFind(ctx context.Context, e *env.ExecutionEnv, in findInput) (loop.Result, error) {
	if in.Pattern == "" {
		return errorResult("The pattern is empty.")
	}
	if _, err := path.Match(nameFilter(in.Pattern), ""); err != nil {
		return errorResult("Invalid glob pattern %q: %v", in.Pattern, err)
	}
	abs, res := searchTarget(ctx, e, in.Path)
	if res != nil {
		return *res, nil
	}
	dir := abs
	caps, err := e.Capabilities(ctx)
	if err != nil {
		return fileError(in.Path, err)
	}
	engine := "fd"
	if caps.Fd == "" {
		engine = "find"
	}
	paths, complaints, err := searchFiles(ctx, e, caps.Fd, in.Pattern, dir)
	if err != nil && ctx.Err() != nil {
		return errorResult("Search aborted.")
	} else if errors.Is(err, ops.ErrNotDir) {
		// The search starts by entering the path (no separate stat).
		return errorResult("Not a directory: %s. find searches directories.", in.Path)
	} else if err != nil {
		return fileError(in.Path, err)
	}
	var found []string
	for _, p := range paths {
		if globMatch(in.Pattern, p) {
			found = append(found, strings.ToValidUTF8(p, "\uFFFD"))
		}
	}
	slices.Sort(found)
	limit := in.Limit
	if limit == 0 {
		limit = defaultFindLimit
	}
	details := FindDetails{Path: abs, Engine: engine}
	var skipped string
	if len(complaints) > 0 {
		skipped = fmt.Sprintf("Some directories could not be searched (%d): %s", len(complaints), strings.ToValidUTF8(complaints[0], "\uFFFD"))
		if len(complaints) > 1 {
			skipped += " ..."
		}
	}
	if len(found) == 0 {
		text := fmt.Sprintf("No files found matching %s.", in.Pattern)
		if skipped != "" {
			text = withNotice(text, skipped+".")
		}
		return loop.Result{Content: loop.ContentList{&loop.Text{Text: text}}, Details: details}, nil
	}
	total := len(found)
	if len(found) > limit {
		found = found[:limit]
		details.LimitReached = true
	}
	t := truncateHead(strings.Join(found, "\n")+"\n", len(found)+1, MaxBytes)
	details.Results, details.Truncated = t.OutputLines, t.Truncated
	var notices []string
	if details.LimitReached {
		notices = append(notices, fmt.Sprintf("%d of %d results shown (limit %d). Use limit=%d for more, or refine the pattern.", limit, total, limit, min(total, limit*2)))
	}
	if t.Truncated {
		notices = append(notices, fmt.Sprintf("Output cut at the %s limit after %d results. Refine the pattern or search a narrower path.", formatSize(MaxBytes), t.OutputLines))
	}
	if skipped != "" {
		notices = append(notices, skipped+".")
	}
	return loop.Result{Content: loop.ContentList{&loop.Text{Text: listText(t, notices...)}}, Details: details}, nil
}
