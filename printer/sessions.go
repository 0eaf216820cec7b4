package printer

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/pi-remote/pi-remote/session"
)

// SessionRow is one session as `sessions` lists it (its JSON too): the
// file's description and its cost at the model table's prices.
type SessionRow struct {
	session.Info
	Cost float64 `json:"cost"`
}

// Sessions writes the sessions as a table; what came from outside (hosts,
// directories, prompts) is shown with its controls as text.
func Sessions(out io.Writer, rows []SessionRow) error {
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tLAST ACTIVE\tHOST\tCWD\tMSGS\tSIZE\tCOST\tFIRST PROMPT")
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s\t$%.4f\t%s\n", Cell(ShortID(r.ID)), r.LastActivity.Local().Format("2006-01-02 15:04"),
			Cell(r.Host), Cell(r.Cwd), r.Messages, size(r.Bytes), r.Cost, Cell(OneLine(r.FirstPrompt, 50)))
	}
	return tw.Flush()
}

// ShortID is the prefix of a session's ID that people see.
func ShortID(id string) string {
	if len(id) > 8 {
		return id[:8]
	}
	return id
}

func size(n int64) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}

// OneLine is s on one line, cut to n characters.
func OneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}
