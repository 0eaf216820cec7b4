//go:build windows

package unprivileged

import "os/exec"

// runAs is never reached on Windows: Geteuid is -1 there, so Rerun skips
// before it ("not root"), and the suite already ran as the user who started it.
func runAs(*exec.Cmd, int, int) { panic("unprivileged: no re-run as another user on Windows") }

func isTextBusy(error) bool { return false }
