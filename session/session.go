// Package session keeps an agent run's conversation in an append-only JSONL
// file: a header line, then one entry per message with its id and its
// parent's id, so that the file is a tree (a later run can branch from any
// entry). Each entry is written and flushed as it happens: an abort or a
// crash loses nothing that was said.
//
// The current branch ends at the last message or compaction entry
// written, unless a leaf entry came after it: {"type":"leaf","id":…,
// "parentId":TARGET,…} says that the branch now ends at TARGET (null: it
// is empty), and the next entry is TARGET's child (MoveLeaf). Nothing is
// rewritten to go back in a conversation: the branch left stays in the
// file. Readers skip entry types they do not know; one that predates
// leaf entries continues from the last entry written. A torn last line
// (a crash mid-write) is ignored, a torn leaf entry too: the branch is
// then the one before it.
//
// It also reads the files back for the front ends: listings (List,
// OfHost), branches and their fork points (Branch, ForkPoints), the whole
// tree (Tree), forks (Fork) and transcripts (Markdown, HTML, ExportFile);
// and it keeps the prompts typed in the terminal (LoadHistory,
// AppendHistory).
package session

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/pi-remote/pi-remote/loop"
)

// Version is the file format version in the header.
const Version = 1

// Header is the first line of a session file.
type Header struct {
	Type    string    `json:"type"` // "session"
	Version int       `json:"version"`
	ID      string    `json:"id"`
	Created time.Time `json:"created"`
	Host    string    `json:"host"` // what the tools act on, e.g. "local" or "alice@devbox:22"
	Cwd     string    `json:"cwd"`
	// ForkedFrom is "SESSION-ID:ENTRY-ID" for a session started from an
	// entry of another (Fork).
	ForkedFrom string `json:"forkedFrom,omitempty"`
}

// entry is one line after the header: a message, a compaction (the
// summary that stands for the branch's messages before FirstKeptID), or
// a leaf entry (the current branch now ends at its parent).
type entry struct {
	Type      string          `json:"type"` // "message", "compaction" or "leaf"
	ID        string          `json:"id"`
	ParentID  *string         `json:"parentId"`
	Timestamp time.Time       `json:"timestamp"`
	Message   json.RawMessage `json:"message,omitempty"`

	Summary      string `json:"summary,omitempty"`
	FirstKeptID  string `json:"firstKeptId,omitempty"` // "" when no earlier message is kept
	TokensBefore int    `json:"tokensBefore,omitempty"`
}

// Compaction is a compaction entry: Summary replaces the messages of the
// branch before the entry FirstKeptID ("": every message before the
// compaction) in the context; the entries stay in the file.
type Compaction struct {
	Summary      string
	FirstKeptID  string
	TokensBefore int // the context's size in tokens before, for the record
}

// Context is what a session's branch gives the model.
type Context struct {
	Messages []loop.Message
	// IDs are the entries the messages come from (a summary's is its
	// compaction entry).
	IDs []string
	// Summary is the latest compaction's summary ("" when none), which
	// the next compaction updates.
	Summary string
	// Fresh is the index of the first message made after the latest
	// compaction (the usage reported by earlier ones counted messages the
	// summary replaced).
	Fresh int
}

// SummaryMessage is how a compaction's summary, made at time at, enters
// the context: a user message that says what it is.
func SummaryMessage(summary string, at time.Time) *loop.UserMessage {
	text := "The conversation before this point was compacted to save context; this summary replaces it:\n\n<summary>\n" +
		summary + "\n</summary>"
	return &loop.UserMessage{Content: loop.ContentList{&loop.Text{Text: text}}, Timestamp: at.UnixMilli()}
}

// Session is an open session file.
type Session struct {
	mu     sync.Mutex
	path   string
	f      *os.File
	header Header
	leaf   string // id of the current branch's last entry, the parent of the next
	// used are the ids of the file's entries: a new entry's id is none
	// of them (ids are short, and a long session may draw one twice:
	// the file would then have a loop of parents, or a branch that jumps
	// into another).
	used map[string]bool
	// draw makes a random id of n bytes (newID; a test's, to collide).
	draw func(n int) string
}

// Create starts a new session file at path (its directory is created).
func Create(path string, h Header) (*Session, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL|os.O_APPEND, 0o600)
	if err != nil {
		return nil, err
	}
	h.Type, h.Version = "session", Version
	if h.ID == "" {
		h.ID = newID(16)
	}
	if h.Created.IsZero() {
		h.Created = time.Now().UTC()
	}
	s := &Session{path: path, f: f, header: h, used: map[string]bool{}}
	if err := s.writeLine(h); err != nil {
		f.Close()
		return nil, err
	}
	return s, nil
}

// Open reopens a session to continue it: it returns the context of the
// current branch (rebuilt from its latest compaction, if any, without
// summarizing again), and appends after that branch's last entry. A torn
// last line (a crash mid-write) is ignored.
func Open(path string) (*Session, Context, error) {
	file, err := readEntries(path)
	if err != nil {
		return nil, Context{}, err
	}
	h, last := file.header, file.last
	branch, err := branchTo(file.entries, last)
	if err != nil {
		return nil, Context{}, fmt.Errorf("%s: %v", path, err)
	}
	c, err := rebuild(branch)
	if err != nil {
		return nil, Context{}, fmt.Errorf("%s: %v", path, err)
	}
	if file.good < file.size {
		if err := os.Truncate(path, int64(file.good)); err != nil {
			return nil, Context{}, err
		}
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, Context{}, err
	}
	s := &Session{path: path, f: f, header: h, leaf: last, used: map[string]bool{}}
	s.saw(file)
	return s, c, nil
}

// rebuild makes the context of a branch (root first): the latest
// compaction's summary, then the messages it kept, then those after it.
func rebuild(branch []entry) (Context, error) {
	start := 0
	var c Context
	for i := len(branch) - 1; i >= 0; i-- {
		e := branch[i]
		if e.Type != "compaction" {
			continue
		}
		c.Summary = e.Summary
		c.Messages = append(c.Messages, SummaryMessage(e.Summary, e.Timestamp))
		c.IDs = append(c.IDs, e.ID)
		start = i + 1
		if e.FirstKeptID != "" {
			kept := slices.IndexFunc(branch[:i], func(k entry) bool { return k.ID == e.FirstKeptID })
			if kept < 0 {
				return Context{}, fmt.Errorf("compaction %s keeps from entry %s, which is not before it on its branch", e.ID, e.FirstKeptID)
			}
			if err := c.add(branch[kept:i]); err != nil {
				return Context{}, err
			}
		}
		c.Fresh = len(c.Messages)
		break
	}
	return c, c.add(branch[start:])
}

// add appends the message entries of es.
func (c *Context) add(es []entry) error {
	for _, e := range es {
		if e.Type != "message" {
			continue
		}
		m, err := loop.UnmarshalMessage(e.Message)
		if err != nil {
			return fmt.Errorf("entry %s: %v", e.ID, err)
		}
		c.Messages = append(c.Messages, m)
		c.IDs = append(c.IDs, e.ID)
	}
	return nil
}

// Path is the session file.
func (s *Session) Path() string { return s.path }

// Header is the session's header.
func (s *Session) Header() Header { return s.header }

// Append writes m as a child of the current branch's last entry and
// returns its entry's id.
func (s *Session) Append(m loop.Message) (string, error) {
	b, err := json.Marshal(m)
	if err != nil {
		return "", err
	}
	e := entry{Type: "message", Message: b}
	err = s.append(&e)
	return e.ID, err
}

// AppendCompaction writes a compaction entry as a child of the current
// branch's last entry and returns its id and time (SummaryMessage's).
func (s *Session) AppendCompaction(c Compaction) (string, time.Time, error) {
	e := entry{Type: "compaction", Summary: c.Summary, FirstKeptID: c.FirstKeptID, TokensBefore: c.TokensBefore}
	err := s.append(&e)
	return e.ID, e.Timestamp, err
}

// append gives e its id, time and parent and writes it.
func (s *Session) append(e *entry) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	e.ID, e.Timestamp = s.freshID(), time.Now().UTC()
	if s.leaf != "" {
		parent := s.leaf
		e.ParentID = &parent
	}
	if err := s.writeLine(e); err != nil {
		return err
	}
	s.leaf = e.ID
	return nil
}

// freshID is an entry id that no entry of the file has (s.mu held).
func (s *Session) freshID() string {
	draw := s.draw
	if draw == nil {
		draw = newID
	}
	for {
		if id := draw(4); !s.used[id] {
			s.used[id] = true
			return id
		}
	}
}

// saw notes the ids of f's entries as used (s.mu held, or s not yet
// shared).
func (s *Session) saw(f file) {
	for id := range f.entries {
		s.used[id] = true
	}
}

func (s *Session) writeLine(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	// One write per line: the file never holds half an entry unless the
	// machine dies mid-write, which Open tolerates. A write that fails
	// part way (a full disk) has its part cut off: the next line would
	// join it, and the file would not read back.
	line := append(b, '\n')
	before, err := s.f.Stat()
	if err != nil {
		return err
	}
	if _, err := s.f.Write(line); err != nil {
		return errors.Join(err, s.cutPart(before.Size(), int64(len(line))))
	}
	return s.f.Sync()
}

// cutPart cuts off what a failed write of n bytes left after size, when
// that is all the file has after size (not when another process wrote to
// it meanwhile).
func (s *Session) cutPart(size, n int64) error {
	now, err := s.f.Stat()
	if err != nil {
		return err
	}
	if now.Size() > size && now.Size() < size+n {
		if err := s.f.Truncate(size); err != nil {
			return fmt.Errorf("cutting off the part of the line written: %w", err)
		}
	}
	return nil
}

// Close closes the file.
func (s *Session) Close() error { return s.f.Close() }

// Dir is where sessions for one host and working directory live:
// ~/.pi-remote/sessions/<digest of host and cwd>.
func Dir(host, cwd string) (string, error) {
	home, err := os.UserHomeDir()
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256([]byte(host + "\x00" + cwd))
	return filepath.Join(home, ".pi-remote", "sessions", hex.EncodeToString(sum[:8])), nil
}

// NewPath is a fresh session file name in dir.
func NewPath(dir string) string {
	return filepath.Join(dir, time.Now().UTC().Format("20060102T150405.000Z")+"-"+newID(3)+".jsonl")
}

// ErrNone is returned by Latest when dir holds no session.
var ErrNone = errors.New("no earlier session for this host and directory")

// Latest is the most recent session file in dir.
func Latest(dir string) (string, error) {
	names, err := filepath.Glob(filepath.Join(dir, "*.jsonl"))
	if err != nil {
		return "", err
	}
	if len(names) == 0 {
		return "", ErrNone
	}
	sort.Strings(names) // names start with their UTC creation time
	return names[len(names)-1], nil
}

func newID(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}
