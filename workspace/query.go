package workspace

import (
	"context"
	"encoding/json"
	"sort"
	"strings"

	"github.com/pi-remote/pi-remote/loop"
	"github.com/pi-remote/pi-remote/tools"
)

// call runs one tool on the default host outside the conversation; ok is
// false for an error result. These are the front end's own queries, not
// the model's calls: the permission gate has no say (in ask mode the
// person would be asked about the footer's git branch).
func (w *Workspace) call(ctx context.Context, name string, args map[string]any) (string, bool) {
	raw, err := json.Marshal(args)
	if err != nil {
		return "", false
	}
	defs := tools.WrapAll(tools.Definitions(w.Hosts[0].Env, tools.Options{}))
	msg := tools.Call(ctx, loop.Config{Tools: defs}, name, raw, nil)
	return msg.Content.Text(), !msg.IsError
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

// CompletePath lists paths on the default host that start with prefix
// (relative to the working directory, or absolute), as the find tool sees
// them (.gitignore respected): those in prefix's directory first.
func (w *Workspace) CompletePath(ctx context.Context, prefix string) []string {
	pattern := prefix + "*"
	if !strings.Contains(prefix, "/") {
		pattern = "**/" + pattern
	}
	out, ok := w.call(ctx, "find", map[string]any{"pattern": pattern, "limit": 200})
	if !ok {
		return nil
	}
	var paths []string
	for _, l := range strings.Split(out, "\n") {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "[") {
			paths = append(paths, l)
		}
	}
	// Shallow paths first, then by name.
	sort.SliceStable(paths, func(i, j int) bool {
		di, dj := strings.Count(paths[i], "/"), strings.Count(paths[j], "/")
		if di != dj {
			return di < dj
		}
		return paths[i] < paths[j]
	})
	return paths
}
