// Package shellquote quotes words for POSIX sh. Every word pi-remote puts
// into a shell command goes through Quote.
package shellquote

import "strings"

// Quote returns s as one POSIX shell word: wrapped in single quotes, with
// every single quote inside closed, escaped with a backslash and reopened.
// Inside single quotes nothing is special ($, backticks, backslashes,
// newlines, non-UTF-8 bytes), so the shell passes the bytes of s through
// unchanged. A word starting with "-" is still an option to most commands:
// put "--" or "-e" before it where that matters.
func Quote(s string) string {
	if s == "" {
		return "''"
	}
	if isSafe(s) {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// LineVar is the shell variable QuoteLine's words expect to hold a single
// newline.
const LineVar = "nl"

// QuoteLine is Quote for words that must fit on one line (a request read
// with `read -r`): every newline inside s is written as "$nl", so the shell
// that evaluates the word must have set nl (LineVar) to a newline first.
// The word still passes the bytes of s through unchanged.
func QuoteLine(s string) string {
	return strings.ReplaceAll(Quote(s), "\n", `'"$`+LineVar+`"'`)
}

// Join quotes each word and joins them with spaces.
func Join(words ...string) string {
	q := make([]string, len(words))
	for i, w := range words {
		q[i] = Quote(w)
	}
	return strings.Join(q, " ")
}

func isSafe(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case c == '-' || c == '_' || c == '.' || c == '/' || c == ',' || c == ':' || c == '+' || c == '@' || c == '%':
		default:
			return false
		}
	}
	return true
}
