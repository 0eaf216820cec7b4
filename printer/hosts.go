package printer

import (
	"bytes"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"
	"unicode/utf8"

	"github.com/pi-remote/pi-remote/internal/termtext"
	"github.com/pi-remote/pi-remote/workspace"
)

// Report writes a host's report (workspace.Report) for a person; remote
// says it is an SSH host. Whatever the host said(its home, its tools'
// versions, an error) is shown with its controls as text.
func Report(out io.Writer, r workspace.Report, remote bool) {
	w := termtext.NewWriter(out)
	defer w.Flush()
	fmt.Fprintf(w, "name:      %s\n", r.Name)
	fmt.Fprintf(w, "host:      %s\n", r.Host)
	if len(r.Via) > 0 {
		fmt.Fprintf(w, "via:       %s\n", strings.Join(r.Via, " -> "))
	}
	if r.Error != "" {
		fmt.Fprintf(w, "state:     unreachable: %s\n", r.Error)
		return
	}
	// What the host has, or what pi-remote does without it.
	type ability struct {
		label   string
		has     bool
		yes, no string
	}
	var abilities []ability
	if remote {
		fmt.Fprintf(w, "host key:  %s\n", r.HostKey)
		fmt.Fprintf(w, "auth:      %s\n", r.Auth)
		abilities = append(abilities,
			ability{"sftp", r.SFTP, "available", "missing (files go over the shell)"},
			ability{"setsid", r.Setsid, "yes (commands get their own process group)", "missing (a cancelled command takes its server with it)"})
	}
	abilities = append(abilities, ability{"home", true, r.Home, ""},
		ability{"bash", r.Bash, "yes", "no (bash tool uses sh)"},
		ability{"rg", r.Rg, "yes", "no (grep walks the tree with find(1), skips what .gitignore/.ignore exclude as rg would, and runs grep -E: POSIX regex syntax, one more round trip)"},
		ability{"fd", r.Fd != "", r.Fd, "no (find walks the tree with find(1) and skips what .gitignore/.ignore exclude, as fd would)"})
	for _, a := range abilities {
		text := a.no
		if a.has {
			text = a.yes
		}
		fmt.Fprintf(w, "%-11s%s\n", a.label+":", text)
	}
	if len(r.Helpers) > 0 {
		fmt.Fprintf(w, "helpers:   %s\n", strings.Join(r.Helpers, " "))
	}
	if remote {
		fmt.Fprintf(w, "rtt:       %.2f ms\n", r.RTTMilli)
	}
	Permissions(w, r.Permissions)
}

// Permissions prints a host's permission mode and the rules that apply
// there, each with where it came from.
func Permissions(out io.Writer, p *workspace.PermissionReport) {
	if p == nil {
		return
	}
	fmt.Fprintf(out, "permissions: %s (%s)\n", p.Mode, p.From)
	for _, r := range p.Rules {
		fmt.Fprintf(out, "  %-5s %s  (%s)\n", r.Kind, r.Rule, r.From)
	}
}

// JobRow is one job as `jobs` lists it (its JSON too).
type JobRow struct {
	Host    string `json:"host"`
	ID      string `json:"id"`
	State   string `json:"state"`
	Code    *int   `json:"exitCode,omitempty"`
	Why     string `json:"why,omitempty"`
	AgeSecs int64  `json:"ageSeconds"`
	Command string `json:"command"`
}

// JobRows are the jobs as rows, never nil.
func JobRows(jobs []workspace.Job) []JobRow {
	all := []JobRow{}
	for _, j := range jobs {
		row := JobRow{Host: j.Host, ID: j.ID, State: j.State, Why: j.Why, AgeSecs: int64(j.Age / time.Second), Command: j.Label}
		if j.State == "exited" || j.State == "stopped" {
			row.Code = &j.Code
		}
		all = append(all, row)
	}
	return all
}

// Jobs writes the jobs as a table; what the hosts said (labels,
// states, names) is shown with its controls as text.
func Jobs(out io.Writer, all []JobRow, multi bool, width int) error {
	if len(all) == 0 {
		fmt.Fprintln(out, "no jobs")
		return nil
	}
	rows := [][]string{{"ID", "STATE", "AGE"}}
	if multi {
		rows[0] = append([]string{"HOST"}, rows[0]...)
	}
	commands := []string{"COMMAND"}
	for _, j := range all {
		state := j.State
		switch {
		case j.State == "exited":
			state = fmt.Sprintf("exited %d", *j.Code)
		case j.State == "stopped":
			state = "stopped: " + j.Why
		case j.State == "lost":
			state = "lost (its waiter died)"
		}
		row := []string{Cell(j.ID), Cell(state), (time.Duration(j.AgeSecs) * time.Second).String()}
		if multi {
			row = append([]string{Cell(j.Host)}, row...)
		}
		rows = append(rows, row)
		commands = append(commands, Cell(j.Command))
	}
	// The columns before the command, laid out once to learn their width:
	// with a width, the command is cut to what is left (at least 12).
	var lead bytes.Buffer
	tw := tabwriter.NewWriter(&lead, 0, 0, 2, ' ', 0)
	for _, r := range rows {
		fmt.Fprintln(tw, strings.Join(r, "\t")+"\t")
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for i, line := range strings.Split(strings.TrimSuffix(lead.String(), "\n"), "\n") {
		command := commands[i]
		if width > 0 {
			command = OneLine(command, max(width-utf8.RuneCountInString(line), 12))
		}
		if _, err := fmt.Fprintln(out, line+command); err != nil {
			return err
		}
	}
	return nil
}

// Cell is s as one cell of a table on a terminal: a tab is a space,
// controls are shown as text.
func Cell(s string) string {
	return termtext.String(strings.ReplaceAll(s, "\t", " "))
}
