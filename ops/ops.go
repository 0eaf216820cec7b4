// Package ops is the driver contract between pi-remote's execution
// environments and the machines they act on.
//
// A backend (ops/local for this machine, ops/ssh for a remote host) implements
// three small interfaces: ReadOperations, WriteOperations and ExecOperations.
// Everything above this package (env, tools, loop) talks only to these
// interfaces, so a tool behaves the same on every host.
//
// Rules every backend follows:
//
//   - Paths are absolute and slash-separated. Backends never resolve relative
//     paths; that is env's job.
//   - Every method takes a context and honours cancellation even where the
//     underlying library does not (the backend closes what it must).
//   - Errors use one vocabulary: *fs.PathError wrapping the io/fs sentinels
//     (fs.ErrNotExist, fs.ErrPermission, fs.ErrExist, ...), *ExitError for a
//     command that ran and exited non-zero, ErrConnectionLost (wrapped) when
//     the transport to the host is gone, ErrModified when a guarded write
//     found the file changed, and ErrMoved when a write's path no longer
//     names the file its caller expected. Callers compare with errors.Is / errors.As.
//
// Optional abilities live in separate interfaces (Resolver, Spawner) with helpers that
// fall back when a backend lacks them; callers never type-switch on backends.
// The conformance suite in ops/opstest is run by every backend.
package ops

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"time"
)

// ReadOperations reads files and directories on one host.
type ReadOperations interface {
	// Stat returns information about the named file, following symlinks.
	// A missing file gives a *fs.PathError wrapping fs.ErrNotExist.
	Stat(ctx context.Context, name string) (fs.FileInfo, error)

	// Open opens the named file for streaming reads. Only what the caller
	// reads is transferred, so reading the head of a huge file is cheap.
	// Reads after ctx is done fail with ctx's error. The caller must Close.
	// Opening a directory is an error wrapping ErrIsDir; a FIFO, device or
	// socket (reads that may block or never end), one wrapping
	// ErrNotRegular, at once: Open never waits for a FIFO's writer.
	Open(ctx context.Context, name string) (io.ReadCloser, error)

	// ReadDir lists a directory in one request (no round trip per entry).
	// Entries are unsorted; symlinks are reported with the kind of their
	// target in IsDir. A missing directory wraps fs.ErrNotExist; a file
	// wraps ErrNotDir.
	ReadDir(ctx context.Context, name string) ([]DirEntry, error)
}

// DirEntry is one entry of a directory listing.
type DirEntry struct {
	Name      string
	IsDir     bool // a directory, or a symlink to one
	IsSymlink bool
	Size      int64
	Mode      fs.FileMode
}

// WriteOptions tune WriteFile.
type WriteOptions struct {
	// Perm is the mode a newly created file asks for, before the umask,
	// as with open(2) (default DefaultPerm, 0o666): the file gets Perm
	// less the umask of the user's shell on the host (ops/local: this
	// process's; remote hosts: the command server's, which is the login
	// shell's), or what a default ACL of its directory gives it, exactly
	// as a file made by a command there would. An existing file always
	// keeps its mode.
	Perm fs.FileMode

	// CreateParents creates missing parent directories first, as MkdirAll
	// would, in the same request on remote hosts.
	CreateParents bool

	// Guard, when set, makes the write conditional: just before the new
	// content replaces the file, the backend checks that the file still
	// holds exactly Guard.Content; if not, the write is abandoned, the file
	// is left as it is, and WriteFile returns an error wrapping
	// ErrModified. Used by edit to detect changes made by other processes.
	// Remote backends compare digests on the host, so the check costs no
	// download.
	Guard *Guard

	// Canonical, when set, is the canonical path (see package canonpath)
	// the caller's mutation queue holds for name: just before the commit,
	// in the same step, the backend checks that the file the write would
	// replace still has that canonical path (a symlink on the way may have
	// changed since the caller learnt it). If not, nothing is written and
	// WriteFile returns an error wrapping ErrMoved. Lets a caller use a
	// canonical path it remembers without asking the host again.
	Canonical string
}

// Guard is the content a guarded write expects to replace.
type Guard struct {
	Content []byte
}

// WriteOperations changes files on one host.
type WriteOperations interface {
	// WriteFile replaces the named file with everything read from r,
	// atomically: the content goes to a temporary file next to the target
	// (in a private directory of its own where others may rename entries
	// in the target's directory), which is renamed over the target only
	// when complete. A failed or cancelled write leaves the old file intact
	// and removes the temporary file. Someone who may rename entries in the
	// target's directory cannot turn the write onto another file. The
	// parent directory must exist (see MkdirAll); otherwise the error wraps
	// fs.ErrNotExist, unless opts.CreateParents.
	//
	// An existing file keeps its mode, its owner where the user may set
	// it, its ACL and its extended attributes; where the host cannot keep
	// the last two, the write is refused (see docs/tools.md).
	//
	// A device, FIFO or socket is not replaced (ErrNotRegular).
	//
	// A symlink is written through (the link stays, its target changes),
	// except, as the kernel's fs.protected_symlinks would have it, a link
	// in a sticky world-writable directory that belongs to neither the
	// user nor that directory's owner (fs.ErrPermission).
	WriteFile(ctx context.Context, name string, r io.Reader, opts WriteOptions) error

	// MkdirAll creates a directory and any missing parents. An existing
	// directory is not an error; an existing non-directory wraps ErrNotDir.
	MkdirAll(ctx context.Context, name string) error
}

// Command is one shell command for ExecOperations.
type Command struct {
	// Script is run by a POSIX shell as `sh -c Script`, never by the user's
	// login shell.
	Script string
	// Dir is the absolute working directory. Empty means the host's default
	// (the user's home directory on remote hosts).
	Dir string
	// Env holds extra variables, "KEY=value", added to the host's
	// environment for this command.
	Env []string
	// Output receives stdout and stderr merged in arrival order, all of it
	// however slowly it writes: a slow Output delays the delivery and
	// loses nothing. Writes come from one goroutine at a time and never
	// after Exec returns, so Exec waits for a Write in progress (a Write
	// that never returns holds Exec). Nil discards the output.
	Output io.Writer
	// SaveOutput, when set, keeps the complete output in a file on the
	// host if it is long; Exec reports whether it did.
	SaveOutput *SaveOutput
	// Label says what the command is, for listings of the commands
	// running on a host (default: the script's first line).
	Label string
}

// SaveOutput asks Exec to keep a command's complete output on the host the
// command ran on, without sending it twice: the file is written there.
type SaveOutput struct {
	// Path is where the output goes (absolute, on the host; mode 0600).
	Path string
	// The output is saved when it is longer than OverBytes bytes or than
	// OverLines lines (a last line without a newline counts).
	OverBytes int64
	OverLines int64
	// Saved is set by Exec: true when Path holds the complete output.
	Saved bool
}

// ExecOperations runs commands on one host.
type ExecOperations interface {
	// Exec runs cmd with stdin closed (/dev/null), without a terminal, in a
	// new process group. It returns nil when the command exited 0, an
	// *ExitError for a non-zero exit or death by signal, an error wrapping
	// ErrConnectionLost when the host became unreachable (remote backends
	// first wait a while for it to come back and, if it does, go on with
	// the command where its output had got to: see ops/ssh), or ctx's error
	// when ctx ended first.
	//
	// Cancellation and deadline kill the whole process group on the host
	// before Exec returns. Exec returns once the command has exited, after a
	// short grace period for output, even if a background child still holds
	// stdout or stderr open; such children keep running.
	Exec(ctx context.Context, cmd Command) error
}

// Operations is everything a full backend provides.
type Operations interface {
	ReadOperations
	WriteOperations
	ExecOperations
}

// Spawner is an optional ability: starting a long-lived process that the
// caller talks to over its stdin and stdout (an MCP server on stdio, a
// language server). Unlike Exec, the caller writes to the process as it
// runs, and nothing caps or saves its output.
type Spawner interface {
	// Spawn starts cmd and returns once it runs: Args[0] was found and
	// Dir entered, or the error says why not (a missing program or Dir
	// wraps fs.ErrNotExist). The process is in a process group of its
	// own, without a terminal; its stderr goes to cmd.Stderr.
	//
	// ctx bounds the process's whole life: when it ends, the group is
	// killed, as by Kill. Closing Stdin asks the process to exit (an MCP
	// server's shutdown): it gets cmd.StopGrace to do so, then its group
	// gets SIGTERM, and SIGKILL after StopGrace more. Remote backends do
	// the same when the connection to the host drops (the host sees its
	// end of the process's stdin close), so a lost link leaves no
	// process behind once the host notices the link is gone.
	Spawn(ctx context.Context, cmd SpawnCommand) (Process, error)
}

// SpawnCommand is one process for Spawner.
type SpawnCommand struct {
	// Args is the program and its arguments, run as they are (no shell):
	// Args[0] is looked up in the host's PATH when it has no slash.
	Args []string
	// Dir is the absolute working directory; empty means the host's
	// default (the user's home directory on remote hosts).
	Dir string
	// Env holds extra variables, "KEY=value", added to the host's
	// environment for the process.
	Env []string
	// Stderr receives the process's stderr as it comes (nil discards
	// it). Writes come from one goroutine at a time; a slow Stderr holds
	// the process up once the transport's buffers are full.
	Stderr io.Writer
	// StopGrace is how long the process has to exit after its stdin
	// closed, and then after SIGTERM (default DefaultStopGrace).
	StopGrace time.Duration
}

// DefaultStopGrace is SpawnCommand.StopGrace's default: what the MCP
// specification's stdio shutdown gives a server after its input closes.
const DefaultStopGrace = 5 * time.Second

// Process is a process started by Spawner. Its methods are safe for
// concurrent use.
type Process interface {
	// Stdin is the process's standard input. Close sends the end of it
	// (see Spawner for what follows).
	Stdin() io.WriteCloser
	// Stdout is the process's standard output. It ends (io.EOF) once
	// the process and everything holding its stdout have gone, or with
	// an error wrapping ErrConnectionLost when the link to the host
	// dropped.
	Stdout() io.Reader
	// Wait waits for the process to exit and returns nil for exit
	// status 0, an *ExitError otherwise, or an error wrapping
	// ErrConnectionLost when the connection to the host was lost first
	// (the process is then ended on the host as when its stdin closes).
	// Wait may be called more than once; every call returns the same.
	Wait() error
	// Kill kills the process and its whole process group at once, and
	// returns once they are gone (or the host is unreachable), with
	// Wait's result. Killing a process that has exited does nothing.
	Kill() error
}

// Spawn starts cmd with o's Spawner ability, or fails with an error
// wrapping errors.ErrUnsupported when o has none: a long-lived process
// has no fallback.
func Spawn(ctx context.Context, o any, cmd SpawnCommand) (Process, error) {
	s, ok := o.(Spawner)
	if !ok {
		return nil, fmt.Errorf("this host cannot run a process: %w", errors.ErrUnsupported)
	}
	if len(cmd.Args) == 0 || cmd.Args[0] == "" {
		return nil, errors.New("spawn: no program given")
	}
	return s.Spawn(ctx, cmd)
}

// Resolver is an optional ability: resolving symlinks and ".." on the host.
type Resolver interface {
	// RealPath returns the canonical absolute form of an existing path with
	// every symlink resolved. A missing path wraps fs.ErrNotExist.
	RealPath(ctx context.Context, name string) (string, error)
}

// RealPath resolves name with r's Resolver ability when it has one. Without
// it the fallback checks that name exists and returns it unchanged (lexically
// clean paths are the best a backend without the ability can offer).
func RealPath(ctx context.Context, r ReadOperations, name string) (string, error) {
	if res, ok := r.(Resolver); ok {
		return res.RealPath(ctx, name)
	}
	if _, err := r.Stat(ctx, name); err != nil {
		return "", err
	}
	return name, nil
}

// ResolverOf returns RealPath over r as a Resolver, the shape package
// canonpath takes. Its errors say "no such path" one way: one for a path
// below a non-directory wraps fs.ErrNotExist as well as ErrNotDir.
func ResolverOf(r ReadOperations) Resolver { return resolver{r} }

type resolver struct{ r ReadOperations }

func (x resolver) RealPath(ctx context.Context, name string) (string, error) {
	p, err := RealPath(ctx, x.r, name)
	if errors.Is(err, ErrNotDir) && !errors.Is(err, fs.ErrNotExist) {
		return "", notDirMissing{err}
	}
	return p, err
}

// notDirMissing is an ErrNotDir error that also reports fs.ErrNotExist.
type notDirMissing struct{ error }

func (e notDirMissing) Unwrap() error        { return e.error }
func (e notDirMissing) Is(target error) bool { return target == fs.ErrNotExist }

// ExitError reports a command that ran and did not exit 0, or that the
// backend stopped (Reason): one that exited 0 after its output was cut at
// the cap is reported too, with Code 0.
type ExitError struct {
	Code   int    // exit status; 128+n when killed by signal n
	Signal string // signal name ("KILL", "TERM") when killed by a signal
	// Reason says why the backend stopped the command, when it did (its
	// output passed the cap, its lease ran out, someone killed it).
	Reason string
}

func (e *ExitError) Error() string {
	if e.Reason != "" {
		return fmt.Sprintf("command stopped: %s (exit code %d)", e.Reason, e.Code)
	}
	if e.Signal != "" {
		return fmt.Sprintf("command killed by signal %s (exit code %d)", e.Signal, e.Code)
	}
	return fmt.Sprintf("command exited with code %d", e.Code)
}

var (
	// ErrConnectionLost is wrapped by errors from a backend whose transport
	// to the host is gone. An operation that fails this way may or may not
	// have happened on the host.
	ErrConnectionLost = errors.New("connection to host lost")

	// ErrModified is wrapped when a guarded write (WriteOptions.Guard)
	// found the file changed since it was read.
	ErrModified = errors.New("file changed on disk since it was read")

	// ErrMoved is wrapped when a write's expected canonical path
	// (WriteOptions.Canonical) no longer names the file it would replace.
	ErrMoved = errors.New("path now names another file than expected")

	// ErrIsDir, ErrNotDir and ErrNotRegular are wrapped in *fs.PathError
	// for operations on the wrong kind of file. ErrNotRegular: a device,
	// FIFO or socket, which WriteFile does not replace.
	ErrIsDir      = errors.New("is a directory")
	ErrNotDir     = errors.New("not a directory")
	ErrNotRegular = errors.New("not a regular file")
)

// CtxReader wraps r so that reads fail with ctx's error once ctx is done.
// Backends use it for readers whose library ignores contexts.
func CtxReader(ctx context.Context, r io.Reader) io.Reader {
	return ctxReader{ctx: ctx, r: r}
}

type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}

// DefaultPerm is the mode files created by WriteFile ask for when
// WriteOptions.Perm is zero, before the host's umask: a file made with
// umask 022 is 0644, with umask 077 0600.
const DefaultPerm fs.FileMode = 0o666

// GraceAfterExit is how long Exec waits for output after the command itself
// exited, before it stops reading from children that inherited the pipes.
const GraceAfterExit = 300 * time.Millisecond
