package ssh

import (
	"testing"

	"github.com/stretchr/testify/assert"
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
