package printer

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pi-remote/pi-remote/internal/termtext/termtexttest"
	"github.com/pi-remote/pi-remote/workspace"
)

// hostileText is what a model may write to take over the user's
// terminal: every kind of sequence a terminal obeys.
const hostileText = "clip\x1b]52;c;cm0gLXJmIH4=\a title\x1b]0;pwned\a clear\x1b[2J home\x1b[H" +
	" c1\u009b2J osc\u009d0;c1title\u009c link\x1b]8;;https://evil.example/\x1b\\here\x1b]8;;\x1b\\" +
	" dcs\x1bP+q544e\x1b\\ bell\a cr\rover crlf\r\n rlo\u202eevil\u202c del\x7f red\x1b[31mred\x1b[0m end"

// The jobs table and check's report show what a host says (a job's
// command and state, the host's home and tools) with controls as text.
func TestJobsAndCheckShowHostTextSafely(t *testing.T) {
	code := 1
	var jobs strings.Builder
	require.NoError(t, Jobs(&jobs, []JobRow{
		{Host: "dev\x1b]0;host\a", ID: "j1", State: "running", Command: "make " + hostileText},
		{Host: "dev", ID: "j2\x1b[2J", State: "stopped", Why: "killed\x1b]52;c;eA==\a", Code: &code, Command: "sleep 1\tx"},
	}, true, 0))
	assert.Empty(t, termtexttest.Controls(jobs.String()))
	assert.Contains(t, jobs.String(), "make clip^[]52;c;cm0gLXJmIH4=^G")
	assert.Contains(t, jobs.String(), "stopped: killed^[]52;c;eA==^G")

	var report strings.Builder
	Report(&report, workspace.Report{Name: "dev", Host: "dev (me@dev:22)", HostKey: "known", Auth: "publickey",
		Home: "/home/me\x1b]0;home\a", Fd: "fd 9\x1b[2J", Helpers: []string{"setsid", "timeout\u009b"}}, true)
	assert.Empty(t, termtexttest.Controls(report.String()))
	assert.Contains(t, report.String(), "home:      /home/me^[]0;home^G\n")
	assert.Contains(t, report.String(), "fd:        fd 9^[[2J\n")

	report.Reset()
	Report(&report, workspace.Report{Name: "gpu", Host: "gpu", Error: "ssh: handshake failed: " + hostileText}, true)
	assert.Empty(t, termtexttest.Controls(report.String()))
	assert.Contains(t, report.String(), "state:     unreachable: ssh: handshake failed: clip^[]52;c;")
}

// With a width (the terminal's /jobs), each row fits it: the command is
// cut, the other columns stay whole; without one (jobs to a pipe) the
// command is whole.
func TestJobsFitTheWidth(t *testing.T) {
	rows := []JobRow{
		{Host: "devbox", ID: "3f9a0c1e5b7d2468", State: "running", AgeSecs: 3725, Command: "while true; do date; sleep 1; done # " + strings.Repeat("long comment ", 10)},
		{Host: "gpu", ID: "a1b2c3d4e5f60718", State: "lost", Command: "make train"},
	}
	var b strings.Builder
	require.NoError(t, Jobs(&b, rows, true, 80))
	for _, line := range strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n") {
		assert.LessOrEqual(t, utf8.RuneCountInString(line), 80, "%q", line)
	}
	assert.Contains(t, b.String(), "3f9a0c1e5b7d2468  running")
	assert.Contains(t, b.String(), "1h2m5s  while true; do date; …\n")
	assert.Contains(t, b.String(), "lost (its waiter died)  0s      make train\n")
	b.Reset()
	require.NoError(t, Jobs(&b, rows, true, 0))
	assert.Contains(t, b.String(), strings.Repeat("long comment ", 9))
}
