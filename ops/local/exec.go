package local

import (
	"bytes"
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"sync"
	"time"

	"github.com/pi-remote/pi-remote/ops"
)

// Exec implements ops.ExecOperations: sh -c in a new process group, stdin
// /dev/null, stdout and stderr on one pipe. A relay drains the pipe as fast
// as the command writes and hands the output to cmd.Output from memory, so
// a slow Output stalls neither the command nor the end of its output: all
// of it arrives. After the command exits, children that still hold the
// pipe get ops.GraceAfterExit to finish writing; then the pipe closes.
func (l *FS) Exec(ctx context.Context, c ops.Command) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	shell := l.Shell
	if shell == "" {
		var err error
		if shell, err = defaultShell(); err != nil {
			return err
		}
	}
	script := c.Script
	if len(script) > maxScriptArg {
		// One argument may not exceed 128 KiB on Linux: a longer script
		// is read from a file (it then sees that file as $0).
		f, err := os.CreateTemp("", "pi-remote-script-")
		if err != nil {
			return err
		}
		defer os.Remove(f.Name())
		_, err = f.WriteString(script + "\n")
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return err
		}
		return l.execScript(ctx, shell, []string{"-c", `. "$0"`, f.Name()}, c)
	}
	return l.execScript(ctx, shell, []string{"-c", script}, c)
}

// maxScriptArg is the longest script passed as an argument.
const maxScriptArg = 64 << 10

func (l *FS) execScript(ctx context.Context, shell string, args []string, c ops.Command) error {
	cmd := exec.Command(shell, args...)
	cmd.Dir = c.Dir
	cmd.Env = append(os.Environ(), c.Env...)
	newGroup(cmd)
	if c.Dir != "" {
		if fi, err := os.Stat(c.Dir); err != nil {
			return err
		} else if !fi.IsDir() {
			return &fs.PathError{Op: "chdir", Path: c.Dir, Err: ops.ErrNotDir}
		}
	}
	if c.SaveOutput != nil {
		c.SaveOutput.Saved = false
	}
	pr, pw, err := os.Pipe()
	if err != nil {
		return err
	}
	cmd.Stdout, cmd.Stderr = pw, pw
	if err := cmd.Start(); err != nil {
		pr.Close()
		pw.Close()
		return err
	}
	pw.Close()
	out := c.Output
	if out == nil {
		out = io.Discard
	}
	rl := startRelay(pr, out, newSaver(c.SaveOutput))

	done := make(chan struct{})
	stop := context.AfterFunc(ctx, func() {
		killGroup(cmd.Process)
		close(done)
	})
	err = cmd.Wait()
	rl.finish(ops.GraceAfterExit)
	if !stop() {
		<-done
		return ctx.Err()
	}
	var ee *exec.ExitError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &ee):
		return exitError(ee)
	default:
		return err
	}
}

// relayCap is how much output the relay holds for a slow Output before it
// stops reading (and the command blocks on the full pipe, as it would
// writing to any pipe).
const relayCap = 64 << 20

// relay moves a command's output from its pipe to Output through memory.
type relay struct {
	pipe *os.File
	out  io.Writer
	save *saver

	mu     sync.Mutex
	cond   *sync.Cond
	queue  [][]byte
	queued int
	eof    bool

	read, written chan struct{}
}

func startRelay(pipe *os.File, out io.Writer, save *saver) *relay {
	r := &relay{pipe: pipe, out: out, save: save, read: make(chan struct{}), written: make(chan struct{})}
	r.cond = sync.NewCond(&r.mu)
	go r.readLoop()
	go r.writeLoop()
	return r
}

func (r *relay) readLoop() {
	defer close(r.read)
	for {
		buf := make([]byte, 32<<10)
		n, err := r.pipe.Read(buf)
		if n > 0 {
			r.save.Write(buf[:n])
			r.mu.Lock()
			for r.queued >= relayCap {
				r.cond.Wait()
			}
			r.queue = append(r.queue, buf[:n])
			r.queued += n
			r.cond.Broadcast()
			r.mu.Unlock()
		}
		if err != nil {
			r.mu.Lock()
			r.eof = true
			r.cond.Broadcast()
			r.mu.Unlock()
			return
		}
	}
}

func (r *relay) writeLoop() {
	defer close(r.written)
	for {
		r.mu.Lock()
		for len(r.queue) == 0 && !r.eof {
			r.cond.Wait()
		}
		if len(r.queue) == 0 {
			r.mu.Unlock()
			return
		}
		// Everything queued goes in one write: a slow Output is slow per
		// call as often as per byte.
		chunk := r.queue[0]
		if len(r.queue) > 1 {
			chunk = bytes.Join(r.queue, nil)
		}
		r.queue = nil
		r.queued = 0
		r.cond.Broadcast()
		r.mu.Unlock()
		r.out.Write(chunk)
	}
}

// finish waits up to grace for every writer of the pipe to close it, then
// closes it, and waits until Output has everything read.
func (r *relay) finish(grace time.Duration) {
	select {
	case <-r.read:
	case <-time.After(grace):
		r.pipe.Close()
		<-r.read
	}
	r.pipe.Close()
	<-r.written
	r.save.close()
}

// saver writes the output to SaveOutput.Path once it is longer than the
// thresholds, with everything before.
type saver struct {
	so           *ops.SaveOutput
	head         []byte
	bytes, lines int64
	lastNL       bool
	f            *os.File
	err          error
}

func newSaver(so *ops.SaveOutput) *saver {
	if so == nil {
		return nil
	}
	return &saver{so: so}
}

func (s *saver) Write(p []byte) {
	if s == nil || s.err != nil {
		return
	}
	s.bytes += int64(len(p))
	s.lines += int64(bytes.Count(p, []byte{'\n'}))
	s.lastNL = p[len(p)-1] == '\n'
	if s.f != nil {
		_, s.err = s.f.Write(p)
		return
	}
	s.head = append(s.head, p...)
	lines := s.lines
	if !s.lastNL {
		lines++
	}
	if s.bytes > s.so.OverBytes || lines > s.so.OverLines {
		if s.f, s.err = os.OpenFile(s.so.Path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600); s.err == nil {
			_, s.err = s.f.Write(s.head)
		}
		s.head = nil
	}
}

func (s *saver) close() {
	if s == nil || s.f == nil {
		return
	}
	if err := s.f.Close(); s.err == nil {
		s.err = err
	}
	s.so.Saved = s.err == nil
}
