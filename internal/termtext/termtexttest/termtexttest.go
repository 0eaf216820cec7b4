// Package termtexttest checks, in tests, that text is safe to write to a
// terminal (Controls), and gives tests a real terminal to write to (PTY).
// It holds its own list of what a terminal may obey, apart from
// termtext's, so a test does not check termtext against itself.
package termtexttest

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// Controls reports the first byte or character in s that a terminal may
// obey — a C0 control other than newline and tab, DEL, a C1 control, a
// bidi embedding, override or isolate, a byte that is not UTF-8 — with
// where it is and what is around it; "" when there is none.
func Controls(s string) string {
	for i, r := range s {
		switch {
		case r == utf8.RuneError && !strings.HasPrefix(s[i:], "\uFFFD"):
			return fmt.Sprintf("byte %#02x at %d in %q", s[i], i, around(s, i))
		case r < 0x20 && r != '\n' && r != '\t', r == 0x7f, r >= 0x80 && r <= 0x9f,
			r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069:
			return fmt.Sprintf("%U at %d in %q", r, i, around(s, i))
		}
	}
	return ""
}

func around(s string, i int) string {
	return s[max(i-30, 0):min(i+30, len(s))]
}
