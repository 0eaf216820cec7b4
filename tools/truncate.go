package tools

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// The shared output limits of docs/tools.md.
const (
	MaxLines = 2000
	MaxBytes = 50 * 1024
	// MaxGrepLine caps one grep output line, in characters.
	MaxGrepLine = 500
)

// truncation describes what a head or tail cut kept.
type truncation struct {
	Content     string `json:"-"`
	Truncated   bool   `json:"truncated"`
	By          string `json:"truncatedBy,omitempty"` // "lines" or "bytes"
	TotalLines  int    `json:"totalLines"`
	TotalBytes  int    `json:"totalBytes"`
	OutputLines int    `json:"outputLines"`
	OutputBytes int    `json:"outputBytes"`
	// PartialLine is set when a tail cut had to keep only the end of a
	// single line longer than the byte limit.
	PartialLine bool `json:"partialLine,omitempty"`
}

func splitLines(s string) []string {
	if s == "" {
		return nil
	}
	lines := strings.SplitAfter(s, "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	return lines
}

// truncateHead keeps whole lines from the start within the limits.
func truncateHead(s string, maxLines, maxBytes int) truncation {
	lines := splitLines(s)
	t := truncation{TotalLines: len(lines), TotalBytes: len(s)}
	n, size := 0, 0
	for _, l := range lines {
		if n == maxLines {
			t.By = "lines"
			break
		}
		if size+len(l) > maxBytes {
			t.By = "bytes"
			break
		}
		n++
		size += len(l)
	}
	t.Content = strings.Join(lines[:n], "")
	t.Truncated = n < len(lines)
	if !t.Truncated {
		t.By = ""
	}
	t.OutputLines, t.OutputBytes = n, len(t.Content)
	return t
}

// truncateTail keeps whole lines from the end within the limits; when even
// the last line is too long, it keeps that line's tail.
func truncateTail(s string, maxLines, maxBytes int) truncation {
	lines := splitLines(s)
	t := truncation{TotalLines: len(lines), TotalBytes: len(s)}
	n, size := 0, 0
	for i := len(lines) - 1; i >= 0; i-- {
		l := lines[i]
		if n == maxLines {
			t.By = "lines"
			break
		}
		if size+len(l) > maxBytes {
			t.By = "bytes"
			break
		}
		n++
		size += len(l)
	}
	t.Content = strings.Join(lines[len(lines)-n:], "")
	if n == 0 && len(lines) > 0 {
		last := lines[len(lines)-1]
		cut := len(last) - maxBytes
		for cut < len(last) && !utf8.RuneStart(last[cut]) {
			cut++
		}
		t.Content = last[cut:]
		t.PartialLine = true
		n = 1
	}
	t.Truncated = t.PartialLine || n < len(lines)
	if !t.Truncated {
		t.By = ""
	}
	t.OutputLines, t.OutputBytes = n, len(t.Content)
	return t
}

// withNotice appends notices after the text: one blank line, then a single
// bracketed line (several notices joined inside one pair of brackets).
func withNotice(text string, notices ...string) string {
	var kept []string
	for _, n := range notices {
		if n != "" {
			kept = append(kept, n)
		}
	}
	if len(kept) == 0 {
		return text
	}
	if text == "" {
		return "[" + strings.Join(kept, " ") + "]"
	}
	return strings.TrimRight(text, "\n") + "\n\n[" + strings.Join(kept, " ") + "]"
}

// listText renders a head-truncated list (grep, find, ls output): the kept
// lines without a trailing newline, then the notices.
func listText(t truncation, notices ...string) string {
	return withNotice(strings.TrimSuffix(t.Content, "\n"), notices...)
}

// formatSize renders a byte count for notices.
func formatSize(n int64) string {
	switch {
	case n < 1024:
		return fmt.Sprintf("%dB", n)
	case n < 1024*1024:
		return fmt.Sprintf("%.1fKB", float64(n)/1024)
	case n < 1024*1024*1024:
		return fmt.Sprintf("%.1fMB", float64(n)/(1024*1024))
	default:
		return fmt.Sprintf("%.1fGB", float64(n)/(1024*1024*1024))
	}
}
