package workspace

import (
	"context"
	"encoding/json"
	"path"
	"sort"
	"strings"
	"unicode"

	"github.com/pi-remote/pi-remote/loop"
	"github.com/pi-remote/pi-remote/tools"
)

// call runs one tool on the default host outside the conversation; ok is
// false for an error result. These are the front end's own queries, not
// the model's calls: the permission gate has no say (in ask mode the
// person would be asked about the footer's git branch).
func (w *Workspace) call(ctx context.Context, name string, args map[string]any) (string, bool) {
	msg := w.run(ctx, name, args)
	return msg.Content.Text(), !msg.IsError
}

// run is call's tool result, details and all.
func (w *Workspace) run(ctx context.Context, name string, args map[string]any) *loop.ToolResultMessage {
	raw, err := json.Marshal(args)
	if err != nil {
		return &loop.ToolResultMessage{IsError: true}
	}
	defs := tools.WrapAll(tools.Definitions(w.Hosts[0].Env, tools.Options{}))
	return tools.Call(ctx, loop.Config{Tools: defs}, name, raw, nil)
}

// GitBranch is the git branch checked out in the default host's working
// directory, "" when there is none.
func (w *Workspace) GitBranch(ctx context.Context) string {
	out, ok := w.call(ctx, "bash", map[string]any{"command": "git rev-parse --abbrev-ref HEAD 2>/dev/null"})
	if !ok {
		return ""
	}
	return strings.TrimSpace(out)
}

// CompletePath lists the directories (ending in "/") and files on the
// default host that prefix may stand for: prefix's directory (relative to
// the working directory, or absolute) and, in it or below it, the entries
// whose names hold the rest of prefix's letters in order, case aside. The
// best matches come first: a name that starts with them, then one that
// holds them together, then one that holds them apart; shallower before
// deeper. With nothing after the last "/", the directory's own entries;
// for a directory outside the working directory's tree, only those.
// Nothing matching, or the directory missing, is no completion: the
// tools' messages are never offered.
func (w *Workspace) CompletePath(ctx context.Context, prefix string) []string {
	dir, query := path.Split(prefix)
	seen := map[string]bool{}
	var found []completion
	add := func(rel string) {
		if seen[rel] {
			return
		}
		seen[rel] = true
		if rank, ok := fuzzyRank(query, path.Base(strings.TrimSuffix(rel, "/"))); ok {
			found = append(found, completion{rel, rank})
		}
	}
	for _, entry := range w.list(ctx, "ls", map[string]any{"path": searchDir(dir), "limit": 1000}) {
		add(entry)
	}
	// Below the working directory the search goes deep; elsewhere (an
	// absolute path, "..") only the directory itself is listed: a search
	// from "/" on every keystroke would walk the whole host.
	if query != "" && !path.IsAbs(dir) && dir != ".." && !strings.HasPrefix(dir, "../") {
		name := fuzzyGlob(query)
		for _, f := range w.list(ctx, "find", map[string]any{"pattern": name, "path": searchDir(dir), "limit": 1000}) {
			add(f)
		}
		// The directories come from the files in them.
		for _, f := range w.list(ctx, "find", map[string]any{"pattern": "**/" + name + "/**", "path": searchDir(dir), "limit": 1000}) {
			segs := strings.Split(f, "/")
			for i := 1; i < len(segs); i++ {
				add(strings.Join(segs[:i], "/") + "/")
			}
		}
	}
	sort.SliceStable(found, func(i, j int) bool {
		a, b := found[i], found[j]
		if a.rank != b.rank {
			return a.rank < b.rank
		}
		if da, db := depth(a.rel), depth(b.rel); da != db {
			return da < db
		}
		return a.rel < b.rel
	})
	var out []string
	for _, c := range found {
		out = append(out, dir+c.rel)
	}
	return out
}

// completion is a path relative to the directory being completed in, and
// how well it matches (lower is better).
type completion struct {
	rel  string
	rank int
}

func depth(rel string) int { return strings.Count(strings.TrimSuffix(rel, "/"), "/") }

func searchDir(dir string) string {
	if dir == "" {
		return "."
	}
	return dir
}

// list runs ls or find and returns the paths it lists: none for an error,
// or for a result that lists nothing (its text is a message then).
func (w *Workspace) list(ctx context.Context, name string, args map[string]any) []string {
	msg := w.run(ctx, name, args)
	if msg.IsError {
		return nil
	}
	var n int
	switch d := msg.Details.(type) {
	case tools.FindDetails:
		n = d.Results
	case tools.LsDetails:
		n = d.Entries
	}
	lines := strings.Split(msg.Content.Text(), "\n")
	return lines[:min(n, len(lines))]
}

// fuzzyRank says whether name holds query's letters in order, case aside,
// and how well: 0 when it starts with them, 1 when it holds them
// together, 2 when apart.
func fuzzyRank(query, name string) (int, bool) {
	q, n := strings.ToLower(query), strings.ToLower(name)
	switch {
	case strings.HasPrefix(n, q):
		return 0, true
	case strings.Contains(n, q):
		return 1, true
	}
	for _, r := range q {
		i := strings.IndexRune(n, r)
		if i < 0 {
			return 0, false
		}
		n = n[i+len(string(r)):]
	}
	return 2, true
}

// fuzzyGlob is a find pattern for the names fuzzyRank accepts (query's
// letters in order, each in either case), or "*" when query holds a
// glob's own characters.
func fuzzyGlob(query string) string {
	var b strings.Builder
	b.WriteString("*")
	for _, r := range query {
		if strings.ContainsRune(`*?[]{}\`, r) {
			return "*"
		}
		if lo, up := unicode.ToLower(r), unicode.ToUpper(r); lo != up {
			b.WriteString("[" + string(lo) + string(up) + "]*")
		} else {
			b.WriteString(string(r) + "*")
		}
	}
	return b.String()
}

// Shell runs the person's own command (the terminal's !cmd) with bash on
// the default host, outside the conversation: no permission is asked and
// no hook runs (the person typed it), its tool events go to emit.
func (w *Workspace) Shell(ctx context.Context, command string, emit func(loop.Event)) *loop.ToolResultMessage {
	raw, err := json.Marshal(map[string]any{"command": command})
	if err != nil {
		return &loop.ToolResultMessage{ToolName: "bash", Content: loop.ContentList{&loop.Text{Text: err.Error()}}, IsError: true}
	}
	defs := tools.WrapAll(tools.Definitions(w.Hosts[0].Env, tools.Options{}))
	return tools.Call(ctx, loop.Config{Tools: defs}, "bash", raw, emit)
}
