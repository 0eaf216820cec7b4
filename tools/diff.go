package tools

import (
	"fmt"
	"strings"
)

const diffContext = 3

// lineDiff renders the changes made by regions as hunks with line numbers:
//
//	@@ -12,3 +12,4 @@
//	  12 unchanged
//	- 13 removed
//	+ 13 added
//
// Removed lines carry their old line number; added and unchanged lines
// carry their new one.
// It returns the diff and the first changed line of the new file.
func lineDiff(oldContent, newContent string, regions []region) (string, int) {
	oldLines := strings.Split(strings.ReplaceAll(oldContent, "\r\n", "\n"), "\n")
	newLines := strings.Split(strings.ReplaceAll(newContent, "\r\n", "\n"), "\n")
	width := len(fmt.Sprint(max(len(oldLines), len(newLines))))

	// Each region as whole lines in old and new coordinates, with its ops.
	type span struct {
		oStart, oEnd, nStart int
		ops                  []diffOp
	}
	var spans []span
	shift := 0 // new offset minus old offset so far
	for _, r := range regions {
		oStart := strings.Count(oldContent[:r.start], "\n")
		oEnd := oStart + strings.Count(oldContent[r.start:r.end], "\n")
		nStart := strings.Count(newContent[:r.start+shift], "\n")
		nEnd := nStart + strings.Count(r.newText, "\n")
		if r.end > r.start && oldContent[r.end-1] == '\n' && strings.HasSuffix(r.newText, "\n") {
			// Both sides end at a line break: the next line is untouched.
			oEnd--
			nEnd--
		}
		shift += len(r.newText) - (r.end - r.start)
		spans = append(spans, span{oStart, oEnd, nStart, diffLines(oldLines[oStart:oEnd+1], newLines[nStart:nEnd+1])})
	}

	var b strings.Builder
	first := 0
	for i := 0; i < len(spans); {
		// One hunk for every run of regions whose context windows touch.
		j := i + 1
		for j < len(spans) && spans[j].oStart-diffContext <= spans[j-1].oEnd+1+diffContext {
			j++
		}
		group := spans[i:j]
		ctxBefore := max(0, group[0].oStart-diffContext)
		ctxAfterEnd := min(len(oldLines), group[len(group)-1].oEnd+1+diffContext)
		removed, added := 0, 0
		for _, sp := range group {
			for _, op := range sp.ops {
				switch op.kind {
				case '-':
					removed++
				case '+':
					added++
				}
			}
		}
		oldCount := ctxAfterEnd - ctxBefore
		newStart := group[0].nStart - (group[0].oStart - ctxBefore)
		fmt.Fprintf(&b, "@@ -%d,%d +%d,%d @@\n", ctxBefore+1, oldCount, newStart+1, oldCount-removed+added)
		oi, ni := ctxBefore, newStart
		for _, sp := range group {
			for ; oi < sp.oStart; oi, ni = oi+1, ni+1 { // context up to the region
				fmt.Fprintf(&b, "  %*d %s\n", width, ni+1, oldLines[oi])
			}
			for _, op := range sp.ops {
				switch op.kind {
				case ' ':
					fmt.Fprintf(&b, "  %*d %s\n", width, ni+1, op.text)
					oi++
					ni++
				case '-':
					if first == 0 {
						first = ni + 1
					}
					fmt.Fprintf(&b, "- %*d %s\n", width, oi+1, op.text)
					oi++
				case '+':
					if first == 0 {
						first = ni + 1
					}
					fmt.Fprintf(&b, "+ %*d %s\n", width, ni+1, op.text)
					ni++
				}
			}
		}
		for ; oi < ctxAfterEnd; oi, ni = oi+1, ni+1 {
			fmt.Fprintf(&b, "  %*d %s\n", width, ni+1, oldLines[oi])
		}
		i = j
	}
	return strings.TrimRight(b.String(), "\n"), first
}

type diffOp struct {
	kind byte // ' ', '-', '+'
	text string
}

// diffLines is a longest-common-subsequence line diff, for the few lines of
// one edit region; very large regions are shown as a full replacement.
func diffLines(a, b []string) []diffOp {
	if len(a)*len(b) > 4_000_000 {
		var out []diffOp
		for _, l := range a {
			out = append(out, diffOp{'-', l})
		}
		for _, l := range b {
			out = append(out, diffOp{'+', l})
		}
		return out
	}
	// lcs[i][j] = LCS length of a[i:], b[j:].
	lcs := make([][]int, len(a)+1)
	for i := range lcs {
		lcs[i] = make([]int, len(b)+1)
	}
	for i := len(a) - 1; i >= 0; i-- {
		for j := len(b) - 1; j >= 0; j-- {
			if a[i] == b[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	var out []diffOp
	i, j := 0, 0
	for i < len(a) || j < len(b) {
		switch {
		case i < len(a) && j < len(b) && a[i] == b[j]:
			out = append(out, diffOp{' ', a[i]})
			i++
			j++
		case i < len(a) && (j == len(b) || lcs[i+1][j] >= lcs[i][j+1]):
			out = append(out, diffOp{'-', a[i]})
			i++
		default:
			out = append(out, diffOp{'+', b[j]})
			j++
		}
	}
	return out
}

// TextDiff shows how newText differs from oldText, line by line, for a
// change not made yet (a person's approval of an edit sees each
// replacement this way): unchanged lines start "  ", removed ones "- ",
// added ones "+ ". A final line break is no line of its own; an empty
// text has no lines.
func TextDiff(oldText, newText string) string {
	split := func(s string) []string {
		if s == "" {
			return nil
		}
		return strings.Split(strings.TrimSuffix(strings.ReplaceAll(s, "\r\n", "\n"), "\n"), "\n")
	}
	var b strings.Builder
	for _, op := range diffLines(split(oldText), split(newText)) {
		b.WriteByte(op.kind)
		b.WriteString(" " + op.text + "\n")
	}
	return strings.TrimSuffix(b.String(), "\n")
}
