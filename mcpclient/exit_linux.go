package mcpclient

import (
	"errors"
	"syscall"

	"golang.org/x/sys/unix"
)

// awaitExit waits until process pid exits, leaving it unreaped (its pid
// stays its own), and says whether it could.
func awaitExit(pid int) bool {
	for {
		var info unix.Siginfo
		err := unix.Waitid(unix.P_PID, pid, &info, unix.WEXITED|unix.WNOWAIT, nil)
		if !errors.Is(err, unix.EINTR) {
			return err == nil
		}
	}
}

// dieWithParent has the server killed when pi-remote dies (killed itself,
// with no chance to stop it).
func dieWithParent(a *syscall.SysProcAttr) { a.Pdeathsig = syscall.SIGKILL }
