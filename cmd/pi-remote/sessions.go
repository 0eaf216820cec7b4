package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/pi-remote/pi-remote/agent"
	"github.com/pi-remote/pi-remote/internal/shellquote"
	"github.com/pi-remote/pi-remote/internal/termtext"
	"github.com/pi-remote/pi-remote/printer"
	"github.com/pi-remote/pi-remote/session"
)

func newSessionsCmd(ios iostreams, g *globalOptions) *cobra.Command {
	var asJSON bool
	var entries string
	cmd := &cobra.Command{
		Use:   "sessions",
		Short: "List the saved sessions, the most recent first",
		Long: `List the sessions under ~/.pi-remote/sessions, the most recently active
first: ID, last activity, host, working directory, messages, size, cost (at the
model table's prices; models it does not know count nothing) and the first
prompt. Continue one with run --resume ID (a prefix is enough), start from one
of its entries with run --fork ENTRY (--entries ID lists them: each is the
point before one of the session's prompts), write it out with export ID.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			root, err := session.Root()
			if err != nil {
				return err
			}
			if entries != "" {
				return listEntries(ios, root, entries, asJSON)
			}
			all, err := session.List(root)
			if err != nil {
				return err
			}
			models := g.settings.ModelTable()
			rows := make([]printer.SessionRow, len(all))
			for i, s := range all {
				rows[i] = printer.SessionRow{Info: s, Cost: agent.SessionTotals(models, s).Cost}
			}
			if asJSON {
				for _, r := range rows {
					if err := encodeJSON(ios.out, r, ""); err != nil {
						return err
					}
				}
				return nil
			}
			if len(rows) == 0 {
				fmt.Fprintln(ios.err, "no sessions yet")
				return nil
			}
			return printer.Sessions(ios.out, rows)
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "one JSON object per session (full ID, path, usage by model)")
	cmd.Flags().StringVar(&entries, "entries", "", "list the points session ID can be forked at (run --fork ENTRY): the entry before each prompt, the latest first")
	return cmd
}

// listEntries lists the fork points of the session whose ID starts with
// id: the entry to pass to run --fork, and the prompt that came after it.
func listEntries(ios iostreams, root, id string, asJSON bool) error {
	path, err := session.Find(root, id)
	if err != nil {
		return usageErrorf("%v", err)
	}
	_, branch, err := session.Branch(path)
	if err != nil {
		return usageErrorf("%v", err)
	}
	points := session.ForkPoints(branch)
	if asJSON {
		for _, p := range points {
			if err := encodeJSON(ios.out, map[string]string{"entry": p.Entry, "prompt": p.Prompt}, ""); err != nil {
				return err
			}
		}
		return nil
	}
	if len(points) == 0 {
		fmt.Fprintln(ios.err, "no entry to fork at: the session has one prompt or none")
		return nil
	}
	w := termtext.NewWriter(ios.out)
	defer w.Flush()
	fmt.Fprintln(w, "ENTRY     PROMPT AFTER IT")
	for _, p := range points {
		fmt.Fprintf(w, "%-8s  %s\n", p.Entry[:min(8, len(p.Entry))], printer.OneLine(p.Prompt, 70))
	}
	return nil
}

func newExportCmd(ios iostreams) *cobra.Command {
	var output string
	var html bool
	cmd := &cobra.Command{
		Use:   "export SESSION",
		Short: "Write a session as a readable Markdown (or HTML) transcript",
		Long: `Write the session SESSION (a file, or an ID or its prefix from pi-remote
sessions) as a transcript: every message of its current branch, the ones a
compaction replaced in the model's context too, tool calls with their
arguments and results in full, and where each compaction happened. Markdown on
stdout by default; --html writes one self-contained page; -o writes a file.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			path := args[0]
			if _, err := os.Stat(path); err != nil {
				root, rerr := session.Root()
				if rerr != nil {
					return rerr
				}
				if path, err = session.Find(root, args[0]); err != nil {
					return usageErrorf("%v", err)
				}
			}
			h, entries, err := session.Branch(path)
			if err != nil {
				return usageErrorf("%v", err)
			}
			// To a terminal with the messages' controls shown as text;
			// byte for byte into a file or a pipe.
			w, done := shownOn(ios.out)
			if output != "" {
				f, err := os.Create(output)
				if err != nil {
					return usageErrorf("-o: %v", err)
				}
				defer f.Close()
				w, done = f, func() error { return nil }
			}
			write := session.Markdown
			if html {
				write = session.HTML
			}
			if err := write(w, h, entries); err != nil {
				return err
			}
			return done()
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "", "write to this file instead of stdout")
	cmd.Flags().BoolVar(&html, "html", false, "an HTML page instead of Markdown")
	return cmd
}

// resumeCommand is the command that goes on with session id, in file
// path, on the same hosts and working directory: by its id when the file
// is among the sessions under root (which --resume searches), by its
// path otherwise (a session started with --session FILE).
func resumeCommand(hosts []string, cwd, id, path, root string) string {
	words := []string{"pi-remote", "run"}
	for _, h := range hosts {
		words = append(words, "--host", h)
	}
	if cwd != "" {
		words = append(words, "--cwd", cwd)
	}
	if abs, err := filepath.Abs(path); err == nil {
		path = abs
	}
	if root == "" || filepath.Dir(filepath.Dir(path)) != filepath.Clean(root) {
		return shellquote.Join(append(words, "--session", path)...)
	}
	return shellquote.Join(append(words, "--resume", printer.ShortID(id))...)
}
