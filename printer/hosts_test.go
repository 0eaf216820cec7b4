package printer

import (
	"strings"
	"testing"

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
	}, true))
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
