//go:build unix

package sshtest

import (
	"os"
	"os/exec"
	"syscall"

	glssh "github.com/gliderlabs/ssh"
)

const shell = "/bin/sh"

// newSession starts cmd in a session of its own, as sshd starts a command.
func newSession(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
}

// signalGroup delivers an SSH signal to the command's whole process group.
func signalGroup(p *os.Process, s glssh.Signal) {
	syscall.Kill(-p.Pid, signalNumber(s))
}

// exitCode is the status sshd reports: 128+N for a command killed by signal N.
func exitCode(ee *exec.ExitError) int {
	if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ee.ExitCode()
}

func signalNumber(s glssh.Signal) syscall.Signal {
	switch s {
	case glssh.SIGKILL:
		return syscall.SIGKILL
	case glssh.SIGINT:
		return syscall.SIGINT
	case glssh.SIGHUP:
		return syscall.SIGHUP
	case glssh.SIGUSR1:
		return syscall.SIGUSR1
	}
	return syscall.SIGTERM
}
