package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"regexp"
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
	Glob       string `json:"glob,omitempty" jsonschema_description:"Only search files whose name matches this glob, e.g. '*.go' or '*.{ts,tsx}'"`
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

// errNewlineInName is the POSIX grep search of a file whose name holds a
// newline.
var errNewlineInName = errors.New("file name holds a newline")

// rgOnlySyntax finds Rust regex syntax that POSIX grep -E may not know.
var rgOnlySyntax = regexp.MustCompile(`\\[dDwWsSbB]|\(\?`)

func grepTool(e *env.ExecutionEnv) Definition {
	return Define(Definition{
		Name: "grep",
		Description: fmt.Sprintf("Search file contents on the host. Respects .gitignore and .ignore, includes hidden files, skips binary files, .git and node_modules. "+
			"Uses ripgrep (Rust regex syntax) when the host has it, otherwise grep -E (POSIX extended regex: no \\d, \\w or lookaround). Output lines are 'path:LINE: text' for matches and 'path-LINE- text' for context, with paths relative to the searched directory. "+
			"Returns at most %d matches by default (change with limit) or %dKB; long lines are cut at %d characters."+batchOrder, defaultGrepLimit, MaxBytes/1024, MaxGrepLine),
		PromptSnippet: "Search file contents for patterns",
		ReadOnly:      true,
		Admit:         AdmitUnder(e),
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

// rgScript is the ripgrep command for a search of dir, or of file in it.
// What the model gives is never a word of its own that rg could read as an
// option: the glob and the pattern are glued to their option ("--glob=-x"),
// and the file is "./"-prefixed after "--" (rg reads a bare "-" as standard
// input even there).
func rgScript(rg string, in grepInput, dir, file string) string {
	w := []string{rg, "--line-number", "--with-filename", "--no-heading", "--color=never", "--null", "--hidden", "--sort=path", "--glob=!.git", "--glob=!node_modules"}
	if in.IgnoreCase {
		w = append(w, "--ignore-case")
	}
	if in.Literal {
		w = append(w, "--fixed-strings")
	}
	if in.Context > 0 {
		w = append(w, fmt.Sprintf("--context=%d", in.Context))
	}
	if in.Glob != "" {
		w = append(w, "--glob="+in.Glob)
	}
	w = append(w, "--regexp="+in.Pattern)
	if file != "" {
		w = append(w, "--", "./"+file)
	}
	return "cd -- " + shellquote.Quote(dir) + " && " + shellquote.Join(w...)
}

// grepScript is the POSIX grep command for files (each "./"-prefixed, so
// none reads as an option) in dir: search_text_files of search.sh.
func grepScript(in grepInput, dir string, files []string) string {
	args := []string{fmt.Sprint(in.Context)}
	if in.IgnoreCase {
		args = append(args, "-i")
	}
	if in.Literal {
		args = append(args, "-F")
	} else {
		args = append(args, "-E")
	}
	// The pattern is -e's argument, which getopt takes whatever it looks
	// like; the files are "./"-prefixed.
	args = append(args, "-e", in.Pattern)
	return hostScript(dir, "printf '%s\\0' "+shellquote.Join(files...)+" | search_text_files "+shellquote.Join(args...))
}

// grepCollector parses search output as it streams and stops the search
// once the match limit is passed.
type grepCollector struct {
	limit  int
	cancel context.CancelFunc
	// files, when set, are the files POSIX grep searches, in its order. Its
	// lines, "FILE:N:text" or "FILE-N-text", have no NUL after the name
	// (rg's have): the name is found by trying the files in turn.
	files []string
	next  int

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

func (g *grepCollector) flush() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(g.partial) > 0 {
		g.line(string(g.partial))
		g.partial = nil
	}
}

// split separates a line's file name from "N:text" or "N-text".
func (g *grepCollector) split(l string) (name, rest string, ok bool) {
	if g.files == nil {
		return strings.Cut(l, "\x00")
	}
	for i := g.next; i < len(g.files); i++ {
		f := g.files[i]
		if !strings.HasPrefix(l, f) || len(l) < len(f)+3 {
			continue
		}
		sep, rest := l[len(f)], l[len(f)+1:]
		n := 0
		for n < len(rest) && rest[n] >= '0' && rest[n] <= '9' {
			n++
		}
		if (sep == ':' || sep == '-') && n > 0 && n < len(rest) && rest[n] == sep {
			g.next = i
			return f, rest, true
		}
	}
	return "", "", false
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
	name, rest, ok := g.split(l)
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
		runCtx, cancel := context.WithCancel(ctx)
		defer cancel()
		g := &grepCollector{limit: limit, cancel: cancel}
		if caps.Rg != "" {
			err := e.Exec(runCtx, ops.Command{Script: rgScript(caps.Rg, in, dir, file), Dir: dir, Output: g})
			g.flush()
			return g, "rg", err
		}
		// Without rg: the tree as rg would walk it, then grep on its files.
		// grep names the files that match one a line: a name holding a
		// newline would come back as two names.
		if strings.Contains(file, "\n") {
			return g, "grep", errNewlineInName
		}
		files := []string{file}
		if file == "" {
			tree, err := describeTree(runCtx, e, dir)
			if err != nil {
				return g, "grep", err
			}
			files = files[:0]
			// As rg's --glob: "!GLOB" leaves out what GLOB matches.
			glob, exclude := strings.CutPrefix(in.Glob, "!")
			for _, f := range tree.visible("f") {
				if (glob == "" || globMatch(glob, f) != exclude) && !strings.Contains(f, "\n") {
					files = append(files, f)
				}
			}
			g.messages = tree.complaints
		}
		for i, f := range files {
			files[i] = "./" + f
		}
		if len(files) == 0 {
			return g, "grep", nil
		}
		g.files = files
		err := e.Exec(runCtx, ops.Command{Script: grepScript(in, dir, files), Dir: dir, Output: g})
		g.flush()
		return g, "grep", err
	}
	g, engine, execErr := search(abs, "")
	if errors.Is(execErr, ops.ErrNotDir) && ctx.Err() == nil {
		// A file: search it from its directory.
		g, engine, execErr = search(path.Dir(abs), path.Base(abs))
	}
	if errors.Is(execErr, errNewlineInName) {
		return errorResult("This host has no ripgrep, and grep cannot search %s: its name holds a newline. Rename it, or read it.", in.Path)
	}
	var pe *fs.PathError
	if errors.As(execErr, &pe) && ctx.Err() == nil {
		return fileError(in.Path, execErr)
	}
	if ctx.Err() != nil {
		return errorResult("Search aborted.")
	}
	var exit *ops.ExitError
	// Complaints (an unreadable file or directory) make a search that
	// found nothing a failure, and are a notice beside what it found.
	failed := len(g.messages) > 0
	switch {
	case execErr == nil, g.limitReached && errors.Is(execErr, context.Canceled):
	case errors.As(execErr, &exit) && (exit.Code == 1 || exit.Code == 123):
		// No match (123: xargs saying a grep found none).
	case errors.As(execErr, &exit):
		failed = true
	default:
		return fileError(in.Path, execErr)
	}
	details := GrepDetails{Path: abs, Matches: g.matches, LimitReached: g.limitReached, LinesCut: g.linesCut, Engine: engine}
	var dialect string
	if engine == "grep" && !in.Literal && rgOnlySyntax.MatchString(in.Pattern) {
		dialect = "This host has no ripgrep: the pattern is a POSIX extended regex, where \\d, \\w, \\s, \\b and (?...) may not work; use [0-9], [[:alnum:]_], [[:space:]] instead."
	}
	if g.matches == 0 {
		if failed {
			return loop.Result{Content: loop.ContentList{&loop.Text{Text: withNotice(fmt.Sprintf("Search failed: %s", strings.Join(g.messages, "\n")), dialect)}}, Details: details, IsError: true}, nil
		}
		return loop.Result{Content: loop.ContentList{&loop.Text{Text: withNotice("No matches found.", dialect)}}, Details: details}, nil
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
	if dialect != "" {
		notices = append(notices, dialect)
	}
	return loop.Result{Content: loop.ContentList{&loop.Text{Text: listText(t, notices...)}}, Details: details}, nil
}
