//go:build unix

package local

import (
	"os"
	"os/exec"
	"syscall"

	"github.com/pi-remote/pi-remote/ops"
)

func defaultShell() (string, error) { return "/bin/sh", nil }

// newGroup puts the command in a process group of its own.
func newGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}

// killGroup kills the command's whole process group.
func killGroup(p *os.Process) {
	// The group may already be gone; ESRCH is the expected answer then and
	// there is nothing else to do on failure.
	syscall.Kill(-p.Pid, syscall.SIGKILL)
}

// exitError reports a non-zero exit or a death by signal (128+n).
func exitError(ee *exec.ExitError) error {
	if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return &ops.ExitError{Code: 128 + int(ws.Signal()), Signal: signalName(ws.Signal())}
	}
	return &ops.ExitError{Code: ee.ExitCode()}
}

func signalName(s syscall.Signal) string {
	names := map[syscall.Signal]string{
		syscall.SIGKILL: "KILL", syscall.SIGTERM: "TERM", syscall.SIGINT: "INT",
		syscall.SIGHUP: "HUP", syscall.SIGQUIT: "QUIT", syscall.SIGSEGV: "SEGV",
		syscall.SIGABRT: "ABRT", syscall.SIGPIPE: "PIPE", syscall.SIGUSR1: "USR1",
		syscall.SIGUSR2: "USR2", syscall.SIGALRM: "ALRM", syscall.SIGBUS: "BUS",
		syscall.SIGFPE: "FPE", syscall.SIGILL: "ILL",
	}
	if n, ok := names[s]; ok {
		return n
	}
	return s.String()
}

// termGroup asks the command's whole process group to end (SIGTERM).
func termGroup(p *os.Process) {
	// As killGroup: ESRCH when the group is gone.
	syscall.Kill(-p.Pid, syscall.SIGTERM)
}
