//go:build unix

package mcpclient

import (
	"os/exec"
	"syscall"
)

// ownGroup starts the server in a process group of its own.
func ownGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}

// killGroup kills the server's whole group (its id is the server's pid).
// ESRCH, a group already gone, is the expected answer once all exited.
func killGroup(cmd *exec.Cmd) {
	syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
}
