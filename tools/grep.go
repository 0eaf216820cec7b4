package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/pi-remote/pi-remote/env"
	"github.com/pi-remote/pi-remote/internal/shellquote"
	"github.com/pi-remote/pi-remote/loop"
	"github.com/pi-remote/pi-remote/ops"
)

type grepInput struct {
	Pattern    string `json:"pattern" jsonschema_description:"Search pattern (a regular expression unless literal is true)"`
	Path       string `json:"path,omitempty" jsonschema_description:"Directory or file to search (default: the working directory)"`
	Glob       string `json:"glob,omitempty" jsonschema_description:"Only search files whose name matches this glob, e.g. '*.go'"`
	IgnoreCase bool   `json:"ignoreCase,omitempty" jsonschema_description:"Case-insensitive search"`
	Literal    bool   `json:"literal,omitempty" jsonschema_description:"Treat the pattern as a literal string"`
	Context    int    `json:"context,omitempty" jsonschema:"minimum=0,maximum=100" jsonschema_description:"Lines of context before and after each match"`
	Limit      int    `json:"limit,omitempty" jsonschema:"minimum=1" jsonschema_description:"Maximum number of matches (default 100)"`
}

// GrepDetails are the grep tool's details.
type GrepDetails struct {
	Path         string `json:"path"`
	Matches      int    `json:"matches"`
	LimitReached bool   `json:"limitReached,omitempty"`
	Truncated    bool   `json:"truncated,omitempty"`
	LinesCut     bool   `json:"linesCut,omitempty"`
	Engine       string `json:"engine"` // "rg" or "grep"
}

const defaultGrepLimit = 100

func grepTool(e *env.ExecutionEnv) Definition {
	return define(Definition{
		Name: "grep",
		Description: fmt.Sprintf("Search file contents on the host. Uses ripgrep when available (respects .gitignore, includes hidden files, skips .git and node_modules), "+
			"otherwise grep. Output lines are 'path:LINE: text' for matches and 'path-LINE- text' for context, with paths relative to the searched directory. "+
			"Returns at most %d matches by default (change with limit) or %dKB; long lines are cut at %d characters.", defaultGrepLimit, MaxBytes/1024, MaxGrepLine),
		PromptSnippet: "Search file contents for patterns",
		RenderCall:    func(args json.RawMessage) string { return renderPathCall("grep", args) },
	}, func(ctx context.Context, in grepInput, _ func(loop.Result)) (loop.Result, error) {
		return runGrep(ctx, e, in)
	})
}

// searchTarget resolves a search path to the directory to run in. It does
// not ask the host what the path is: the search command itself starts by
// entering it, and a path that turns out to be a file (ops.ErrNotDir from
// that) is searched from its parent directory. A search of a directory is
// then one round trip.
func searchTarget(ctx context.Context, e *env.ExecutionEnv, p string) (abs string, res *loop.Result) {
	if p == "" {
		p = "."
	}
	abs, err := e.Resolve(ctx, p)
	if err != nil {
		r := loop.ErrorResult(fmt.Sprintf("Invalid path %q: %v", p, err))
		return "", &r
	}
	return abs, nil
}

// grepScript builds the search command for the host's engine.
func grepScript(caps env.Capabilities, in grepInput, dir, file string) (string, string) {
	var w []string
	engine := "rg"
	if caps.Rg != "" {
		w = []string{caps.Rg, "--line-number", "--with-filename", "--no-heading", "--color=never", "--null", "--hidden", "--sort", "path", "--glob", "!.git", "--glob", "!node_modules"}
		if in.IgnoreCase {
			w = append(w, "--ignore-case")
		}
		if in.Literal {
			w = append(w, "--fixed-strings")
		}
		if in.Context > 0 {
			w = append(w, "--context", fmt.Sprint(in.Context))
		}
		if in.Glob != "" {
			w = append(w, "--glob", in.Glob)
		}
		w = append(w, "--regexp", in.Pattern)
		if file != "" {
			w = append(w, "--", file)
		}
	} else {
		engine = "grep"
		w = []string{"grep", "--line-number", "--with-filename", "--null", "--binary-files=without-match"}
		if file == "" {
			w = append(w, "--recursive", "--exclude-dir=.git", "--exclude-dir=node_modules")
		}
		if in.IgnoreCase {
			w = append(w, "--ignore-case")
		}
		if in.Literal {
			w = append(w, "--fixed-strings")
		} else {
			w = append(w, "--extended-regexp")
		}
		if in.Context > 0 {
			w = append(w, "--context="+fmt.Sprint(in.Context))
		}
		if in.Glob != "" {
			w = append(w, "--include="+in.Glob)
		}
		w = append(w, "--regexp="+in.Pattern, "--")
		if file != "" {
			w = append(w, file)
		} else {
			w = append(w, ".")
		}
	}
	return "cd " + shellquote.Quote(dir) + " && " + shellquote.Join(w...), engine
}

// grepCollector parses NUL-separated search output as it streams and stops
// the search once the match limit is passed.
type grepCollector struct {
	limit  int
	cancel context.CancelFunc
	// sorted collects every line first and replays them in path order
	// (grep walks directories in readdir order; rg with --sort path in
	// name order), so both engines give the same result.
	sorted   bool
	held     []heldLine
	overflow bool // held lines hit maxHeldLines; the rest was not read

	mu           sync.Mutex
	partial      []byte
	out          strings.Builder
	messages     []string
	matches      int
	limitReached bool
	linesCut     bool
}

func (g *grepCollector) Write(p []byte) (int, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.partial = append(g.partial, p...)
	for {
		i := bytes.IndexByte(g.partial, '\n')
		if i < 0 {
			break
		}
		g.line(string(g.partial[:i]))
		g.partial = g.partial[i+1:]
	}
	return len(p), nil
}

// heldLine is one output line kept for sorting.
type heldLine struct {
	path string
	line string
}

// maxHeldLines bounds what a sorted search keeps before giving up on the
// rest (it then reports the match limit as reached).
const maxHeldLines = 200000

func (g *grepCollector) flush() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(g.partial) > 0 {
		g.line(string(g.partial))
		g.partial = nil
	}
	if g.sorted {
		held := g.held
		g.sorted, g.held = false, nil
		slices.SortStableFunc(held, func(a, b heldLine) int { return comparePaths(a.path, b.path) })
		for _, h := range held {
			g.line(h.line)
		}
		if g.overflow {
			g.limitReached = true
		}
	}
}

// comparePaths orders paths component by component, as a sorted directory
// walk visits them ("a/x" before "a-b/x").
func comparePaths(a, b string) int {
	as, bs := strings.Split(a, "/"), strings.Split(b, "/")
	for i := 0; i < len(as) && i < len(bs); i++ {
		if c := strings.Compare(as[i], bs[i]); c != 0 {
			return c
		}
	}
	return len(as) - len(bs)
}

func (g *grepCollector) line(l string) {
	if g.limitReached {
		return
	}
	if g.sorted {
		if g.overflow {
			return
		}
		name, _, ok := strings.Cut(l, "\x00")
		if !ok {
			g.line0(l)
			return
		}
		if len(g.held) == maxHeldLines {
			g.overflow = true
			g.cancel()
			return
		}
		g.held = append(g.held, heldLine{path: strings.TrimPrefix(name, "./"), line: l})
		return
	}
	g.line0(l)
}

// line0 handles one line in output order.
func (g *grepCollector) line0(l string) {
	if g.limitReached {
		return
	}
	name, rest, ok := strings.Cut(l, "\x00")
	if !ok {
		if l != "--" && l != "" {
			g.messages = append(g.messages, l)
		}
		return
	}
	name = strings.TrimPrefix(name, "./")
	n := 0
	for n < len(rest) && rest[n] >= '0' && rest[n] <= '9' {
		n++
	}
	if n == 0 || n == len(rest) {
		return
	}
	num, sep, text := rest[:n], rest[n], rest[n+1:]
	if sep == ':' {
		if g.matches == g.limit {
			g.limitReached = true
			g.cancel()
			return
		}
		g.matches++
	} else if sep != '-' {
		return
	}
	text = strings.TrimSuffix(text, "\r")
	if utf8.RuneCountInString(text) > MaxGrepLine {
		runes := []rune(text)
		text = string(runes[:MaxGrepLine]) + "... [line cut]"
		g.linesCut = true
	}
	text = strings.ToValidUTF8(text, "\uFFFD")
	name = strings.ToValidUTF8(name, "\uFFFD")
	fmt.Fprintf(&g.out, "%s%c%s%c %s\n", name, sep, num, sep, text)
}

func runGrep(ctx context.Context, e *env.ExecutionEnv, in grepInput) (loop.Result, error) {
	if in.Pattern == "" {
		return errorResult("The pattern is empty.")
	}
	abs, res := searchTarget(ctx, e, in.Path)
	if res != nil {
		return *res, nil
	}
	caps, err := e.Capabilities(ctx)
	if err != nil {
		return fileError(in.Path, err)
	}
	limit := in.Limit
	if limit == 0 {
		limit = defaultGrepLimit
	}
	search := func(dir, file string) (*grepCollector, string, error) {
		script, engine := grepScript(caps, in, dir, file)
		runCtx, cancel := context.WithCancel(ctx)
		defer cancel()
		g := &grepCollector{limit: limit, cancel: cancel, sorted: engine == "grep" && file == ""}
		err := e.Exec(runCtx, ops.Command{Script: script, Dir: dir, Output: g})
		g.flush()
		return g, engine, err
	}
	g, engine, execErr := search(abs, "")
	if errors.Is(execErr, ops.ErrNotDir) && ctx.Err() == nil {
		// A file: search it from its directory.
		g, engine, execErr = search(path.Dir(abs), path.Base(abs))
	}
	var pe *fs.PathError
	if errors.As(execErr, &pe) && ctx.Err() == nil {
		return fileError(in.Path, execErr)
	}
	if ctx.Err() != nil {
		return errorResult("Search aborted.")
	}
	var exit *ops.ExitError
	failed := false
	switch {
	case execErr == nil, g.limitReached && errors.Is(execErr, context.Canceled):
	case errors.As(execErr, &exit) && exit.Code == 1 && len(g.messages) == 0:
	case errors.As(execErr, &exit):
		failed = true
	default:
		return fileError(in.Path, execErr)
	}
	details := GrepDetails{Path: abs, Matches: g.matches, LimitReached: g.limitReached, LinesCut: g.linesCut, Engine: engine}
	if g.matches == 0 {
		if failed {
			return loop.Result{Content: loop.ContentList{&loop.Text{Text: fmt.Sprintf("Search failed: %s", strings.Join(g.messages, "\n"))}}, Details: details, IsError: true}, nil
		}
		return loop.Result{Content: loop.ContentList{&loop.Text{Text: "No matches found."}}, Details: details}, nil
	}
	t := truncateHead(g.out.String(), 1<<30, MaxBytes)
	details.Truncated = t.Truncated
	var notices []string
	if g.limitReached {
		notices = append(notices, fmt.Sprintf("%d matches limit reached. Use limit=%d for more, or refine the pattern.", limit, limit*2))
	}
	if t.Truncated {
		notices = append(notices, fmt.Sprintf("Output cut at the %s limit. Refine the pattern or search a narrower path.", formatSize(MaxBytes)))
	}
	if g.linesCut {
		notices = append(notices, fmt.Sprintf("Some lines were cut at %d characters; use read to see them whole.", MaxGrepLine))
	}
	if failed && len(g.messages) > 0 {
		notices = append(notices, "Some files could not be searched: "+strings.Join(g.messages, "; "))
	}
	return loop.Result{Content: loop.ContentList{&loop.Text{Text: listText(t, notices...)}}, Details: details}, nil
}
