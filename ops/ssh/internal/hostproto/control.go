package hostproto

import "strconv"

// A Control is a control line: sent on a server's request stream while a
// request that reads the stream runs (run_jobs, attach_jobs, open_file),
// to be read by that request's watcher (read_control in serve.sh). One
// grammar for every request: a letter means the same everywhere; a line
// with a job ID is about that job of the answer, one without about every
// job of the answer; a line of no form of the grammar (a trailing blank or
// word, an ID that is not hex) is ignored. A line that arrives after its
// request ended reaches the request loop, which ignores it.
// docs/host-protocol.md §5 says which request honours which line.
type Control string

const (
	// Kill kills every job of the answer (a batch of one's job), or
	// open_file's read.
	Kill Control = "k\n"
	// Renew renews the lease of every job of the answer.
	Renew Control = "r\n"
	// Stream has the output of every job of the answer sent as it comes
	// (run_jobs; attach_jobs always streams).
	Stream Control = "s\n"
	// LetGo lets go of every job of the answer: they run on, to be
	// followed elsewhere (run_jobs: a frame "X ID !DETACHED" for each;
	// attach_jobs: the answer ends "!DETACHED").
	LetGo Control = "d\n"
	// End ends the answer (run_jobs, once every job has its verdict).
	End Control = "e\n"
)

// KillJob kills job id of the answer.
func KillJob(id string) Control { return Control("k " + id + "\n") }

// LetGoOf lets go of job id of the answer: in run_jobs its frame
// "X ID !DETACHED" comes at once, and it runs on, to be followed by
// attach_jobs.
func LetGoOf(id string) Control { return Control("d " + id + "\n") }

// Add adds a job to attach_jobs' answer. (Save, the rest of the line, may
// hold spaces but no newline; the client never lets go of a command whose
// Save holds one.)
func Add(f Follow) Control {
	return Control("a " + f.ID + " " + strconv.FormatInt(f.Offset, 10) + " " + f.SaveBytes + " " + f.SaveLines + " " + f.Save + "\n")
}
