package shellquote_test

import (
	"bytes"
	"os/exec"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pi-remote/pi-remote/internal/shellquote"
)

// echoBack runs printf through sh with the quoted word and returns what the
// shell passed to printf.
func echoBack(t testing.TB, s string) string {
	cmd := exec.Command("/bin/sh", "-c", "printf '%s' "+shellquote.Quote(s))
	var out bytes.Buffer
	cmd.Stdout = &out
	require.NoError(t, cmd.Run())
	return out.String()
}

func TestQuoteSurvivesTheShell(t *testing.T) {
	for _, s := range []string{
		"", "plain", "with space", "it's", `"double"`, "$(touch /tmp/pwned)", "`id`", "$HOME", "a\nb",
		"-n", "--help", "back\\slash", "*.go", "semi;colon", "pipe|amp&", "\xff\xfe non-UTF-8", "tab\there", "'", "''", "~",
	} {
		assert.Equal(t, s, echoBack(t, s), "word %q", s)
	}
}

// QuoteLine's words have no newline and, with nl set, survive eval as
// Quote's do.
func TestQuoteLineSurvivesEval(t *testing.T) {
	for _, s := range []string{"", "plain", "a\nb", "\n", "\n\n'x'\n", "it's\nthere", "$nl", "trailing\n"} {
		word := shellquote.QuoteLine(s)
		assert.NotContains(t, word, "\n")
		cmd := exec.Command("/bin/sh", "-c", `nl='
'; IFS= read -r line; eval "printf '%s' $line"`)
		cmd.Stdin = bytes.NewBufferString(word + "\n")
		out, err := cmd.Output()
		require.NoError(t, err)
		assert.Equal(t, s, string(out), "word %q", s)
	}
}

func TestJoin(t *testing.T) {
	assert.Equal(t, `grep -e -v -- 'a b' 'it'\''s'`, shellquote.Join("grep", "-e", "-v", "--", "a b", "it's"))
}

func FuzzQuote(f *testing.F) {
	for _, s := range []string{"a", "it's", "$(x)", "`x`", "a\nb", "-rf", "\xff"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if bytes.IndexByte([]byte(s), 0) >= 0 {
			t.Skip("a NUL byte cannot be part of an argument")
		}
		if got := echoBack(t, s); got != s {
			t.Fatalf("shell turned %q into %q", s, got)
		}
	})
}
