//go:build unix

package unprivileged

import (
	"os/exec"
	"syscall"
)

func runAs(cmd *exec.Cmd, uid, gid int) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}}
}
