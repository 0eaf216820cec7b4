package sshd

import (
	"net"
	"os"
	"os/exec"
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A daemon that lost its port to another process is told apart from one
// that listens: the listener is this process's, not a child's.
func TestListensOn(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc")
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	port := l.Addr().(*net.TCPAddr).Port
	assert.True(t, listensOn(os.Getpid(), port), "this process listens")

	child := exec.Command("sleep", "30")
	require.NoError(t, child.Start())
	defer func() { child.Process.Kill(); child.Wait() }()
	assert.False(t, listensOn(child.Process.Pid, port), "a process that does not")

	free := freePort(t)
	assert.False(t, listensOn(os.Getpid(), free), "a port nobody listens on")
}
