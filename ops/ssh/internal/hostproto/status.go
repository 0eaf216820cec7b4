package hostproto

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// ErrProtocol is wrapped by the error of a status that its request never
// ends with, or of a frame that is none of its kinds: the client and the
// server disagree on what was said (a server of another version, a stream
// out of step), and nothing more read from that server can be trusted.
var ErrProtocol = errors.New("command server protocol error")

// Kind is what a status says.
type Kind int

const (
	// Exited is a file function's exit status (call), or a read's "0":
	// Status.Code.
	Exited Kind = iota
	// Failed is a read's "E CODE message" (read_head, open_file).
	Failed
	// Ended is an ended job's status: Status.Job.
	Ended
	// OK ends the answer of a batch (attach_jobs, run_jobs).
	OK
	// NoJob ("!NOJOB"): no such job, or its server died before it
	// started (its files were removed).
	NoJob
	// Gone ("!GONE TOMB"): only the job's tombstone is left; Status.Arg is
	// its first line.
	Gone
	// Detached ("!DETACHED"): let go of; the job runs on.
	Detached
	// Attach ("!ATTACH"): add_job found the job started before.
	Attach
	// EIO ("!EIO MESSAGE"): the host failed; Status.Arg is the message.
	EIO
	// NoDir, NotDir, DirDenied ("!ENOENT", "!ENOTDIR", "!EACCES"): the
	// job's directory is missing, not a directory, or not searchable.
	NoDir
	NotDir
	DirDenied
	// Other is any status of a request the server does not have (only
	// tests send those: they expect "!PROTOCOL unknown request").
	Other
)

// bangs are the "!" statuses, by name, and whether the name is followed
// by words. ("!PROTOCOL ..." is no status of any request: it is how the
// server says the request made no sense to it.)
var bangs = map[string]struct {
	kind  Kind
	words bool
}{
	"NOJOB":    {NoJob, false},
	"GONE":     {Gone, true},
	"DETACHED": {Detached, false},
	"ATTACH":   {Attach, false},
	"EIO":      {EIO, true},
	"ENOENT":   {NoDir, false},
	"ENOTDIR":  {NotDir, false},
	"EACCES":   {DirDenied, false},
}

// A Status ends an answer (the line after the marker), or reports a
// job's end in a batch's "X ID STATUS" frame.
type Status struct {
	Kind Kind
	Text string    // the status as the server sent it
	Arg  string    // the words after a "!" status's name (Gone, EIO); Failed: the whole line
	Code int       // Exited
	Job  JobStatus // Ended
}

// JobStatus is an ended job's status: CODE [REASON] [SAVE] (§7.1).
type JobStatus struct {
	Code int
	// Stopped says why the host stopped the job: "capped", "lease",
	// "killed", "lost", or "" (it ended by itself).
	Stopped string
	Saved   bool // its output was moved to the file the start named
}

// ParseJobStatus parses an ended job's status (or a tombstone's first
// line).
func ParseJobStatus(s string) (JobStatus, error) {
	f := strings.Fields(s)
	var js JobStatus
	var err error
	if len(f) == 0 {
		return js, fmt.Errorf("command server: empty status")
	}
	if js.Code, err = strconv.Atoi(f[0]); err != nil {
		return js, fmt.Errorf("command server: %w: unexpected status %q", ErrProtocol, s)
	}
	for _, w := range f[1:] {
		switch w {
		case "capped", "lease", "killed", "lost":
			js.Stopped = w
		case "saved":
			js.Saved = true
		case "unsaved":
		default:
			return js, fmt.Errorf("command server: %w: unexpected status %q", ErrProtocol, s)
		}
	}
	return js, nil
}

// Answer parses the status that ended the answer to r; a status r is never
// answered with is an error wrapping ErrProtocol.
func (r Request) Answer(status string) (Status, error) {
	kind, ok := requests[r.Name]
	if r.Name == "call" {
		kind, ok = answerCall, true
	}
	if !ok {
		kind = answerAny
	}
	st, ok := parse(kind, status)
	if !ok {
		return st, fmt.Errorf("%w: %s answered %q", ErrProtocol, r.Function(), status)
	}
	return st, nil
}

// FrameStatus parses the STATUS of a batch's "X ID STATUS" frame: a job's
// status, or a job's "!" status.
func FrameStatus(status string) (Status, error) {
	st, ok := parse(answerJob, status)
	if !ok {
		return st, fmt.Errorf("%w: a job ended with %q", ErrProtocol, status)
	}
	return st, nil
}

// parse parses status as an answer of kind, and says whether it is one.
func parse(kind answer, status string) (Status, bool) {
	st := Status{Text: status}
	if rest, ok := strings.CutPrefix(status, "!"); ok {
		name, arg, hasArg := strings.Cut(rest, " ")
		b, known := bangs[name]
		if !known || hasArg != b.words {
			return st, kind == answerAny && !strings.HasPrefix(status, "!PROTOCOL")
		}
		st.Kind, st.Arg = b.kind, arg
		switch kind {
		case answerJob:
			return st, true
		case answerBatch:
			return st, b.kind == Detached || b.kind == EIO
		case answerAny:
			return st, true
		}
		return st, false
	}
	switch kind {
	case answerCall:
		st.Kind = Exited
		st.Code, _ = strconv.Atoi(status) // (a number too big for an int is still one)
		return st, isDecimal(status)
	case answerRead:
		if status == "0" {
			st.Kind = Exited
			return st, true
		}
		st.Kind, st.Arg = Failed, status
		return st, strings.HasPrefix(status, "E ")
	case answerJob:
		js, err := ParseJobStatus(status)
		st.Kind, st.Job = Ended, js
		return st, err == nil
	case answerBatch:
		st.Kind = OK
		return st, status == "OK"
	}
	// A request of a name the server does not have: whatever it says.
	st.Kind = Other
	return st, true
}

func isDecimal(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}
