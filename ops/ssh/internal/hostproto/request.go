package hostproto

import (
	"strconv"
	"strings"
	"time"

	"github.com/pi-remote/pi-remote/internal/shellquote"
)

// A Request is one request line: the name of a function of the server and
// its words, then raw data for the function to read (receive_temp only).
// The builders below make every request the server has ($requests in
// serve.sh); a test checks the two lists agree.
type Request struct {
	// Name is the function: one of $requests, or "call" for a file
	// function (its name is then the first word).
	Name string
	Args []string
	Data []byte
}

// answer is what may end the answer to a request: the statuses the server
// sends for it.
type answer int

const (
	answerAny   answer = iota // anything but "!PROTOCOL ..."
	answerCall                // a file function's exit status: a decimal number
	answerRead                // "0", or "E CODE message"
	answerJob                 // a job's status or a job's "!" status
	answerBatch               // "OK", "!DETACHED" or "!EIO MESSAGE"
)

// requests are the server's requests and their answers, keyed as
// $requests names them: NAME, or call:NAME for a file function.
var requests = func() map[string]answer {
	m := map[string]answer{
		"attach_jobs": answerBatch,
		"run_jobs":    answerBatch,
		"read_head":   answerRead,
		"open_file":   answerRead,
	}
	for _, fn := range fileFunctions {
		m["call:"+fn] = answerCall
	}
	return m
}()

// fileFunctions are the functions sent as "call NAME WORD...".
var fileFunctions = []string{
	"list_jobs", "stop_job", "cancel_job", "forget", "probe_host",
	"stat_path", "list_dir", "resolve_path", "make_dirs",
	"create_temp", "write_inline", "commit_temp", "settle_write",
	"diagnose_write", "receive_temp", "remove_temp",
}

// request builds a request of the server's function name, which must be
// one of requests.
func request(name string, args ...string) Request {
	if _, ok := requests[name]; !ok {
		panic("hostproto: the server has no request " + name)
	}
	return Request{Name: name, Args: args}
}

// call builds a request of the file function fn.
func call(fn string, args ...string) Request {
	if _, ok := requests["call:"+fn]; !ok {
		panic("hostproto: the server has no file function " + fn)
	}
	return Request{Name: "call", Args: append([]string{fn}, args...)}
}

// Framed says whether the answer comes in frames ("D ID N" and N bytes,
// "X ID STATUS") before its status: run_jobs' and attach_jobs'.
func (r Request) Framed() bool { return r.Name == "run_jobs" || r.Name == "attach_jobs" }

// Function is the server's function the request runs: Name, or for a file
// function the one it calls.
func (r Request) Function() string {
	if r.Name == "call" && len(r.Args) > 0 {
		return r.Args[0]
	}
	return r.Name
}

// seconds is d as the server's TTL word.
func seconds(d time.Duration) string { return strconv.Itoa(int(d.Seconds())) }

// Job is what starts a job: the words of a batch of one (RunJob) and of
// add_job.
type Job struct {
	ID     string // 1 to 64 lowercase hex digits, chosen by the client
	Script string // run with sh -c
	Dir    string // the working directory; empty: home
	// Save, SaveBytes, SaveLines: the output goes to the file Save once it
	// is longer than SaveBytes bytes or SaveLines lines; all empty: never.
	Save, SaveBytes, SaveLines string
	Label                      string // for list_jobs: the first line of the command
}

// Follow names a job to follow from an offset (attach_jobs, and its
// control line Add).
type Follow struct {
	ID     string
	Offset int64 // output from this byte on
	// As Job's.
	Save, SaveBytes, SaveLines string
}

// RunJob starts j alone, a batch of one: its output comes in frames, and
// its status in the frame "X ID STATUS" ("!ATTACH" when it was started
// before: the client follows it with AttachJobs); the answer ends "OK"
// once it has one. ttl is its lease; cap the most bytes of output ("":
// none); forget the IDs of jobs whose results the client has.
func RunJob(j Job, ttl time.Duration, cap string, forget []string) Request {
	return request("run_jobs", seconds(ttl), cap, strings.Join(forget, " "),
		j.ID, j.Script, j.Dir, j.Save, j.SaveBytes, j.SaveLines, j.Label)
}

// AttachJobs follows several jobs in one answer, in frames.
func AttachJobs(ttl time.Duration, jobs ...Follow) Request {
	args := []string{seconds(ttl)}
	for _, f := range jobs {
		args = append(args, f.ID, strconv.FormatInt(f.Offset, 10), f.Save, f.SaveBytes, f.SaveLines)
	}
	return request("attach_jobs", args...)
}

// RunJobs opens a batch: jobs join it with AddJob lines, and their answers
// come in frames; the control line End ends it.
func RunJobs(ttl time.Duration, cap string, forget []string) Request {
	return request("run_jobs", seconds(ttl), cap, strings.Join(forget, " "))
}

// AddJob starts j in the batch of the run_jobs request running; it is a
// line of that request's stream, not a request of its own (it has no
// answer: j's frames come in run_jobs' answer).
func AddJob(j Job) Request {
	return Request{Name: "add_job", Args: []string{j.ID, j.Script, j.Dir, j.Save, j.SaveBytes, j.SaveLines, j.Label}}
}

// ReadHead reads at most n bytes of path in one short answer.
func ReadHead(path string, n int) Request {
	return request("read_head", path, strconv.Itoa(n))
}

// OpenFile streams path from byte offset on.
func OpenFile(path string, offset int64) Request {
	if offset > 0 {
		return request("open_file", path, strconv.FormatInt(offset, 10))
	}
	return request("open_file", path)
}

// The file functions (docs/host-protocol.md §4.6, §4.7): each answers with
// its own status line first ("OK ..." or "E CODE message").

// ListJobs lists the jobs in the jobs directory.
func ListJobs() Request { return call("list_jobs") }

// StopJob kills job id if it runs, or removes its record if it ended.
func StopJob(id string) Request { return call("stop_job", id) }

// CancelJob kills job id and forgets it, for a call cancelled whose kill
// was not confirmed.
func CancelJob(id string) Request { return call("cancel_job", id) }

// Forget removes the files of jobs whose results the client has.
func Forget(ids ...string) Request { return call("forget", ids...) }

// ProbeHost says which tools the host has.
func ProbeHost() Request { return call("probe_host") }

// StatPath is ls -ldnL of path.
func StatPath(path string) Request { return call("stat_path", path) }

// ResolvePath is path's canonical form.
func ResolvePath(path string) Request { return call("resolve_path", path) }

// MakeDirs makes path and its missing parents.
func MakeDirs(path string) Request { return call("make_dirs", path) }

// ListDir lists the directory path in records of flavour (gnu, stat or
// posix).
func ListDir(path, flavour string) Request { return call("list_dir", path, flavour) }

// CreateTemp makes a write's temporary file beside target.
func CreateTemp(target, perm, suffix, parents string) Request {
	return call("create_temp", target, perm, suffix, parents)
}

// WriteInline writes target atomically with the content printf makes of
// format.
func WriteInline(target, perm, digest, suffix, format, parents, canonical string) Request {
	return call("write_inline", target, perm, digest, suffix, format, parents, canonical)
}

// CommitTemp renames the temporary file path over target, if target is
// still what digest says.
func CommitTemp(target, path, inode, digest, canonical string) Request {
	return call("commit_temp", target, path, inode, digest, canonical)
}

// SettleWrite removes a write's temporary files and says whether its
// commit happened.
func SettleWrite(target, digest string, suffixes ...string) Request {
	return call("settle_write", append([]string{target, digest}, suffixes...)...)
}

// DiagnoseWrite says why writing to the temporary file path failed.
func DiagnoseWrite(path, inode string) Request { return call("diagnose_write", path, inode) }

// ReceiveTemp appends data to the temporary file path: the bytes follow
// the request line.
func ReceiveTemp(path, inode string, data []byte) Request {
	r := call("receive_temp", path, inode, strconv.Itoa(len(data)))
	r.Data = data
	return r
}

// RemoveTemp removes a write's temporary file.
func RemoveTemp(path, inode string) Request { return call("remove_temp", path, inode) }

// Serve is the line that starts the server (serve in serve.sh), sent after
// the program: marker starts every status line; grace is how long a
// command's background children may go on writing after it exits
// (seconds); setsid, whether commands get their own session where the host
// has setsid; suffix (hex) names the private directory; fence, the client's
// id and the connection's epoch (or nothing: no fence).
func Serve(marker, grace string, setsid bool, suffix string, fence ...string) string {
	yesNo := "no"
	if setsid {
		yesNo = "yes"
	}
	return "serve " + shellquote.Join(append([]string{marker, grace, yesNo, suffix}, fence...)...)
}
