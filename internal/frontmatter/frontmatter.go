// Package frontmatter reads the YAML header of a Markdown file: the lines
// between a first line "---" and the next line "---". Agent Skills
// (SKILL.md) and prompt templates carry their name and description there.
//
// Line numbers in its errors, and in the nodes it returns, are the file's
// own, counted from 1 at the opening "---".
package frontmatter

import (
	"errors"
	"fmt"
	"strings"

	"go.yaml.in/yaml/v3"
)

// ErrNone is Split's error for a file that does not begin with "---".
var ErrNone = errors.New(`no frontmatter: the file does not begin with a line "---"`)

// Error is a frontmatter that cannot be read, at a line of the file.
type Error struct {
	// Line is 0 for YAML that does not parse: the parser's message says
	// the line (the file's).
	Line int
	Err  error
}

func (e *Error) Error() string {
	if e.Line == 0 {
		return e.Err.Error()
	}
	return fmt.Sprintf("line %d: %v", e.Line, e.Err)
}

func (e *Error) Unwrap() error { return e.Err }

// Fields are the frontmatter's top-level keys, each with its value's
// node (Line is the file's line).
type Fields map[string]*yaml.Node

// Split reads data's frontmatter and returns its fields and the body
// after it. A file with no frontmatter is ErrNone, with the whole file
// as body; one whose frontmatter is not YAML, or not a mapping, or is
// never closed, is an *Error.
func Split(data []byte) (Fields, string, error) {
	text := strings.TrimPrefix(string(data), "\ufeff")
	first, rest, _ := cutLine(text)
	if first != "---" {
		return nil, text, ErrNone
	}
	var header []string
	line := 1
	for {
		l, after, ok := cutLine(rest)
		rest = after
		line++
		if l == "---" {
			break
		}
		if !ok {
			return nil, "", &Error{Line: 1, Err: errors.New(`the frontmatter has no closing line "---"`)}
		}
		header = append(header, l)
	}
	// A blank line first stands for the opening "---": the parser's line
	// numbers are then the file's.
	src := "\n" + strings.Join(header, "\n")
	var doc yaml.Node
	if err := yaml.Unmarshal([]byte(src), &doc); err != nil {
		return nil, "", &Error{Err: err}
	}
	fields := Fields{}
	if len(doc.Content) == 0 {
		return fields, rest, nil // an empty frontmatter
	}
	m := doc.Content[0]
	if m.Kind != yaml.MappingNode {
		return nil, "", &Error{Line: m.Line, Err: errors.New("the frontmatter is not a mapping of keys to values")}
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		fields[m.Content[i].Value] = m.Content[i+1]
	}
	return fields, rest, nil
}

// String is the text of the scalar field key ("" when it is not there);
// an error, at its line, when it is not a single value.
func (f Fields) String(key string) (string, error) {
	n, ok := f[key]
	if !ok {
		return "", nil
	}
	if n.Kind != yaml.ScalarNode {
		return "", &Error{Line: n.Line, Err: fmt.Errorf("%s: want a single line of text", key)}
	}
	return n.Value, nil
}

// Line is the line of key's value, or 1 (the opening "---") when there
// is no key.
func (f Fields) Line(key string) int {
	if n, ok := f[key]; ok {
		return n.Line
	}
	return 1
}

// cutLine cuts text at its first line end (LF or CRLF); ok is false when
// text has none.
func cutLine(text string) (string, string, bool) {
	line, rest, ok := strings.Cut(text, "\n")
	return strings.TrimSuffix(line, "\r"), rest, ok
}
