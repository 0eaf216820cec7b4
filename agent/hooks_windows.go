//go:build windows

package agent

import (
	"os/exec"
	"strconv"
	"syscall"
)

// ownGroup starts a hook in a process group of its own and makes its
// cancellation end the hook and every process it started. (Hooks need an
// sh on PATH; Git for Windows provides one.)
func ownGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{CreationFlags: syscall.CREATE_NEW_PROCESS_GROUP}
	cmd.Cancel = func() error {
		if exec.Command("taskkill", "/T", "/F", "/PID", strconv.Itoa(cmd.Process.Pid)).Run() != nil {
			return cmd.Process.Kill()
		}
		return nil
	}
}
