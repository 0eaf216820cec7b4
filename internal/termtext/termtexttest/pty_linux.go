//go:build linux

package termtexttest

import (
	"bytes"
	"io"
	"os"
	"strconv"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// PTY opens a pseudo-terminal: what is written to tty (by the test, or by
// a child given it as its stdout) reaches a terminal as a user's would,
// byte for byte (no output processing: a newline stays a newline). output
// closes tty and returns all that was written to it, once every writer
// has closed it too. In CI a system without pseudo-terminals fails the
// test; elsewhere it skips it.
func PTY(t *testing.T) (tty *os.File, output func() string) {
	t.Helper()
	master, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("no pseudo-terminal in CI: %v", err)
		}
		t.Skipf("no pseudo-terminal here: %v", err)
	}
	fd := int(master.Fd())
	require.NoError(t, unix.IoctlSetPointerInt(fd, unix.TIOCSPTLCK, 0), "unlock the pty")
	n, err := unix.IoctlGetInt(fd, unix.TIOCGPTN)
	require.NoError(t, err)
	tty, err = os.OpenFile("/dev/pts/"+strconv.Itoa(n), os.O_RDWR|syscall.O_NOCTTY, 0)
	require.NoError(t, err)
	tio, err := unix.IoctlGetTermios(int(tty.Fd()), unix.TCGETS)
	require.NoError(t, err)
	tio.Oflag &^= unix.OPOST
	tio.Lflag &^= unix.ECHO | unix.ICANON
	require.NoError(t, unix.IoctlSetTermios(int(tty.Fd()), unix.TCSETS, tio))
	var buf bytes.Buffer
	done := make(chan struct{})
	go func() {
		defer close(done)
		io.Copy(&buf, master) // ends with EIO once tty is closed
	}()
	closed := false
	finish := func() string {
		if !closed {
			closed = true
			tty.Close()
			<-done
			master.Close()
		}
		return buf.String()
	}
	t.Cleanup(func() { finish() })
	return tty, finish
}
