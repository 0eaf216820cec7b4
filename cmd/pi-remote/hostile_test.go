package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pi-remote/pi-remote/internal/termtext/termtexttest"
)

// hostileText is what a model may write to take over the user's
// terminal: every kind of sequence a terminal obeys.
const hostileText = "clip\x1b]52;c;cm0gLXJmIH4=\a title\x1b]0;pwned\a clear\x1b[2J home\x1b[H" +
	" c1\u009b2J osc\u009d0;c1title\u009c link\x1b]8;;https://evil.example/\x1b\\here\x1b]8;;\x1b\\" +
	" dcs\x1bP+q544e\x1b\\ bell\a cr\rover crlf\r\n rlo\u202eevil\u202c del\x7f red\x1b[31mred\x1b[0m end"

// hostileOutput is what a file or command may hold: all of hostileText
// and bytes that are not UTF-8 (a raw 8-bit CSI and OSC; tool results
// carry them as U+FFFD).
const hostileOutput = hostileText + " raw\x9b2J raw\x9d0;rawtitle\a\n"

// ownSequences are the sequences pi-remote itself writes to a terminal
// in print mode: the theme's colours (reset, dim, red, green, yellow,
// cyan), erasing the live tail (up N lines, erase below) and the
// spinner's return to the start of its line.
var (
	anySequence  = regexp.MustCompile(`\r?\x1b\[[0-9;]*[A-Za-z]`)
	ownSequences = map[string]bool{
		"\x1b[0m": true, "\x1b[2m": true, "\x1b[31m": true, "\x1b[32m": true, "\x1b[33m": true, "\x1b[36m": true,
		"\x1b[J": true, "\r\x1b[K": true, "\r\x1b[36m": true,
	}
	cursorUp = regexp.MustCompile(`^\x1b\[[0-9]+F$`)
)

// withoutOwnSequences is s without pi-remote's own sequences; it fails
// the test on any other CSI sequence.
func withoutOwnSequences(t *testing.T, s string) string {
	t.Helper()
	return anySequence.ReplaceAllStringFunc(s, func(seq string) string {
		assert.True(t, ownSequences[seq] || cursorUp.MatchString(seq), "a sequence pi-remote does not write: %q", seq)
		return ""
	})
}

// hostileRun writes a model script whose answer holds hostileText and
// asks for a bash call that prints hostileOutput (the command itself
// holding hostileText too), then a tool whose very name is hostile; the
// next turn fails with a hostile error. It returns the working directory
// and the script.
func hostileRun(t *testing.T) (dir, script string) {
	t.Helper()
	dir = t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "hostile.txt"), []byte(hostileOutput), 0o644))
	type call struct {
		ID        string         `json:"id"`
		Name      string         `json:"name"`
		Arguments map[string]any `json:"arguments"`
	}
	turns := []map[string]any{
		{"text": "Looking. " + hostileText + "\n", "toolCalls": []call{
			{"c1", "bash", map[string]any{"command": "cat hostile.txt; : '" + hostileText + "'"}},
			{"c2", "bash\x1b]0;name\a", map[string]any{}},
		}},
		{"error": "overloaded: " + hostileText},
	}
	b, err := json.Marshal(map[string]any{"turns": turns})
	require.NoError(t, err)
	return dir, writeScript(t, string(b))
}

// Print mode shows the model's text, the tool's call, output and name and
// the model's error with every control made visible; piped (or with
// NO_COLOR), nothing that a terminal obeys is left at all.
func TestPrintModeShowsHostileTextSafely(t *testing.T) {
	t.Setenv("HOME", t.TempDir())
	dir, script := hostileRun(t)
	code, out, stderr := runCLI(t, "", "run", "--cwd", dir, "--model", "scripted/"+script, "look")
	assert.Equal(t, 1, code, "the run ends in the model's error; stderr %q", stderr)
	assert.Empty(t, termtexttest.Controls(out), "stdout")
	assert.Empty(t, termtexttest.Controls(stderr), "stderr")
	assert.Contains(t, out, "Looking. clip^[]52;c;cm0gLXJmIH4=^G title^[]0;pwned^G clear^[[2J", "the answer, made visible")
	assert.Contains(t, out, "cr^Mover crlf\n rlo<U+202E>evil<U+202C> del^? redred end", "a lone CR and bidi shown, CRLF a line end, colour dropped")
	assert.Contains(t, stderr, `→ $ cat hostile.txt; : 'clip^[]52;c;cm0gLXJmIH4=^G`, "the call")
	assert.Contains(t, stderr, "    clip^[]52;c;cm0gLXJmIH4=^G", "the output")
	assert.Contains(t, stderr, "raw\uFFFD2J raw\uFFFD0;rawtitle^G", "the output")
	assert.Contains(t, stderr, "✗ bash^[]0;name^G", "a tool name")
	assert.Contains(t, stderr, "error: overloaded: clip^[]52;c;", "the model's error")
}

// On a terminal with colour, the only sequences are pi-remote's own:
// its colours, the spinner and the live tail.
func TestPrintModeOnATerminalWritesOnlyItsOwnSequences(t *testing.T) {
	t.Setenv("HOME", t.TempDir())
	t.Setenv("NO_COLOR", "")
	t.Setenv("TERM", "xterm-256color")
	dir, script := hostileRun(t)
	tty, output := termtexttest.PTY(t)
	var out strings.Builder
	code := run([]string{"run", "--cwd", dir, "--model", "scripted/" + script, "look"}, strings.NewReader(""), &out, tty)
	stderr := output()
	assert.Equal(t, 1, code, "stderr %q", stderr)
	require.Contains(t, stderr, "\x1b[36m→ $ cat hostile.txt", "in colour on a terminal")
	assert.Empty(t, termtexttest.Controls(out.String()), "stdout")
	assert.Empty(t, termtexttest.Controls(withoutOwnSequences(t, stderr)), "stderr")
	assert.Contains(t, stderr, "raw\uFFFD2J raw\uFFFD0;rawtitle^G")
}

// pi-remote tool keeps its output byte for byte in a file or a pipe
// (scripts depend on it); on a terminal it shows the controls as text.
// --json escapes them, on a terminal or not, and decodes to the same.
func TestToolOutputOnATerminal(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "hostile.txt"), []byte(hostileOutput), 0o644))
	args := []string{"--cwd", dir, "tool", "bash", `{"command":"cat hostile.txt"}`}

	code, piped, stderr := runCLI(t, "", args...)
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, piped, hostileText, "piped: the exact text")

	code, asJSON, stderr := runCLI(t, "", append(args, "--json")...)
	require.Equal(t, 0, code, stderr)
	assert.Empty(t, termtexttest.Controls(asJSON), "--json escapes every control")
	var res struct {
		Content []struct{ Text string } `json:"content"`
	}
	require.NoError(t, json.Unmarshal([]byte(asJSON), &res))
	require.Len(t, res.Content, 1)
	assert.Equal(t, piped, strings.TrimRight(res.Content[0].Text, "\n")+"\n", "--json has the same text")

	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"text", args, "clip^[]52;c;cm0gLXJmIH4=^G title^[]0;pwned^G clear^[[2J home^[[H c1<U+009B>2J"},
		{"json", append(args, "--json"), `clip\u001b]52;c;cm0gLXJmIH4=\u0007 title\u001b]0;pwned\u0007 clear\u001b[2J home\u001b[H c1\u009b2J`},
	} {
		t.Run("terminal "+tc.name, func(t *testing.T) {
			tty, output := termtexttest.PTY(t)
			var stderr strings.Builder
			code := run(tc.args, strings.NewReader(""), tty, &stderr)
			shown := output()
			require.Equal(t, 0, code, stderr.String())
			assert.Empty(t, termtexttest.Controls(shown))
			assert.Contains(t, shown, tc.want)
		})
	}
}

// The transcript of a session whose messages hold controls: byte for
// byte into a pipe, shown as text on a terminal; the session list shows
// the first prompt's as text too.
func TestSessionsAndExportOnATerminal(t *testing.T) {
	t.Setenv("HOME", t.TempDir())
	t.Setenv("PI_REMOTE_MODEL", "")
	dir, script := hostileRun(t)
	code, _, stderr := runCLI(t, "", "run", "--cwd", dir, "--model", "scripted/"+script, "look: "+hostileText)
	require.Equal(t, 1, code, stderr)

	code, list, stderr := runCLI(t, "", "sessions")
	require.Equal(t, 0, code, stderr)
	assert.Empty(t, termtexttest.Controls(list))
	assert.Contains(t, list, "look: clip^[]52;c;")

	code, asJSON, stderr := runCLI(t, "", "sessions", "--json")
	require.Equal(t, 0, code, stderr)
	assert.Empty(t, termtexttest.Controls(asJSON))
	var info struct{ ID, FirstPrompt string }
	require.NoError(t, json.Unmarshal([]byte(asJSON), &info))
	assert.Equal(t, "look: "+hostileText, info.FirstPrompt, "--json has the exact prompt")

	code, piped, stderr := runCLI(t, "", "export", info.ID)
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, piped, hostileText, "piped: byte for byte")

	tty, output := termtexttest.PTY(t)
	var errOut strings.Builder
	code = run([]string{"export", info.ID}, strings.NewReader(""), tty, &errOut)
	shown := output()
	require.Equal(t, 0, code, errOut.String())
	assert.Empty(t, termtexttest.Controls(shown))
	assert.Contains(t, shown, "look: clip^[]52;c;cm0gLXJmIH4=^G title^[]0;pwned^G")
}

// An error message printed on stderr shows the controls it carries as
// text.
func TestErrorsShowControlsAsText(t *testing.T) {
	code, out, stderr := runCLI(t, "", "--cwd", filepath.Join(t.TempDir(), "nope"+hostileText), "tool", "ls")
	assert.Equal(t, 2, code, stderr)
	assert.Empty(t, out)
	assert.Empty(t, termtexttest.Controls(stderr))
	assert.Contains(t, stderr, "nopeclip^[]52;c;cm0gLXJmIH4=^G")
}

// A notice that one of several hosts is unreachable carries the error's
// text, here the host's address: its controls are shown as text.
func TestNoticesShowControlsAsText(t *testing.T) {
	code, _, stderr := runCLI(t, "", "--cwd", t.TempDir(), "--host", "a=local", "--host", "b=u@x\x1b]0;t\a.invalid", "tool", "ls")
	assert.Equal(t, 0, code, stderr)
	assert.Contains(t, stderr, "host b is unreachable")
	assert.Empty(t, termtexttest.Controls(stderr))
	assert.Contains(t, stderr, "x^[]0;t^G.invalid")
}
