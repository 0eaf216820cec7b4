//go:build unix

package unprivileged

import (
	"errors"
	"os/exec"
	"syscall"
)

func runAs(cmd *exec.Cmd, uid, gid int) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}}
}

func isTextBusy(err error) bool { return errors.Is(err, syscall.ETXTBSY) }
