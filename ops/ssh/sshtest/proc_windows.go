//go:build windows

package sshtest

import (
	"os"
	"os/exec"

	glssh "github.com/gliderlabs/ssh"
)

// On Windows the test server runs commands with the sh on PATH (Git for
// Windows); there are no process groups or signals, so any signal kills the
// command itself.
const shell = "sh"

func newSession(*exec.Cmd) {}

func signalGroup(p *os.Process, _ glssh.Signal) { p.Kill() }

func exitCode(ee *exec.ExitError) int { return ee.ExitCode() }
