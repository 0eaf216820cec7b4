package acp

import (
	"fmt"
	"path"
	"path/filepath"
	"sort"
	"strings"
)

// CwdMap maps the editor's directories (on the editor's machine) to
// directories on a remote host: a session whose editor directory is a key,
// or under one, works in the value, or under it. The longest key that
// matches wins.
type CwdMap map[string]string

// HostCwd is the working directory on the default host of a session that
// the editor opened in editorCwd:
//
//   - local host: editorCwd itself (the editor and the tools share the
//     machine);
//   - remote host: editorCwd mapped by m when a key matches, else
//     flagCwd (--cwd), else "" (the host's home directory).
//
// editorCwd must be absolute, as ACP requires.
func HostCwd(editorCwd string, local bool, flagCwd string, m CwdMap) (string, error) {
	if !filepath.IsAbs(editorCwd) {
		return "", fmt.Errorf("cwd %q is not an absolute path", editorCwd)
	}
	editorCwd = filepath.Clean(editorCwd)
	if local {
		return editorCwd, nil
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	// Longest first: the most specific mapping wins.
	sort.Slice(keys, func(i, j int) bool { return len(keys[i]) > len(keys[j]) })
	for _, k := range keys {
		from := filepath.Clean(k)
		rel, err := filepath.Rel(from, editorCwd)
		if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
			continue
		}
		to := m[k]
		if !path.IsAbs(to) {
			return "", fmt.Errorf("acpCwdMap: %q maps to %q, which is not an absolute path on the host", k, to)
		}
		if rel == "." {
			return path.Clean(to), nil
		}
		return path.Join(to, filepath.ToSlash(rel)), nil
	}
	return flagCwd, nil
}
