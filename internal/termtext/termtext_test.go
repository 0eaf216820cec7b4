package termtext_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pi-remote/pi-remote/internal/termtext"
	"github.com/pi-remote/pi-remote/internal/termtext/termtexttest"
)

type shownCase struct {
	name, in, want string
}

// cases are inputs and what a terminal must be given for them.
func cases() []shownCase {
	cs := []shownCase{
		{"plain", "hello, world\n", "hello, world\n"},
		{"newline and tab", "a\tb\nc\n\n", "a\tb\nc\n\n"},
		{"accents", "héllo wörld, ça va", "héllo wörld, ça va"},
		{"emoji", "👍🏽 🇫🇷 👨‍👩‍👧 ✓ ⠋", "👍🏽 🇫🇷 👨‍👩‍👧 ✓ ⠋"},
		{"wide and right-to-left text", "漢字 مرحبا שלום", "漢字 مرحبا שלום"},
		{"bidi marks stay", "a\u200eb\u200fc", "a\u200eb\u200fc"},
		{"NBSP, soft hyphen, U+00A0 up", "a\u00a0b\u00adc\u00ffd", "a\u00a0b\u00adc\u00ffd"},
		{"empty", "", ""},
		{"DEL", "a\x7fb", "a^?b"},
		{"CRLF is LF", "one\r\ntwo\r\n", "one\ntwo\n"},
		{"lone CR", "safe\rrm -rf /", "safe^Mrm -rf /"},
		{"CR at the end", "50%\r", "50%^M"},
		{"CR CR LF", "a\r\r\nb", "a^M\nb"},
		{"CSI clear screen", "x\x1b[2Jy", "x^[[2Jy"},
		{"CSI cursor home", "\x1b[H\x1b[3;1H", "^[[H^[[3;1H"},
		{"CSI private mode", "\x1b[?1049h\x1b[?25l", "^[[?1049h^[[?25l"},
		{"CSI erase line", "\x1b[K\x1b[2K", "^[[K^[[2K"},
		{"SGR dropped", "\x1b[31mred\x1b[0m \x1b[1;32mbold green\x1b[m", "red bold green"},
		{"SGR true colour dropped", "\x1b[38:2::255:0:0mx\x1b[38;5;196my", "xy"},
		{"SGR too long is shown", "\x1b[" + strings.Repeat("1;", 40) + "m", "^[[" + strings.Repeat("1;", 40) + "m"},
		{"OSC 52 clipboard, BEL", "\x1b]52;c;cm0gLXJmIH4=\a", "^[]52;c;cm0gLXJmIH4=^G"},
		{"OSC 0 title, BEL", "\x1b]0;pwned\a", "^[]0;pwned^G"},
		{"OSC 0 title, ST", "\x1b]0;pwned\x1b\\", "^[]0;pwned^[\\"},
		{"OSC 8 hyperlink", "\x1b]8;;https://evil.example/\x1b\\click\x1b]8;;\x1b\\", "^[]8;;https://evil.example/^[\\click^[]8;;^[\\"},
		{"DCS", "\x1bP+q544e\x1b\\", "^[P+q544e^[\\"},
		{"APC", "\x1b_Gf=100;AAAA\x1b\\", "^[_Gf=100;AAAA^[\\"},
		{"ESC alone", "a\x1bb", "a^[b"},
		{"ESC at the end", "text\x1b", "text^["},
		{"ESC [ at the end", "text\x1b[", "text^[["},
		{"ESC [ digits at the end", "text\x1b[31", "text^[[31"},
		{"ESC ESC", "\x1b\x1b[2J", "^[^[[2J"},
		{"ESC c reset", "\x1bc", "^[c"},
		{"C1 CSI as UTF-8", "\u009b2J", "<U+009B>2J"},
		{"C1 OSC as UTF-8", "\u009d0;t\u009c", "<U+009D>0;t<U+009C>"},
		{"raw 0x9b byte", "a\x9b2Jb", `a\x9b2Jb`},
		{"raw 0x9d byte", "\x9d0;title\x07", `\x9d0;title^G`},
		{"latin-1 bytes", "caf\xe9", `caf\xe9`},
		{"rune cut short at the end", "ok \xe2\x82", `ok \xe2\x82`},
		{"overlong encoding", "\xc0\xaf", `\xc0\xaf`},
		{"RLO, Trojan Source", "access = \"user\u202e \u2066// admin\u2069 \u2066\"", "access = \"user<U+202E> <U+2066>// admin<U+2069> <U+2066>\""},
	}
	for c := byte(0); c < 0x20; c++ {
		if c == '\n' || c == '\t' || c == '\r' || c == 0x1b {
			continue // above
		}
		cs = append(cs, shownCase{fmt.Sprintf("C0 %#02x", c), "a" + string(c) + "b", "a^" + string(c+0x40) + "b"})
	}
	for r := rune(0x80); r <= 0x9f; r++ {
		cs = append(cs, shownCase{fmt.Sprintf("C1 U+%04X", r), "a" + string(r) + "b", fmt.Sprintf("a<U+%04X>b", r)})
		cs = append(cs, shownCase{fmt.Sprintf("raw byte %#02x", r), "a" + string([]byte{byte(r)}) + "b", fmt.Sprintf(`a\x%02xb`, r)})
	}
	for _, r := range []rune{0x202a, 0x202b, 0x202c, 0x202d, 0x202e, 0x2066, 0x2067, 0x2068, 0x2069} {
		cs = append(cs, shownCase{fmt.Sprintf("bidi U+%04X", r), "a" + string(r) + "b", fmt.Sprintf("a<U+%04X>b", r)})
	}
	return cs
}

func TestString(t *testing.T) {
	for _, tc := range cases() {
		t.Run(tc.name, func(t *testing.T) {
			got := termtext.String(tc.in)
			assert.Equal(t, tc.want, got)
			assert.Empty(t, termtexttest.Controls(got), "%q", got)
			assert.Equal(t, got, termtext.String(got), "cleaning twice changes nothing")
		})
	}
}

// checkedWriter fails the test when one write is not valid UTF-8 on its
// own (a rune split between writes) or holds a control.
type checkedWriter struct {
	t      *testing.T
	b      bytes.Buffer
	writes int
}

func (w *checkedWriter) Write(p []byte) (int, error) {
	w.t.Helper()
	assert.True(w.t, utf8.Valid(p), "write %d is valid UTF-8 by itself: %q", w.writes, p)
	assert.Empty(w.t, termtexttest.Controls(string(p)), "write %d: %q", w.writes, p)
	w.writes++
	return w.b.Write(p)
}

// However the input is split into writes, a Writer shows what String
// shows, and each of its writes is whole runes with no control.
func TestWriterAcrossWrites(t *testing.T) {
	for _, tc := range cases() {
		t.Run(tc.name, func(t *testing.T) {
			in := []byte(tc.in)
			for cut := 0; cut <= len(in); cut++ {
				out := &checkedWriter{t: t}
				w := termtext.NewWriter(out)
				n, err := w.Write(in[:cut])
				require.NoError(t, err)
				assert.Equal(t, cut, n)
				n, err = w.Write(in[cut:])
				require.NoError(t, err)
				assert.Equal(t, len(in)-cut, n)
				require.NoError(t, w.Flush())
				assert.Equal(t, tc.want, out.b.String(), "split at %d", cut)
			}
			out := &checkedWriter{t: t}
			w := termtext.NewWriter(out)
			for i := range in {
				_, err := w.Write(in[i : i+1])
				require.NoError(t, err)
			}
			require.NoError(t, w.Flush())
			assert.Equal(t, tc.want, out.b.String(), "a byte at a time")
		})
	}
}

// What a later write may complete waits for it: an SGR split in two is
// still dropped, a split CRLF is still one line end; Flush shows what
// never got completed.
func TestWriterHoldsBackOnlyWhatMayContinue(t *testing.T) {
	var out bytes.Buffer
	w := termtext.NewWriter(&out)
	w.Write([]byte("done\x1b"))
	assert.Equal(t, "done", out.String(), "a lone ESC at the end of a write waits")
	w.Write([]byte("[3"))
	assert.Equal(t, "done", out.String())
	w.Write([]byte("2mok\r"))
	assert.Equal(t, "doneok", out.String(), "the split SGR went; the CR waits")
	w.Write([]byte("\nnext \xf0\x9f"))
	assert.Equal(t, "doneok\nnext ", out.String(), "the half emoji waits")
	w.Write([]byte("\x91\x8d\x1b"))
	assert.Equal(t, "doneok\nnext 👍", out.String())
	require.NoError(t, w.Flush())
	assert.Equal(t, "doneok\nnext 👍^[", out.String(), "Flush shows the ESC never completed")
	require.NoError(t, w.Flush())
	assert.Equal(t, "doneok\nnext 👍^[", out.String(), "nothing twice")
}

type failingWriter struct{}

var errBroken = errors.New("broken pipe")

func (failingWriter) Write([]byte) (int, error) { return 0, errBroken }

func TestWriterReportsTheUnderlyingError(t *testing.T) {
	w := termtext.NewWriter(failingWriter{})
	_, err := w.Write([]byte("text\x1b"))
	assert.ErrorIs(t, err, errBroken)
	assert.ErrorIs(t, w.Flush(), errBroken)
}

// JSON escapes what encoding/json leaves raw and a terminal may obey;
// the value decoded is the same.
func TestJSON(t *testing.T) {
	var in strings.Builder
	for _, tc := range cases() {
		in.WriteString(tc.in)
	}
	value := map[string]any{"text": in.String(), "list": []string{"\u009b", "\x7f", "\u202e"}}
	b, err := json.Marshal(value)
	require.NoError(t, err)
	require.NotEmpty(t, termtexttest.Controls(string(b)), "encoding/json leaves some")
	got := termtext.JSON(b)
	assert.Empty(t, termtexttest.Controls(string(got)), "%s", got)
	assert.Contains(t, string(got), `\u009b`)
	var back, want map[string]any
	require.NoError(t, json.Unmarshal(got, &back))
	require.NoError(t, json.Unmarshal(b, &want))
	assert.Equal(t, want, back)

	plain := []byte(`{"a":"héllo 👍"}`)
	assert.Equal(t, plain, termtext.JSON(plain))
}

func TestLastLines(t *testing.T) {
	assert.Equal(t, "c\nd", termtext.LastLines("a\nb\nc\nd\n\n", 2))
	assert.Equal(t, "a", termtext.LastLines("a", 3))
}
