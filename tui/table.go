package tui

import (
	"strings"

	"github.com/charmbracelet/x/ansi"
)

// Tables are laid out here, not by Glamour, which stretches every table
// to the full width and cuts a header that does not fit to "…": a table
// is as wide as its cells need, and when that is wider than the terminal
// its widest columns narrow and their cells (headers too) wrap.

// splitTables cuts Markdown text into parts, each a table or not (tables
// inside code fences are code).
func splitTables(text string) (parts []string, isTable []bool) {
	lines := strings.Split(text, "\n")
	var cur []string
	flush := func(table bool) {
		if len(cur) > 0 {
			parts, isTable = append(parts, strings.Join(cur, "\n")), append(isTable, table)
			cur = nil
		}
	}
	fence := ""
	for i := 0; i < len(lines); i++ {
		line := lines[i]
		trimmed := strings.TrimSpace(line)
		switch {
		case fence == "" && (strings.HasPrefix(trimmed, "```") || strings.HasPrefix(trimmed, "~~~")):
			fence = trimmed[:3]
		case fence != "" && strings.HasPrefix(trimmed, fence):
			fence = ""
		case fence == "" && strings.Contains(line, "|") && i+1 < len(lines) && isDelimiterRow(lines[i+1]):
			flush(false)
			j := i + 2
			for j < len(lines) && strings.Contains(lines[j], "|") && strings.TrimSpace(lines[j]) != "" {
				j++
			}
			cur = lines[i:j]
			flush(true)
			i = j - 1
			continue
		}
		cur = append(cur, line)
	}
	flush(false)
	return parts, isTable
}

// isDelimiterRow says whether line is a table's |---|:--:| row.
func isDelimiterRow(line string) bool {
	cells := tableCells(line)
	if len(cells) == 0 {
		return false
	}
	for _, c := range cells {
		c = strings.Trim(c, ":")
		if len(c) < 1 || strings.Trim(c, "-") != "" {
			return false
		}
	}
	return true
}

// tableCells are the cells of a table row (a "\|" is a pipe in a cell).
func tableCells(line string) []string {
	line = strings.TrimSpace(line)
	line = strings.TrimPrefix(line, "|")
	if strings.HasSuffix(line, "|") && !strings.HasSuffix(line, `\|`) {
		line = line[:len(line)-1]
	}
	var cells []string
	var b strings.Builder
	for i := 0; i < len(line); i++ {
		switch {
		case line[i] == '\\' && i+1 < len(line) && line[i+1] == '|':
			b.WriteByte('|')
			i++
		case line[i] == '|':
			cells = append(cells, strings.TrimSpace(b.String()))
			b.Reset()
		default:
			b.WriteByte(line[i])
		}
	}
	return append(cells, strings.TrimSpace(b.String()))
}

// cellText is a cell as shown: its inline emphasis and code marks
// dropped (the layout is ours; the words are the model's).
var cellText = strings.NewReplacer("**", "", "__", "", "`", "")

// renderTable lays a table out in width columns: a header row (bold), a
// rule, the rows; two spaces of margin, " │ " between columns.
func renderTable(table string, width int, th theme) string {
	lines := strings.Split(table, "\n")
	rows := [][]string{tableCells(lines[0])}
	for _, l := range lines[2:] {
		rows = append(rows, tableCells(l))
	}
	cols := len(rows[0])
	widths := make([]int, cols)
	for r, row := range rows {
		for len(row) < cols {
			row = append(row, "")
		}
		rows[r] = row[:cols]
		for c := range cols {
			rows[r][c] = cellText.Replace(rows[r][c])
			widths[c] = max(widths[c], ansi.StringWidth(rows[r][c]), 1)
		}
	}
	// Narrow the widest column, one column at a time, until it fits.
	room := width - 2 - 3*(cols-1)
	for total(widths) > room {
		widest := 0
		for c := range widths {
			if widths[c] > widths[widest] {
				widest = c
			}
		}
		if widths[widest] <= 4 {
			break // as narrow as it goes: the terminal wraps the rest
		}
		widths[widest]--
	}
	var out []string
	for r, row := range rows {
		wrapped := make([][]string, cols)
		height := 1
		for c, cell := range row {
			wrapped[c] = strings.Split(ansi.Wrap(cell, widths[c], ""), "\n")
			height = max(height, len(wrapped[c]))
		}
		for i := range height {
			var b strings.Builder
			b.WriteString("  ")
			for c := range cols {
				piece := ""
				if i < len(wrapped[c]) {
					piece = wrapped[c][i]
				}
				if c > 0 {
					b.WriteString(th.dim.Render(" │ "))
				}
				pad := piece + strings.Repeat(" ", max(widths[c]-ansi.StringWidth(piece), 0))
				if r == 0 {
					pad = th.user.Render(pad)
				}
				b.WriteString(pad)
			}
			out = append(out, strings.TrimRight(b.String(), " "))
		}
		if r == 0 {
			rule := make([]string, cols)
			for c := range cols {
				rule[c] = strings.Repeat("─", widths[c])
			}
			out = append(out, "  "+th.dim.Render(strings.Join(rule, "─┼─")))
		}
	}
	return strings.Join(out, "\n")
}

func total(widths []int) int {
	n := 0
	for _, w := range widths {
		n += w
	}
	return n
}
