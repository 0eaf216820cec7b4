package tools

import (
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// normalized is text in the tolerant matching form, with a map back to the
// original bytes: byte i of text came from orig[start[i]:end[i]].
type normalized struct {
	text  string
	start []int
	end   []int
}

// fold maps a rune to its tolerant form: curly quotes become straight,
// Unicode dashes become '-', special spaces become ' ', and everything else
// is NFKC-normalized.
func fold(r rune) string {
	switch r {
	case '\u2018', '\u2019', '\u201a', '\u201b', '\u2032':
		return "'"
	case '\u201c', '\u201d', '\u201e', '\u201f', '\u2033':
		return `"`
	case '\u2010', '\u2011', '\u2012', '\u2013', '\u2014', '\u2015', '\u2212', '\ufe58', '\ufe63', '\uff0d':
		return "-"
	case '\u00a0', '\u2000', '\u2001', '\u2002', '\u2003', '\u2004', '\u2005', '\u2006',
		'\u2007', '\u2008', '\u2009', '\u200a', '\u202f', '\u205f', '\u3000':
		return " "
	}
	if r < utf8.RuneSelf {
		return string(r)
	}
	return norm.NFKC.String(string(r))
}

// normalize builds the tolerant form of s: fold every rune and drop trailing
// whitespace (spaces, tabs, CR) at the end of each line.
func normalize(s string) normalized {
	var n normalized
	var b strings.Builder
	emit := func(out string, from, to int) {
		b.WriteString(out)
		for range len(out) {
			n.start = append(n.start, from)
			n.end = append(n.end, to)
		}
	}
	pos := 0
	for pos <= len(s) {
		eol := strings.IndexByte(s[pos:], '\n')
		lineEnd := len(s)
		if eol >= 0 {
			lineEnd = pos + eol
		}
		trimmed := pos + len(strings.TrimRightFunc(s[pos:lineEnd], isTrailingSpace))
		for i := pos; i < trimmed; {
			r, size := utf8.DecodeRuneInString(s[i:])
			if r == utf8.RuneError && size == 1 {
				emit(s[i:i+1], i, i+1)
			} else {
				emit(fold(r), i, i+size)
			}
			i += size
		}
		if eol < 0 {
			break
		}
		// The newline stands for the trailing whitespace before it too.
		emit("\n", trimmed, lineEnd+1)
		pos = lineEnd + 1
	}
	n.text = b.String()
	return n
}

func isTrailingSpace(r rune) bool {
	return r == ' ' || r == '\t' || r == '\r' || r == '\f' || r == '\v' ||
		r == '\u00a0' || r == '\u3000' || (r >= '\u2000' && r <= '\u200a') || r == '\u202f' || r == '\u205f'
}

// indexAll returns the start offsets of every occurrence of sub in s,
// overlapping ones included (they make a match ambiguous too).
func indexAll(s, sub string) []int {
	var out []int
	for i := 0; i <= len(s)-len(sub); {
		j := strings.Index(s[i:], sub)
		if j < 0 {
			break
		}
		out = append(out, i+j)
		_, size := utf8.DecodeRuneInString(s[i+j:])
		i += j + max(size, 1)
	}
	return out
}

// region is a matched byte range of the original content and its
// replacement.
type region struct {
	index      int // edit index
	start, end int
	newText    string
}

// matchError is an edit failure the model can act on.
type matchError struct{ msg string }

func (e *matchError) Error() string { return e.msg }

func editLabel(i, n int) string {
	if n == 1 {
		return "The edit"
	}
	return fmt.Sprintf("edits[%d]", i)
}

// findRegions locates every edit in content (already without BOM). eol is
// the file's line ending, used to adapt oldText and newText given with LF.
func findRegions(content string, edits []editItem, eol, displayPath string) ([]region, error) {
	var tolerant *normalized
	regions := make([]region, 0, len(edits))
	for i, ed := range edits {
		label := editLabel(i, len(edits))
		if ed.OldText == "" {
			return nil, &matchError{fmt.Sprintf("%s: oldText is empty. Give the exact text to replace; use write to create a file.", label)}
		}
		oldText := toEOL(ed.OldText, eol)
		newText := toEOL(ed.NewText, eol)
		if oldText == newText {
			return nil, &matchError{fmt.Sprintf("%s: newText is identical to oldText, so it would change nothing. Give the replacement text.", label)}
		}
		hits := indexAll(content, oldText)
		if len(hits) == 1 {
			regions = append(regions, region{index: i, start: hits[0], end: hits[0] + len(oldText), newText: newText})
			continue
		}
		if len(hits) > 1 {
			return nil, &matchError{fmt.Sprintf("%s: oldText was found %d times in %s. Add surrounding lines to oldText so it matches exactly one place.", label, len(hits), displayPath)}
		}
		if tolerant == nil {
			n := normalize(content)
			tolerant = &n
		}
		needle := normalize(ed.OldText).text
		if strings.TrimSpace(needle) == "" {
			return nil, &matchError{fmt.Sprintf("%s: oldText not found in %s. It must match the file exactly, including whitespace and indentation; read the file again and copy the text.", label, displayPath)}
		}
		hits = indexAll(tolerant.text, needle)
		switch len(hits) {
		case 0:
			return nil, &matchError{fmt.Sprintf("%s: oldText not found in %s. It must match the file exactly, including whitespace and indentation; read the file again and copy the text.", label, displayPath)}
		case 1:
			s, e := tolerant.start[hits[0]], tolerant.end[hits[0]+len(needle)-1]
			regions = append(regions, region{index: i, start: s, end: e, newText: newText})
		default:
			return nil, &matchError{fmt.Sprintf("%s: oldText was found %d times in %s (ignoring whitespace and quote differences). Add surrounding lines so it matches exactly one place.", label, len(hits), displayPath)}
		}
	}
	sorted := slices.Clone(regions)
	slices.SortFunc(sorted, func(a, b region) int { return a.start - b.start })
	for k := 1; k < len(sorted); k++ {
		if sorted[k].start < sorted[k-1].end {
			a, b := min(sorted[k-1].index, sorted[k].index), max(sorted[k-1].index, sorted[k].index)
			return nil, &matchError{fmt.Sprintf("edits[%d] and edits[%d] overlap in %s. Merge them into one edit or target disjoint regions.", a, b, displayPath)}
		}
	}
	return sorted, nil
}

// toEOL rewrites text given with LF (or CRLF) line endings to eol.
func toEOL(s, eol string) string {
	if eol != "\r\n" {
		return s
	}
	return strings.ReplaceAll(strings.ReplaceAll(s, "\r\n", "\n"), "\n", "\r\n")
}

// detectEOL returns "\r\n" when the file's first line ends with CRLF.
func detectEOL(s string) string {
	i := strings.IndexByte(s, '\n')
	if i > 0 && s[i-1] == '\r' {
		return "\r\n"
	}
	return "\n"
}

// applyRegions replaces sorted regions in content.
func applyRegions(content string, regions []region) string {
	var b strings.Builder
	last := 0
	for _, r := range regions {
		b.WriteString(content[last:r.start])
		b.WriteString(r.newText)
		last = r.end
	}
	b.WriteString(content[last:])
	return b.String()
}
