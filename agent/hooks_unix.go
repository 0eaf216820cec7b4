//go:build unix

package agent

import (
	"os/exec"
	"syscall"
)

// ownGroup starts a hook in a process group of its own and makes its
// cancellation kill that whole group: what the hook started, and nothing
// else.
func ownGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error {
		// The group's id is the hook's pid (Setpgid). ESRCH: already gone.
		return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
}
