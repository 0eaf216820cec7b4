package permission

import (
	"path"
	"slices"
	"strings"
)

// A Command is one simple command of a bash line, as rules see it: its
// words with the quotes taken off, joined by single spaces.
type Command struct {
	Text string
	// Words are the command's words without quotes; Text joins them.
	Words []string
	// Writes: the command redirects its output to a file (">", ">>",
	// ">|", "&>"; not to /dev/null or another descriptor). No allow rule
	// covers it: "git status > ~/.bashrc" is no "git status".
	Writes bool
}

// Commands splits a bash line into the simple commands it runs: those
// joined by ";", "&", "&&", "||", "|", "|&" or a newline, those inside
// "( )", "{ }", "$( )", backquotes (nested too) and "<( )", a coprocess,
// the script of "sh -c" or "bash -c" (also behind a wrapper or other
// options: "sudo bash -ec '...'"), and eval's words; the body of a
// here-document too, in case, and of an arithmetic expansion that holds
// names ("$((rm x) )" is a substitution to bash). Keywords (if, then,
// while, do, !, ...) are dropped from a command's start; $'...' is
// decoded. complete is false when the line holds something the split
// does not follow (a here-document, a loop's or case's header, a function
// definition, an unclosed quote or parenthesis) or that bash may evaluate
// as code: arithmetic over names ("$((_))", "$[...]", "((...))"),
// "${!x}", "${a[i]}", "${x:i}", "${x@P}", quoted text that reads as a
// substitution ("'$(rm x)'", which "$_" then holds), and builtins given a
// variable's name with a subscript or an expansion ("test -v", "printf
// -v", read, declare...). Rules may still deny or ask for what it found,
// but no allow rule covers the line.
func Commands(line string) (cmds []Command, complete bool) {
	s := splitter{src: line, complete: true}
	for s.run(); s.i < len(s.src); s.run() {
		// A ")" that closes nothing: bash refuses the line; what follows
		// is read all the same.
		s.complete = false
		s.i++
	}
	return s.cmds, s.complete
}

type splitter struct {
	src      string
	i        int
	cmds     []Command
	complete bool
	// litTail is the last byte a word's literal text (not a
	// substitution's) ended with: a quoted "$" and a "(" after it make
	// "$(" as much as one quoted string does.
	litTail byte
}

// run reads commands until the end of the source or an unmatched ")".
func (s *splitter) run() {
	for s.i < len(s.src) {
		if s.src[s.i] == ')' {
			return
		}
		s.command()
	}
}

// command reads one simple command, up to its separator, which it
// consumes.
func (s *splitter) command() {
	var words []string
	var word strings.Builder
	inWord := false
	writes := false
	end := func() {
		if inWord {
			words = append(words, word.String())
			word.Reset()
			inWord = false
		}
	}
	for s.i < len(s.src) {
		c := s.src[s.i]
		switch {
		case c == ' ' || c == '\t':
			end()
			s.i++
		case c == '\n' || c == ';':
			end()
			s.i++
			s.finish(words, writes)
			return
		case c == '&' || c == '|':
			end()
			if c == '&' && s.peek(1) == '>' { // &> FILE
				s.i += 2
				if s.peek(0) == '>' {
					s.i++
				}
				writes = s.redirectTarget(false) || writes
				continue
			}
			s.i++
			if next := s.peek(0); next == c || (c == '|' && next == '&') {
				s.i++
			}
			s.finish(words, writes)
			return
		case c == '(':
			if len(words) == 0 && !inWord && s.peek(1) == '(' {
				// "(( ))": arithmetic, whose names' values are
				// evaluated (see arithmetic).
				s.complete = false
			}
			end()
			s.i++
			s.run()
			if s.peek(0) == ')' {
				s.i++
			} else {
				s.complete = false
			}
			if len(words) > 0 {
				// "name() { ...; }": a function definition. Its body's
				// commands are read as the line's (a deny rule sees
				// them); its name is none.
				s.complete = false
				words = nil
			}
		case c == ')':
			end()
			s.finish(words, writes)
			return
		case c == '#' && !inWord:
			for s.i < len(s.src) && s.src[s.i] != '\n' {
				s.i++
			}
		case c == '>' || c == '<':
			if inWord && strings.Trim(word.String(), "0123456789") == "" {
				// "2>": the descriptor, not a word.
				word.Reset()
				inWord = false
			}
			end()
			if c == '<' && s.peek(1) == '<' {
				// A here-document (or here-string): its body is read as
				// commands, which a deny rule sees, but the line is not
				// complete.
				s.complete = false
				s.i += 2
				continue
			}
			if s.peek(1) == '(' { // <( ) and >( ): commands of their own
				s.i += 2
				s.run()
				if s.peek(0) == ')' {
					s.i++
				} else {
					s.complete = false
				}
				continue
			}
			s.i++
			if c == '>' && (s.peek(0) == '>' || s.peek(0) == '|') {
				s.i++
			}
			if s.peek(0) == '&' { // >&2, <&0; >&FILE is &>FILE
				s.i++
				if s.redirectTarget(true) && c == '>' {
					writes = true
				}
				continue
			}
			target := s.redirectTarget(false)
			if c == '>' {
				writes = target || writes
			}
		default:
			inWord = true
			s.wordPart(&word)
		}
	}
	end()
	s.finish(words, writes)
}

// redirectTarget reads a redirection's target word and says whether it
// is a file: not /dev/null, nor, after ">&" (dup), a descriptor or "-".
// ("> 1" and "> -" write files of those names.)
func (s *splitter) redirectTarget(dup bool) bool {
	for s.peek(0) == ' ' || s.peek(0) == '\t' {
		s.i++
	}
	var w strings.Builder
	for s.i < len(s.src) && !strings.ContainsRune(" \t\n;&|()<>", rune(s.src[s.i])) {
		s.wordPart(&w)
	}
	t := w.String()
	if dup && t != "" && (t == "-" || strings.Trim(t, "0123456789") == "") {
		return false
	}
	return t != "/dev/null"
}

// wordPart reads one part of a word: a quoted string, an escape, a
// substitution (whose commands are read as commands of their own), or a
// plain character.
func (s *splitter) wordPart(w *strings.Builder) {
	c := s.src[s.i]
	switch {
	case c == '\\':
		if s.i+1 < len(s.src) {
			if s.src[s.i+1] != '\n' {
				s.lit(w, s.src[s.i+1:s.i+2])
			}
			s.i += 2
			return
		}
		s.i++
	case c == '\'':
		end := strings.IndexByte(s.src[s.i+1:], '\'')
		if end < 0 {
			s.complete = false
			s.lit(w, s.src[s.i+1:])
			s.i = len(s.src)
			return
		}
		s.lit(w, s.src[s.i+1:s.i+1+end])
		s.i += end + 2
	case c == '"':
		s.i++
		for s.i < len(s.src) && s.src[s.i] != '"' {
			switch {
			case s.src[s.i] == '\\' && s.i+1 < len(s.src) && strings.IndexByte("\"\\$`\n", s.src[s.i+1]) >= 0:
				if s.src[s.i+1] != '\n' {
					s.lit(w, s.src[s.i+1:s.i+2])
				}
				s.i += 2
			case s.src[s.i] == '$' && s.peek(1) == '(' || s.src[s.i] == '`':
				s.substitution(w)
			default:
				s.expansion()
				s.lit(w, s.src[s.i:s.i+1])
				s.i++
			}
		}
		if s.i >= len(s.src) {
			s.complete = false
			return
		}
		s.i++
	case c == '$' && s.peek(1) == '(' || c == '`':
		s.substitution(w)
	case c == '$' && s.peek(1) == '\'':
		// $'...': bash's escapes decoded ($'\x72m' is rm).
		s.i += 2
		start := s.i
		for s.i < len(s.src) && s.src[s.i] != '\'' {
			if s.src[s.i] == '\\' && s.i+1 < len(s.src) {
				s.i++
			}
			s.i++
		}
		s.lit(w, ansiC(s.src[start:min(s.i, len(s.src))]))
		if s.i >= len(s.src) {
			s.complete = false
			return
		}
		s.i++
	case c == '$' && s.peek(1) == '"':
		// $"...": a translated string, read as "...".
		s.i++
	default:
		s.expansion()
		s.lit(w, s.src[s.i:s.i+1])
		s.i++
	}
}

// expansion checks a "${" or "$[" at s.i (see parameter).
func (s *splitter) expansion() {
	if s.src[s.i] != '$' {
		return
	}
	switch s.peek(1) {
	case '{':
		s.parameter()
	case '[':
		// $[...]: arithmetic, the old way (see arithmetic).
		s.complete = false
	}
}

// substitution reads "$( )" or a backquoted command at s.i: its commands
// join the line's, and its text stays in the word.
func (s *splitter) substitution(w *strings.Builder) {
	start := s.i
	defer func() { s.litTail = 0 }()
	if s.src[s.i] == '`' {
		// Up to the first backquote not escaped; in the command, "\`",
		// "\\" and "\$" stand for the character (a backquote within
		// backquotes).
		var body strings.Builder
		i := s.i + 1
		for ; i < len(s.src) && s.src[i] != '`'; i++ {
			if s.src[i] == '\\' && i+1 < len(s.src) {
				if strings.IndexByte("`\\$", s.src[i+1]) < 0 {
					body.WriteByte('\\')
				}
				i++
			}
			body.WriteByte(s.src[i])
		}
		sub, ok := Commands(body.String())
		s.cmds = append(s.cmds, sub...)
		s.complete = s.complete && ok && i < len(s.src)
		s.i = min(i+1, len(s.src))
		w.WriteString(s.src[start:s.i])
		return
	}
	if s.peek(2) == '(' { // $(( )): arithmetic, no command
		i, depth := s.i+1, 0
		for i < len(s.src) {
			switch s.src[i] {
			case '(':
				depth++
			case ')':
				depth--
			}
			i++
			if depth == 0 {
				break
			}
		}
		if depth == 0 && s.src[i-2] == ')' && arithmetic(s.src[s.i+3:i-2]) {
			s.i = i
			w.WriteString(s.src[start:s.i])
			return
		}
		// Names, or "$((a) )": read as "$( (...) )", the commands bash
		// may run in it seen by deny rules; no allow rule covers it.
		s.complete = false
	}
	s.i += 2
	s.run()
	if s.peek(0) == ')' {
		s.i++
	} else {
		s.complete = false
	}
	w.WriteString(s.src[start:s.i])
}

func (s *splitter) peek(k int) byte {
	if s.i+k < len(s.src) {
		return s.src[s.i+k]
	}
	return 0
}

// keywords start a command without being it.
var keywords = map[string]bool{
	"if": true, "then": true, "else": true, "elif": true, "fi": true, "do": true, "done": true,
	"while": true, "until": true, "!": true, "{": true, "}": true, "time": true,
}

// finish records a command, without its leading keywords (and
// coproc's name); the headers of for, select and case, and function
// definitions, are not followed.
func (s *splitter) finish(words []string, writes bool) {
strip:
	for len(words) > 0 {
		switch {
		case keywords[words[0]]:
			words = words[1:]
		case words[0] == "coproc":
			words = words[1:]
			if len(words) >= 2 && words[1] == "{" {
				words = words[2:] // coproc NAME { ...; }
			}
		default:
			break strip
		}
	}
	if len(words) > 0 && words[len(words)-1] == "}" {
		words = words[:len(words)-1]
	}
	if len(words) == 0 {
		return
	}
	switch words[0] {
	case "for", "select", "case", "esac", "function", "in", ";;":
		s.complete = false
		return
	}
	s.cmds = append(s.cmds, Command{Text: strings.Join(words, " "), Words: words, Writes: writes})
	if evaluatesNames(words) {
		s.complete = false
	}
	// The script of sh -c and its kind (behind wrappers and options too),
	// and eval's words: commands of their own.
	script := ""
	for _, f := range unwrapped(words) {
		switch {
		case shells[path.Base(f[0])]:
			script = shellScript(f[1:])
		case f[0] == "eval" && len(f) >= 2:
			script = strings.Join(f[1:], " ")
		}
		if script != "" {
			break
		}
	}
	if script != "" {
		sub, ok := Commands(script)
		s.cmds = append(s.cmds, sub...)
		s.complete = s.complete && ok
	}
}

var shells = map[string]bool{"sh": true, "bash": true, "dash": true, "zsh": true, "ksh": true}

// shellScript is the script a shell's arguments give with -c (alone or
// in a cluster, "-ec"): the first argument after the options.
func shellScript(args []string) string {
	c := false
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			if c && i+1 < len(args) {
				return args[i+1]
			}
			return ""
		case a == "-o" || a == "+o" || a == "-O" || a == "+O":
			i++ // the option's argument
		case strings.HasPrefix(a, "--"):
		case strings.HasPrefix(a, "-") || strings.HasPrefix(a, "+"):
			c = c || a[0] == '-' && strings.Contains(a[1:], "c")
		case c:
			return a
		default:
			return ""
		}
	}
	return ""
}

// lit writes literal text (quoted, escaped or plain) to w. Text that
// reads as a substitution without being one ("'$(rm x)'", a backquote)
// is code bash may yet run: "$_" holds it after the command, and an
// arithmetic expansion, "${_@P}", "test -v" or "printf -v" evaluate it.
// No allow rule covers such a line.
func (s *splitter) lit(w *strings.Builder, text string) {
	if text == "" {
		return
	}
	if strings.ContainsAny(text, "`") || strings.Contains(text, "$(") || w.Len() > 0 && s.litTail == '$' && text[0] == '(' {
		s.complete = false
	}
	w.WriteString(text)
	s.litTail = text[len(text)-1]
}

// parameter checks the parameter expansion "${" at s.i: one that
// evaluates a value as code is no part of a line an allow rule covers.
// Those are indirection ("${!x}"), subscripts ("${a[i]}", arithmetic),
// offsets ("${x:i}", arithmetic, unless written in digits) and
// transformations ("${x@P}" expands its value as a prompt, with
// substitutions). The expansion's text is read on as the word's.
func (s *splitter) parameter() {
	rest := s.src[s.i+2:]
	if strings.HasPrefix(rest, "#") && len(rest) > 1 && rest[1] != '}' {
		rest = rest[1:] // ${#x}: x's length
	}
	n := 0
	for n < len(rest) && (rest[n] == '_' || rest[n] >= 'a' && rest[n] <= 'z' || rest[n] >= 'A' && rest[n] <= 'Z' || rest[n] >= '0' && rest[n] <= '9') {
		n++
	}
	if n == 0 && len(rest) > 0 && strings.IndexByte("@*#?-$0", rest[0]) >= 0 {
		n = 1
	}
	if n == 0 || n == len(rest) {
		s.complete = false
		return
	}
	switch op := rest[n]; {
	case strings.IndexByte("}-=?+#%/^,", op) >= 0:
	case op == ':' && n+1 < len(rest) && strings.IndexByte("-=?+", rest[n+1]) >= 0:
	case op == ':':
		end := strings.IndexByte(rest[n:], '}')
		if end < 0 || strings.Trim(rest[n:n+end], "0123456789:+- ") != "" {
			s.complete = false
		}
	default:
		s.complete = false
	}
}

// arithmetic says whether the text of an arithmetic expansion is plain
// numbers and operators: names are evaluated (their values are
// expressions, whose subscripts run substitutions), and "$((a) )" is a
// command substitution to bash.
func arithmetic(text string) bool {
	return strings.Trim(text, "0123456789 \t\n+-*/%<>=!&|^~?:,()") == ""
}

// namers are the builtins that take a variable's name, whose subscript
// they evaluate ("printf -v 'a[$(rm x)]'"), or evaluate their arguments
// as expressions; with "opt" the argument is the one after that option.
var namers = map[string]string{
	"test": "-v", "[": "-v", "printf": "-v", "wait": "-p",
	"[[": "", "read": "", "declare": "", "typeset": "", "local": "", "readonly": "", "export": "", "unset": "", "let": "", "mapfile": "", "readarray": "", "getopts": "",
}

// evaluatesNames says whether words are such a builtin's, with an
// argument that may hold a subscript or come from an expansion.
func evaluatesNames(words []string) bool {
	opt, ok := namers[words[0]]
	if !ok || opt != "" && !slices.Contains(words[1:], opt) {
		return false
	}
	for _, w := range words[1:] {
		if strings.ContainsAny(w, "[$`") {
			return true
		}
	}
	return false
}

// ansiC decodes the body of $'...' as bash does.
func ansiC(b string) string {
	var out strings.Builder
	for i := 0; i < len(b); i++ {
		if b[i] != '\\' || i+1 >= len(b) {
			out.WriteByte(b[i])
			continue
		}
		i++
		c := b[i]
		if v, ok := map[byte]byte{'a': 7, 'b': 8, 'e': 27, 'E': 27, 'f': 12, 'n': 10, 'r': 13, 't': 9, 'v': 11, '\\': '\\', '\'': '\'', '"': '"', '?': '?'}[c]; ok {
			out.WriteByte(v)
			continue
		}
		number := func(digits string, base, most int) (rune, bool) {
			n, v := 0, rune(0)
			for n < most && i+1+n < len(b) && strings.IndexByte(digits, b[i+1+n]) >= 0 {
				d := strings.IndexByte(digits, b[i+1+n])
				if d >= 16 {
					d -= 6 // upper-case hex digits
				}
				v = v*rune(base) + rune(d)
				n++
			}
			i += n
			return v, n > 0
		}
		const hex = "0123456789abcdefABCDEF"
		switch {
		case c >= '0' && c <= '7':
			i--
			v, _ := number("01234567", 8, 3)
			out.WriteByte(byte(v))
		case c == 'x':
			if v, ok := number(hex, 16, 2); ok {
				out.WriteByte(byte(v))
			} else {
				out.WriteString("\\x")
			}
		case c == 'u' || c == 'U':
			most := 4
			if c == 'U' {
				most = 8
			}
			if v, ok := number(hex, 16, most); ok {
				out.WriteRune(v)
			} else {
				out.WriteByte('\\')
				out.WriteByte(c)
			}
		case c == 'c' && i+1 < len(b):
			i++
			out.WriteByte(b[i] & 0x1f)
		default:
			out.WriteByte('\\')
			out.WriteByte(c)
		}
	}
	return out.String()
}
