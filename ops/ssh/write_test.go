package ssh

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestCksumDigestMatchesCksum(t *testing.T) {
	// Values printed by GNU cksum(1).
	for content, want := range map[string]string{
		"":             "cksum:4294967295:0",
		"hello\n":      "cksum:3015617425:6",
		"0123456789\n": "cksum:3656427724:11",
	} {
		assert.Equal(t, want, contentDigest([]byte(content), "cksum"), "%q", content)
		// Streamed in pieces, the same.
		d := newDigester("cksum")
		for _, b := range []byte(content) {
			d.Write([]byte{b})
		}
		assert.Equal(t, want, d.sum(), "%q", content)
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
