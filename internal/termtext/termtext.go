// Package termtext makes text from outside — a model's answer, a tool's
// output, a host's names and errors — safe to show on a terminal. Such
// text may carry control characters that a terminal obeys instead of
// showing: ESC ]52 writes the clipboard, ESC ]0 sets the window title,
// ESC [2J clears the screen, a lone CR lets a line overwrite what came
// before it, and bidi overrides show text in another order than it has
// (Trojan Source). Shown, every one of them becomes visible text instead:
//
//   - C0 controls other than newline and tab, in caret notation: ESC is
//     "^[", BEL "^G", a lone CR "^M" (a CR before a newline is dropped:
//     CRLF line ends read as LF), NUL "^@"; DEL is "^?";
//   - C1 controls (U+0080–U+009F), bidi embeddings, overrides and isolates
//     (U+202A–U+202E, U+2066–U+2069) as "<U+009B>";
//   - a byte that is not part of valid UTF-8 (a raw 0x9b, which some
//     terminals take for CSI) as "\x9b".
//
// Only a complete SGR sequence (ESC [ digits, ';' and ':' then 'm': colour
// and weight) is dropped instead: it cannot move the cursor or reach
// outside the terminal, and coloured output of tools stays readable. Its
// effect is not kept either, so nothing can be hidden by it (concealed or
// black-on-black text). Newline, tab and all other text pass unchanged.
//
// String cleans a whole string; Writer cleans a stream, holding back what
// a later write may complete (a split escape sequence, rune or CRLF).
package termtext

import (
	"fmt"
	"io"
	"strings"
	"unicode/utf8"
)

// maxSGR bounds the SGR sequence that is dropped; a longer one is shown.
const maxSGR = 64

// String returns s as a terminal should show it.
func String(s string) string {
	if clean(s) {
		return s
	}
	out, _ := appendClean(nil, []byte(s), true)
	return string(out)
}

// clean says whether s has nothing to change.
func clean(s string) bool {
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c == 0x7f || (c < 0x20 && c != '\n' && c != '\t') {
				return false
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 || shownAsCode(r) {
			return false
		}
		i += size
	}
	return true
}

// shownAsCode says whether r is a C1 control or a bidi control, shown as
// its code point.
func shownAsCode(r rune) bool {
	return r >= 0x80 && r <= 0x9f || r >= 0x202a && r <= 0x202e || r >= 0x2066 && r <= 0x2069
}

// appendClean appends the shown form of p to dst. Unless final, it stops
// before what the next bytes may complete (an escape sequence that may be
// SGR, a rune cut short, a CR that may start a CRLF) and returns it as
// rest; final shows everything.
func appendClean(dst, p []byte, final bool) (out, rest []byte) {
	for i := 0; i < len(p); {
		c := p[i]
		switch {
		case c == '\n' || c == '\t':
			dst = append(dst, c)
			i++
		case c == '\r':
			switch {
			case i+1 < len(p) && p[i+1] == '\n':
				dst = append(dst, '\n')
				i += 2
			case i+1 == len(p) && !final:
				return dst, p[i:]
			default:
				dst = append(dst, '^', 'M')
				i++
			}
		case c == 0x1b:
			n, complete := sgrLen(p[i:])
			switch {
			case !complete && !final:
				return dst, p[i:]
			case n > 0:
				i += n
			default:
				dst = append(dst, '^', '[')
				i++
			}
		case c < 0x20:
			dst = append(dst, '^', c+0x40)
			i++
		case c == 0x7f:
			dst = append(dst, '^', '?')
			i++
		case c < utf8.RuneSelf:
			dst = append(dst, c)
			i++
		default:
			if !utf8.FullRune(p[i:]) && !final {
				return dst, p[i:]
			}
			r, size := utf8.DecodeRune(p[i:])
			switch {
			case r == utf8.RuneError && size == 1:
				dst = fmt.Appendf(dst, `\x%02x`, c)
			case shownAsCode(r):
				dst = fmt.Appendf(dst, "<U+%04X>", r)
			default:
				dst = append(dst, p[i:i+size]...)
			}
			i += size
		}
	}
	return dst, nil
}

// sgrLen is the length of the SGR sequence p starts with (p[0] is ESC), 0
// when it is none; complete is false while more bytes could still make
// one.
func sgrLen(p []byte) (n int, complete bool) {
	if len(p) < 2 {
		return 0, false
	}
	if p[1] != '[' {
		return 0, true
	}
	for j := 2; j < len(p) && j < maxSGR; j++ {
		switch c := p[j]; {
		case c == 'm':
			return j + 1, true
		case c >= '0' && c <= '9' || c == ';' || c == ':':
		default:
			return 0, true
		}
	}
	return 0, len(p) >= maxSGR
}

// Writer writes to a terminal what String would show of the bytes written
// to it, whatever the bytes are split into: an escape sequence, a rune or a
// CRLF cut between two writes is shown as if written at once. It holds
// back at most a few bytes until the next Write or Flush. A Writer is not
// safe for concurrent use.
type Writer struct {
	w       io.Writer
	pending []byte // the start of what the next write may complete
	buf     []byte
}

// NewWriter returns a Writer that writes to w.
func NewWriter(w io.Writer) *Writer { return &Writer{w: w} }

// Write shows p on the underlying writer; it returns len(p) unless the
// underlying write failed.
func (w *Writer) Write(p []byte) (int, error) {
	in := p
	if len(w.pending) > 0 {
		in = append(w.pending, p...)
	}
	out, rest := appendClean(w.buf[:0], in, false)
	w.pending = append(w.pending[:0:0], rest...)
	w.buf = out
	if len(out) > 0 {
		if _, err := w.w.Write(out); err != nil {
			return 0, err
		}
	}
	return len(p), nil
}

// Flush shows what was held back (an unfinished escape sequence, a rune
// cut short, a last CR) as it is: call it when the stream ends.
func (w *Writer) Flush() error {
	if len(w.pending) == 0 {
		return nil
	}
	out, _ := appendClean(w.buf[:0], w.pending, true)
	w.pending, w.buf = w.pending[:0], out
	_, err := w.w.Write(out)
	return err
}

// JSON returns encoded JSON (as encoding/json writes it) with the
// characters String would show as codes escaped as \uXXXX: DEL, C1
// controls and bidi controls, which encoding/json leaves as they are. The
// text decodes to the same value and is safe on a terminal. (JSON has no
// other place for them than inside strings; encoding/json already escapes
// C0 controls and replaces invalid UTF-8.)
func JSON(b []byte) []byte {
	var out []byte
	done := 0
	for i := 0; i < len(b); {
		r, size := rune(b[i]), 1
		if b[i] >= utf8.RuneSelf {
			r, size = utf8.DecodeRune(b[i:])
		}
		if r == 0x7f || shownAsCode(r) || r == utf8.RuneError && size == 1 {
			out = append(out, b[done:i]...)
			out = fmt.Appendf(out, `\u%04x`, r)
			done = i + size
		}
		i += size
	}
	if out == nil {
		return b
	}
	return append(out, b[done:]...)
}

// LastLines is the last n lines of s, without its trailing newlines.
func LastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
