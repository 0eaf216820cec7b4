//go:build windows

package local

import (
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"strconv"
	"syscall"

	"github.com/pi-remote/pi-remote/ops"
)

// On Windows the local backend runs commands with the sh found on PATH
// (Git for Windows installs one); files have no Unix owner, and a process
// tree is ended with taskkill. Remote hosts are what Windows users drive.

func defaultShell() (string, error) {
	sh, err := exec.LookPath("sh")
	if err != nil {
		return "", errors.New("the local backend needs a POSIX sh on PATH (Git for Windows provides one); remote hosts (--host) need nothing local")
	}
	return sh, nil
}

// newGroup starts the command in a process group of its own.
func newGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{CreationFlags: syscall.CREATE_NEW_PROCESS_GROUP}
}

// killGroup ends the command and every process it started.
func killGroup(p *os.Process) {
	if exec.Command("taskkill", "/T", "/F", "/PID", strconv.Itoa(p.Pid)).Run() != nil {
		p.Kill()
	}
}

// termGroup ends the command and every process it started: Windows has
// no SIGTERM to ask them first.
func termGroup(p *os.Process) { killGroup(p) }

func exitError(ee *exec.ExitError) error { return &ops.ExitError{Code: ee.ExitCode()} }

// keepOwner does nothing: Windows files have no Unix owner to keep.
func keepOwner(*os.File, fs.FileInfo) error { return nil }
