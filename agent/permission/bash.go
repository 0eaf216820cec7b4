package permission

import "strings"

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
// "( )", "{ }", "$( )", backquotes and "<( )", the script of "sh -c" or
// "bash -c", and eval's words; the body of a here-document too, in case. Keywords (if, then, while, do, !, ...) are dropped from a
// command's start. complete is false when the line holds something the
// split does not follow (a here-document, a loop's or case's header, a
// function definition, an unclosed quote or parenthesis): rules may still
// deny or ask for what it found, but no allow rule covers the line.
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
				writes = s.redirectTarget() || writes
				continue
			}
			s.i++
			if next := s.peek(0); next == c || (c == '|' && next == '&') {
				s.i++
			}
			s.finish(words, writes)
			return
		case c == '(':
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
				if s.redirectTarget() && c == '>' {
					writes = true
				}
				continue
			}
			target := s.redirectTarget()
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
// is a file (not /dev/null, nor a descriptor).
func (s *splitter) redirectTarget() bool {
	for s.peek(0) == ' ' || s.peek(0) == '\t' {
		s.i++
	}
	var w strings.Builder
	for s.i < len(s.src) && !strings.ContainsRune(" \t\n;&|()<>", rune(s.src[s.i])) {
		s.wordPart(&w)
	}
	t := w.String()
	if t == "/dev/null" || t == "-" {
		return false
	}
	return strings.Trim(t, "0123456789") != "" || t == ""
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
				w.WriteByte(s.src[s.i+1])
			}
			s.i += 2
			return
		}
		s.i++
	case c == '\'':
		end := strings.IndexByte(s.src[s.i+1:], '\'')
		if end < 0 {
			s.complete = false
			w.WriteString(s.src[s.i+1:])
			s.i = len(s.src)
			return
		}
		w.WriteString(s.src[s.i+1 : s.i+1+end])
		s.i += end + 2
	case c == '"':
		s.i++
		for s.i < len(s.src) && s.src[s.i] != '"' {
			switch {
			case s.src[s.i] == '\\' && s.i+1 < len(s.src) && strings.IndexByte("\"\\$`\n", s.src[s.i+1]) >= 0:
				if s.src[s.i+1] != '\n' {
					w.WriteByte(s.src[s.i+1])
				}
				s.i += 2
			case s.src[s.i] == '$' && s.peek(1) == '(' || s.src[s.i] == '`':
				s.substitution(w)
			default:
				w.WriteByte(s.src[s.i])
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
		// $'...': the escapes are bash's; a letter after a backslash
		// is taken as itself (so $'\x72m' is no rm, but $'r\m' is).
		s.i += 2
		for s.i < len(s.src) && s.src[s.i] != '\'' {
			if s.src[s.i] == '\\' && s.i+1 < len(s.src) {
				s.i++
			}
			w.WriteByte(s.src[s.i])
			s.i++
		}
		if s.i >= len(s.src) {
			s.complete = false
			return
		}
		s.i++
	case c == '$' && s.peek(1) == '"':
		// $"...": a translated string, read as "...".
		s.i++
	default:
		w.WriteByte(c)
		s.i++
	}
}

// substitution reads "$( )" or a backquoted command at s.i: its commands
// join the line's, and its text stays in the word.
func (s *splitter) substitution(w *strings.Builder) {
	start := s.i
	if s.src[s.i] == '`' {
		end := strings.IndexByte(s.src[s.i+1:], '`')
		if end < 0 {
			s.complete = false
			w.WriteString(s.src[s.i:])
			s.i = len(s.src)
			return
		}
		sub, ok := Commands(s.src[s.i+1 : s.i+1+end])
		s.cmds = append(s.cmds, sub...)
		s.complete = s.complete && ok
		s.i += end + 2
		w.WriteString(s.src[start:s.i])
		return
	}
	if s.peek(2) == '(' { // $(( )): arithmetic, no command
		s.i++
		depth := 0
		for s.i < len(s.src) {
			switch s.src[s.i] {
			case '(':
				depth++
			case ')':
				depth--
			}
			s.i++
			if depth == 0 {
				break
			}
		}
		w.WriteString(s.src[start:s.i])
		return
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

// finish records a command, without its leading keywords; the headers
// of for, select and case, and function definitions, are not followed.
func (s *splitter) finish(words []string, writes bool) {
	for len(words) > 0 && keywords[words[0]] {
		words = words[1:]
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
	// The script of sh -c and its kind, and eval's words: commands of
	// their own.
	script := ""
	switch {
	case len(words) >= 3 && shells[words[0]] && words[1] == "-c":
		script = words[2]
	case len(words) >= 2 && words[0] == "eval":
		script = strings.Join(words[1:], " ")
	}
	if script != "" {
		sub, ok := Commands(script)
		s.cmds = append(s.cmds, sub...)
		s.complete = s.complete && ok
	}
}

var shells = map[string]bool{"sh": true, "bash": true, "dash": true, "zsh": true, "ksh": true}
