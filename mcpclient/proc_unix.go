//go:build unix

package mcpclient

import (
	"os/exec"
	"syscall"
)

// ownGroup starts the server in a process group of its own (where a
// Ctrl-C in pi-remote's terminal does not reach it), and where the system
// can, has it killed when pi-remote dies without stopping it.
func ownGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	dieWithParent(cmd.SysProcAttr)
}

// killGroup kills the server's whole group (its id is the server's pid).
// ESRCH, a group already gone, is the expected answer once all exited.
func killGroup(cmd *exec.Cmd) {
	syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
}
