package ssh

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestPosixCksumMatchesCksum(t *testing.T) {
	// Values printed by GNU cksum(1).
	for content, want := range map[string]uint32{
		"":             4294967295,
		"hello\n":      3015617425,
		"0123456789\n": 3656427724,
	} {
		assert.Equal(t, want, posixCksum([]byte(content)), "%q", content)
	}
}

func TestPrintfFormat(t *testing.T) {
	for in, want := range map[string]string{
		"plain text\n": `plain text\n`,
		"100% \\ done": `100%% \\ done`,
		"-n":           `\055n`,
		"\x00\x01\xff": `\000\001\377`,
		"héllo":        "héllo",
		"it's":         "it's",
	} {
		assert.Equal(t, want, printfFormat([]byte(in)), "%q", in)
	}
}

// The printf format survives the shells that run server.sh, as one line.
func TestPrintfFormatRoundTrip(t *testing.T) {
	content := "line 1\nit's 100% \\ done\n\x00\x01\x1e\xff caf\xc3\xa9\n-dash\n'\n\t\n"
	for _, sh := range testShells(t) {
		cmd := exec.Command(sh[0], append(sh[1:], "-c", `IFS= read -r f; printf "$f"`)...)
		format := printfFormat([]byte(content))
		assert.NotContains(t, format, "\n")
		cmd.Stdin = strings.NewReader(format + "\n")
		out, err := cmd.Output()
		require.NoError(t, err, "%v", sh)
		assert.Equal(t, content, string(out), "%v", sh)
	}
}
