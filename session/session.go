// Package session keeps an agent run's conversation in an append-only JSONL
// file: a header line, then one entry per message with its id and its
// parent's id, so that the file is a tree (a later run can branch from any
// entry). Each entry is written and flushed as it happens: an abort or a
// crash loses nothing that was said.
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
	"sort"
	"strings"
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
}

// entry is one message line.
type entry struct {
	Type      string          `json:"type"` // "message"
	ID        string          `json:"id"`
	ParentID  *string         `json:"parentId"`
	Timestamp time.Time       `json:"timestamp"`
	Message   json.RawMessage `json:"message"`
}

// Session is an open session file.
type Session struct {
	mu     sync.Mutex
	path   string
	f      *os.File
	header Header
	leaf   string // id of the last entry, the parent of the next
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
	s := &Session{path: path, f: f, header: h}
	if err := s.writeLine(h); err != nil {
		f.Close()
		return nil, err
	}
	return s, nil
}

// Open reopens a session to continue it: it returns the messages on the
// branch that ends at the last entry, and appends after that entry. A
// torn last line (a crash mid-write) is ignored.
func Open(path string) (*Session, []loop.Message, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, err
	}
	lines := strings.Split(string(data), "\n")
	var h Header
	if err := json.Unmarshal([]byte(lines[0]), &h); err != nil || h.Type != "session" {
		return nil, nil, fmt.Errorf("%s: not a session file", path)
	}
	if h.Version != Version {
		return nil, nil, fmt.Errorf("%s: session format version %d, this pi-remote reads %d", path, h.Version, Version)
	}
	byID := map[string]entry{}
	var last string
	good := len(data) // bytes up to the end of the last whole line
	for i, line := range lines[1:] {
		if strings.TrimSpace(line) == "" {
			continue
		}
		var e entry
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			if i == len(lines)-2 {
				good = len(data) - len(line) // torn last line: cut it off
				break
			}
			return nil, nil, fmt.Errorf("%s:%d: %v", path, i+2, err)
		}
		if e.Type != "message" {
			continue
		}
		byID[e.ID] = e
		last = e.ID
	}
	var branch []loop.Message
	for id := last; id != ""; {
		e, ok := byID[id]
		if !ok {
			return nil, nil, fmt.Errorf("%s: entry %s has no parent entry %s", path, last, id)
		}
		m, err := loop.UnmarshalMessage(e.Message)
		if err != nil {
			return nil, nil, fmt.Errorf("%s: entry %s: %v", path, e.ID, err)
		}
		branch = append(branch, m)
		id = ""
		if e.ParentID != nil {
			id = *e.ParentID
		}
	}
	for i, j := 0, len(branch)-1; i < j; i, j = i+1, j-1 {
		branch[i], branch[j] = branch[j], branch[i]
	}
	if good < len(data) {
		if err := os.Truncate(path, int64(good)); err != nil {
			return nil, nil, err
		}
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, nil, err
	}
	return &Session{path: path, f: f, header: h, leaf: last}, branch, nil
}

// Path is the session file.
func (s *Session) Path() string { return s.path }

// Header is the session's header.
func (s *Session) Header() Header { return s.header }

// Append writes m as a child of the last entry.
func (s *Session) Append(m loop.Message) error {
	b, err := json.Marshal(m)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	e := entry{Type: "message", ID: newID(4), Timestamp: time.Now().UTC(), Message: b}
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

func (s *Session) writeLine(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	// One write per line: the file never holds half an entry unless the
	// machine dies mid-write, which Open tolerates.
	if _, err := s.f.Write(append(b, '\n')); err != nil {
		return err
	}
	return s.f.Sync()
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
