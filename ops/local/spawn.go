package local

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"sync"
	"time"

	"github.com/pi-remote/pi-remote/ops"
)

var _ ops.Spawner = (*FS)(nil)

// Spawn implements ops.Spawner with os/exec: the program runs directly,
// in a process group of its own, its stdin and stdout on pipes. Closing
// Stdin starts the stop sequence of ops.Spawner (StopGrace, SIGTERM to the
// group, StopGrace, SIGKILL); ctx's end and Kill kill the group at once.
// When the process exits, what is left of its group is killed.
func (l *FS) Spawn(ctx context.Context, c ops.SpawnCommand) (ops.Process, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if len(c.Args) == 0 || c.Args[0] == "" {
		return nil, errors.New("spawn: no program given")
	}
	if c.Dir != "" {
		if fi, err := os.Stat(c.Dir); err != nil {
			return nil, err
		} else if !fi.IsDir() {
			return nil, &fs.PathError{Op: "chdir", Path: c.Dir, Err: ops.ErrNotDir}
		}
	}
	path, err := exec.LookPath(c.Args[0])
	if err != nil {
		if errors.Is(err, exec.ErrNotFound) || errors.Is(err, fs.ErrNotExist) {
			return nil, &fs.PathError{Op: "exec", Path: c.Args[0], Err: fs.ErrNotExist}
		}
		return nil, err
	}
	grace := c.StopGrace
	if grace <= 0 {
		grace = ops.DefaultStopGrace
	}
	cmd := exec.Command(path, c.Args[1:]...)
	cmd.Args[0] = c.Args[0]
	cmd.Dir = c.Dir
	cmd.Env = append(os.Environ(), c.Env...)
	cmd.Stderr = c.Stderr
	// A child that keeps stderr open after the process exited holds the
	// copy no longer than this.
	cmd.WaitDelay = grace
	newGroup(cmd)
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		return nil, err
	}
	cmd.Stdin, cmd.Stdout = inR, outW
	err = cmd.Start()
	inR.Close()
	outW.Close()
	if err != nil {
		inW.Close()
		outR.Close()
		return nil, err
	}
	p := &process{cmd: cmd, in: inW, out: outR, grace: grace, exited: make(chan struct{})}
	p.stopCtx = context.AfterFunc(ctx, func() { p.Kill() })
	go p.wait()
	return p, nil
}

// process is a process started by FS.Spawn.
type process struct {
	cmd   *exec.Cmd
	in    *os.File
	out   *os.File
	grace time.Duration

	mu       sync.Mutex // guards ended and the signals sent to the group
	ended    bool       // the process has exited (and been reaped)
	stopping bool       // stdin closed: the stop sequence runs
	exited   chan struct{}
	result   error
	stopCtx  func() bool
}

// wait reaps the process, kills what is left of its group, and records
// the result.
func (p *process) wait() {
	err := p.cmd.Wait()
	p.mu.Lock()
	p.ended = true
	// Whatever of the group outlives its leader; the group's id cannot
	// be another's while one of them lives, and the kill follows the
	// reaping at once.
	killGroup(p.cmd.Process)
	p.mu.Unlock()
	var ee *exec.ExitError
	switch {
	case err == nil, errors.Is(err, exec.ErrWaitDelay):
	case errors.As(err, &ee):
		p.result = exitError(ee)
	default:
		p.result = err
	}
	p.stopCtx()
	close(p.exited)
}

// signal sends the group SIGTERM (term) or SIGKILL unless the process
// has exited.
func (p *process) signal(term bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ended {
		return
	}
	if term {
		termGroup(p.cmd.Process)
	} else {
		killGroup(p.cmd.Process)
	}
}

func (p *process) Stdin() io.WriteCloser { return stdin{p} }
func (p *process) Stdout() io.Reader     { return stdout{p} }

func (p *process) Wait() error {
	<-p.exited
	return p.result
}

func (p *process) Kill() error {
	p.signal(false)
	return p.Wait()
}

// stop is the stop sequence after stdin closed.
func (p *process) stop() {
	for _, term := range []bool{true, false} {
		select {
		case <-p.exited:
			return
		case <-time.After(p.grace):
		}
		p.signal(term)
	}
}

type stdin struct{ p *process }

func (w stdin) Write(b []byte) (int, error) { return w.p.in.Write(b) }

// Close ends the process's stdin and starts the stop sequence.
func (w stdin) Close() error {
	p := w.p
	p.mu.Lock()
	first := !p.stopping
	p.stopping = true
	p.mu.Unlock()
	if !first {
		return nil
	}
	err := p.in.Close()
	go p.stop()
	if err != nil {
		return fmt.Errorf("closing a process's stdin: %w", err)
	}
	return nil
}

// stdout closes its pipe at the end, and then reads io.EOF.
type stdout struct{ p *process }

func (r stdout) Read(b []byte) (int, error) {
	n, err := r.p.out.Read(b)
	switch {
	case errors.Is(err, io.EOF):
		r.p.out.Close()
	case errors.Is(err, os.ErrClosed):
		err = io.EOF
	}
	return n, err
}
