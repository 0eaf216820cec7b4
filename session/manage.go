package session

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/pi-remote/pi-remote/loop"
)

// Root is the directory every session directory lives in:
// ~/.pi-remote/sessions.
func Root() (string, error) {
	home, err := os.UserHomeDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(home, ".pi-remote", "sessions"), nil
}

// Info describes a session file for listings.
type Info struct {
	Path         string    `json:"path"`
	ID           string    `json:"id"`
	Host         string    `json:"host"`
	Cwd          string    `json:"cwd"`
	Created      time.Time `json:"created"`
	LastActivity time.Time `json:"lastActivity"`
	Messages     int       `json:"messages"`
	Compactions  int       `json:"compactions"`
	Bytes        int64     `json:"bytes"`
	FirstPrompt  string    `json:"firstPrompt"`
	// Usage is every model answer's usage in the file, by the model that
	// gave it (as the provider named it).
	Usage map[string]loop.Usage `json:"usage,omitempty"`
	// Calls counts the answers with usage.
	Calls int `json:"calls"`
}

// List describes every session file under root, the most recently active
// first. Files that are not sessions are skipped.
func List(root string) ([]Info, error) {
	paths, err := filepath.Glob(filepath.Join(root, "*", "*.jsonl"))
	if err != nil {
		return nil, err
	}
	var out []Info
	for _, p := range paths {
		info, err := Describe(p)
		if err != nil {
			continue
		}
		out = append(out, info)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].LastActivity.After(out[j].LastActivity) })
	return out, nil
}

// Describe reads one session file's header and entries. Messages,
// Compactions and FirstPrompt are those of the current branch (the one
// Open continues); Usage and Calls count every answer in the file, on
// every branch: each was paid for.
func Describe(path string) (Info, error) {
	f, err := os.Open(path)
	if err != nil {
		return Info{}, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return Info{}, err
	}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 256<<20)
	if !sc.Scan() {
		return Info{}, fmt.Errorf("%s: not a session file", path)
	}
	var h Header
	if err := json.Unmarshal(sc.Bytes(), &h); err != nil || h.Type != "session" {
		return Info{}, fmt.Errorf("%s: not a session file", path)
	}
	info := Info{Path: path, ID: h.ID, Host: h.Host, Cwd: h.Cwd, Created: h.Created, LastActivity: st.ModTime(), Bytes: st.Size(), Usage: map[string]loop.Usage{}}
	// What the branch walk needs of each entry.
	type brief struct {
		parent     string
		compaction bool
		user       bool
		prompt     string
	}
	entries := map[string]brief{}
	leaf := ""
	for sc.Scan() {
		var e entry
		if json.Unmarshal(sc.Bytes(), &e) != nil {
			continue // a torn last line
		}
		b := brief{parent: parentOf(e)}
		switch e.Type {
		case "leaf":
			leaf = b.parent
			continue
		case "compaction":
			b.compaction = true
		case "message":
			m, err := loop.UnmarshalMessage(e.Message)
			if err != nil {
				break
			}
			switch m := m.(type) {
			case *loop.UserMessage:
				b.user, b.prompt = true, m.Content.Text()
			case *loop.AssistantMessage:
				if m.Usage != nil {
					info.Calls++
					u := info.Usage[m.Model]
					u.Input += m.Usage.Input
					u.Output += m.Usage.Output
					u.CacheRead += m.Usage.CacheRead
					u.CacheWrite += m.Usage.CacheWrite
					info.Usage[m.Model] = u
				}
			}
		default:
			continue
		}
		entries[e.ID] = b
		leaf = e.ID
	}
	// From the leaf to the root, each entry once: a file whose parents
	// loop ends the walk where it comes round.
	for id, seen := leaf, map[string]bool{}; id != "" && !seen[id]; {
		seen[id] = true
		b, ok := entries[id]
		if !ok {
			break
		}
		if b.compaction {
			info.Compactions++
		} else {
			info.Messages++
		}
		if b.user {
			info.FirstPrompt = b.prompt
		}
		id = b.parent
	}
	return info, sc.Err()
}

// Find returns the session under root whose ID or file name starts with
// prefix: exactly one, or an error that says why not.
func Find(root, prefix string) (string, error) {
	if prefix == "" {
		return "", errors.New("empty session id")
	}
	all, err := List(root)
	if err != nil {
		return "", err
	}
	var matches []Info
	for _, s := range all {
		if strings.HasPrefix(s.ID, prefix) || strings.HasPrefix(filepath.Base(s.Path), prefix) {
			matches = append(matches, s)
		}
	}
	switch len(matches) {
	case 0:
		return "", fmt.Errorf("no session %q (pi-remote sessions lists them)", prefix)
	case 1:
		return matches[0].Path, nil
	}
	var ids []string
	for _, m := range matches {
		ids = append(ids, m.ID)
	}
	return "", fmt.Errorf("session %q is ambiguous: %s", prefix, strings.Join(ids, ", "))
}

// FindEntry returns the one session under root that has an entry whose id
// starts with prefix (on any branch).
func FindEntry(root, prefix string) (string, error) {
	if prefix == "" {
		return "", errors.New("empty entry id")
	}
	all, err := List(root)
	if err != nil {
		return "", err
	}
	var found []string
	for _, info := range all {
		f, err := readEntries(info.Path)
		if err != nil {
			continue
		}
		for id := range f.entries {
			if strings.HasPrefix(id, prefix) {
				found = append(found, info.Path)
				break
			}
		}
	}
	switch len(found) {
	case 0:
		return "", fmt.Errorf("no session has an entry %q", prefix)
	case 1:
		return found[0], nil
	}
	return "", fmt.Errorf("entry %q is in %d sessions: name the one to fork", prefix, len(found))
}

// Entry is one entry of a session, for export and /tree: a message, or
// a compaction (Summary set).
type Entry struct {
	ID string
	// ParentID is the entry before it on its branch ("" for the first).
	ParentID  string
	Timestamp time.Time
	Message   loop.Message
	Summary   string
}

// Branch reads the whole current branch of path (every message,
// compacted or not), and the header: the one that ends at the last
// entry written, or where a leaf entry after it moved the branch's end.
func Branch(path string) (Header, []Entry, error) {
	f, err := readEntries(path)
	if err != nil {
		return Header{}, nil, err
	}
	h := f.header
	branch, err := branchTo(f.entries, f.last)
	if err != nil {
		return Header{}, nil, fmt.Errorf("%s: %v", path, err)
	}
	out, err := exported(branch)
	if err != nil {
		return Header{}, nil, fmt.Errorf("%s: %v", path, err)
	}
	return h, out, nil
}

// exported are es as Entry values.
func exported(es []entry) ([]Entry, error) {
	out := make([]Entry, 0, len(es))
	for _, e := range es {
		x := Entry{ID: e.ID, ParentID: parentOf(e), Timestamp: e.Timestamp, Summary: e.Summary}
		if e.Type == "message" {
			var err error
			if x.Message, err = loop.UnmarshalMessage(e.Message); err != nil {
				return nil, fmt.Errorf("entry %s: %v", e.ID, err)
			}
		}
		out = append(out, x)
	}
	return out, nil
}

// parentOf is e's parent's id, "" for none.
func parentOf(e entry) string {
	if e.ParentID == nil {
		return ""
	}
	return *e.ParentID
}

// Fork starts a new session file in dir from the branch of src that ends
// at the entry whose id starts with entryID: the entries up to it, copied
// with their ids, so that the new file continues from there. It returns
// the new file's path.
func Fork(src, entryID, dir string) (string, error) {
	f, err := readEntries(src)
	if err != nil {
		return "", err
	}
	h, entries := f.header, f.entries
	var target string
	for id := range entries {
		if strings.HasPrefix(id, entryID) {
			if target != "" {
				return "", fmt.Errorf("%s: entry %q is ambiguous", src, entryID)
			}
			target = id
		}
	}
	if target == "" || entryID == "" {
		return "", fmt.Errorf("%s: no entry %q", src, entryID)
	}
	branch, err := branchTo(entries, target)
	if err != nil {
		return "", fmt.Errorf("%s: %v", src, err)
	}
	path := NewPath(dir)
	s, err := Create(path, Header{Host: h.Host, Cwd: h.Cwd, ForkedFrom: h.ID + ":" + target})
	if err != nil {
		return "", err
	}
	defer s.Close()
	for _, e := range branch {
		if err := s.writeLine(e); err != nil {
			return "", err
		}
		s.leaf = e.ID
	}
	return path, nil
}

// file is a session file as read: its header, its entries by id and in
// the file's order, the id of the current branch's last entry (the leaf:
// the last entry written, or the one a later leaf entry names; "" for
// none), and how many bytes hold whole lines (a torn last line, from a
// crash mid-write, is after them).
type file struct {
	header  Header
	entries map[string]entry
	order   []string
	last    string
	good    int
	size    int
}

// readEntries reads a session file.
func readEntries(path string) (file, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return file{}, err
	}
	lines := strings.Split(string(data), "\n")
	f := file{entries: map[string]entry{}, good: len(data), size: len(data)}
	if err := json.Unmarshal([]byte(lines[0]), &f.header); err != nil || f.header.Type != "session" {
		return file{}, fmt.Errorf("%s: not a session file", path)
	}
	if f.header.Version != Version {
		return file{}, fmt.Errorf("%s: session format version %d, this pi-remote reads %d", path, f.header.Version, Version)
	}
	for i, line := range lines[1:] {
		if strings.TrimSpace(line) == "" {
			continue
		}
		var e entry
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			if i == len(lines)-2 {
				f.good = len(data) - len(line) // torn last line
				break
			}
			return file{}, fmt.Errorf("%s:%d: %v", path, i+2, err)
		}
		switch e.Type {
		case "message", "compaction":
		case "leaf":
			target := parentOf(e)
			if _, ok := f.entries[target]; target != "" && !ok {
				return file{}, fmt.Errorf("%s:%d: the leaf entry names no earlier entry %s", path, i+2, target)
			}
			f.last = target
			continue
		default:
			continue // a later version's kind of entry
		}
		if _, dup := f.entries[e.ID]; !dup {
			f.order = append(f.order, e.ID)
		}
		f.entries[e.ID] = e
		f.last = e.ID
	}
	return f, nil
}

// branchTo is the branch of entries from the root to leaf.
func branchTo(entries map[string]entry, leaf string) ([]entry, error) {
	var branch []entry
	for id := leaf; id != ""; {
		e, ok := entries[id]
		if !ok {
			return nil, fmt.Errorf("entry %s has no parent entry %s", leaf, id)
		}
		if len(branch) == len(entries) {
			return nil, fmt.Errorf("the parents of entry %s go round in a loop", leaf)
		}
		branch = append(branch, e)
		id = ""
		if e.ParentID != nil {
			id = *e.ParentID
		}
	}
	for i, j := 0, len(branch)-1; i < j; i, j = i+1, j-1 {
		branch[i], branch[j] = branch[j], branch[i]
	}
	return branch, nil
}
