package session

import (
	"fmt"
	"time"
)

// MoveLeaf makes the branch that ends at the entry id ("": the empty
// branch, before the first entry) the current one, and returns its
// context (its latest compaction honoured). It appends a leaf entry that
// says so (none when the branch ends there already), and the next entry
// appended is id's child; the branch left stays in the file, as every
// other does.
func (s *Session) MoveLeaf(id string) (Context, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f, err := readEntries(s.path)
	if err != nil {
		return Context{}, err
	}
	s.saw(f) // (another process may have written to the file)
	if _, ok := f.entries[id]; id != "" && !ok {
		return Context{}, fmt.Errorf("%s: no entry %q", s.path, id)
	}
	branch, err := branchTo(f.entries, id)
	if err != nil {
		return Context{}, fmt.Errorf("%s: %v", s.path, err)
	}
	c, err := rebuild(branch)
	if err != nil {
		return Context{}, fmt.Errorf("%s: %v", s.path, err)
	}
	if id == s.leaf {
		return c, nil // (already there: nothing to say)
	}
	e := entry{Type: "leaf", ID: s.freshID(), Timestamp: time.Now().UTC()}
	if id != "" {
		target := id
		e.ParentID = &target
	}
	if err := s.writeLine(e); err != nil {
		return Context{}, err
	}
	s.leaf = id
	return c, nil
}

// Tree reads every message and compaction entry of path, on every branch,
// in the order they were written (a parent before its children), and the
// id of the current branch's last entry ("" when that branch is empty).
func Tree(path string) (Header, []Entry, string, error) {
	f, err := readEntries(path)
	if err != nil {
		return Header{}, nil, "", err
	}
	es := make([]entry, len(f.order))
	for i, id := range f.order {
		es[i] = f.entries[id]
	}
	out, err := exported(es)
	if err != nil {
		return Header{}, nil, "", fmt.Errorf("%s: %v", path, err)
	}
	return f.header, out, f.last, nil
}
