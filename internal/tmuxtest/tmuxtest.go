// Package tmuxtest runs a program in a real terminal for a test: a tmux
// server of its own, driven with send-keys and read with capture-pane.
// The terminal UI's tests (cmd/pi-remote, integration) use it.
package tmuxtest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pi-remote/pi-remote/internal/shellquote"
)

// Terminal is a program running in a tmux window named main.
type Terminal struct {
	t testing.TB
	// Socket names the test's own tmux server (tmux -L), for what the
	// methods do not cover (control mode).
	Socket string
}

// Start runs command (with TERM=xterm-256color) in a width×height
// terminal. Without tmux the test is skipped, or in CI (CI set) failed:
// .ci/run installs it.
func Start(t testing.TB, width, height int, command ...string) *Terminal {
	t.Helper()
	return start(t, "", width, height, command)
}

// StartOn is Start in a terminal whose background is colour (a tmux
// colour: "colour255", "#ffffff"), which tmux reports to a program that
// asks (OSC 11). (Start's terminal reports none.)
func StartOn(t testing.TB, colour string, width, height int, command ...string) *Terminal {
	t.Helper()
	return start(t, colour, width, height, command)
}

func start(t testing.TB, background string, width, height int, command []string) *Terminal {
	t.Helper()
	if _, err := exec.LookPath("tmux"); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("tmux is not installed; .ci/run installs it")
		}
		t.Skip("tmux is not installed")
	}
	tm := &Terminal{t: t, Socket: fmt.Sprintf("pi-remote-test-%d-%d", os.Getpid(), time.Now().UnixNano())}
	command = append([]string{"env", "TERM=xterm-256color"}, command...)
	session := []string{"new-session", "-d", "-s", "main", "-x", fmt.Sprint(width), "-y", fmt.Sprint(height), shellquote.Join(command...)}
	if background != "" {
		// (Set before the program starts: it asks at once.)
		session = append([]string{"start-server", ";", "set-option", "-g", "window-style", "bg=" + background, ";"}, session...)
	}
	tm.Tmux(session...)
	tm.Tmux("set-option", "-t", "main", "remain-on-exit", "on")
	tm.Tmux("set-option", "-t", "main", "history-limit", "50000")
	t.Cleanup(func() { exec.Command("tmux", "-L", tm.Socket, "kill-server").Run() })
	return tm
}

// Tmux runs a tmux command on the terminal's server and returns its
// output.
func (tm *Terminal) Tmux(args ...string) string {
	tm.t.Helper()
	out, err := exec.Command("tmux", append([]string{"-L", tm.Socket}, args...)...).CombinedOutput()
	require.NoError(tm.t, err, "tmux %v: %s", args, out)
	return string(out)
}

// Keys sends keys by tmux's names (Enter, Escape, M-Enter, C-c).
func (tm *Terminal) Keys(keys ...string) {
	tm.Tmux(append([]string{"send-keys", "-t", "main"}, keys...)...)
}

// Type types text as it is.
func (tm *Terminal) Type(text string) { tm.Tmux("send-keys", "-t", "main", "-l", text) }

// Paste pastes text as a terminal does (bracketed).
func (tm *Terminal) Paste(text string) {
	tm.t.Helper()
	f := filepath.Join(tm.t.TempDir(), "paste")
	require.NoError(tm.t, os.WriteFile(f, []byte(text), 0o644))
	tm.Tmux("load-buffer", "-b", "p", f)
	tm.Tmux("paste-buffer", "-p", "-b", "p", "-t", "main")
}

// Screen is what the terminal shows; Scrollback all of it, its history
// too, wrapped lines joined.
func (tm *Terminal) Screen() string { return tm.Tmux("capture-pane", "-p", "-t", "main") }
func (tm *Terminal) Scrollback() string {
	return tm.Tmux("capture-pane", "-p", "-J", "-S", "-", "-t", "main")
}

// ScrollbackEscapes is Scrollback with the escape sequences that set
// each cell's colours and attributes (tmux's capture-pane -e).
func (tm *Terminal) ScrollbackEscapes() string {
	return tm.Tmux("capture-pane", "-p", "-e", "-J", "-S", "-", "-t", "main")
}

// WaitFor waits until the screen shows text (20 s at most).
func (tm *Terminal) WaitFor(text string) {
	tm.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !strings.Contains(tm.Screen(), text) {
		if time.Now().After(deadline) {
			tm.t.Fatalf("the screen never showed %q:\n%s", text, tm.Screen())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// WaitGone waits until the screen no longer shows text (20 s at most).
func (tm *Terminal) WaitGone(text string) {
	tm.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for strings.Contains(tm.Screen(), text) {
		if time.Now().After(deadline) {
			tm.t.Fatalf("the screen still shows %q:\n%s", text, tm.Screen())
		}
		time.Sleep(20 * time.Millisecond)
	}
}
