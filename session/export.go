package session

import (
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/pi-remote/pi-remote/loop"
)

// Markdown writes a session's branch as a readable Markdown transcript:
// every message (the compacted ones too), tool calls with their
// arguments, tool results in full, and where each compaction happened.
func Markdown(w io.Writer, h Header, entries []Entry) error {
	var b strings.Builder
	fmt.Fprintf(&b, "# Session %s\n\n", h.ID)
	fmt.Fprintf(&b, "- Host: `%s`\n- Working directory: `%s`\n- Started: %s\n", h.Host, h.Cwd, h.Created.Format(time.RFC3339))
	if h.ForkedFrom != "" {
		fmt.Fprintf(&b, "- Forked from: `%s`\n", h.ForkedFrom)
	}
	for _, e := range entries {
		b.WriteString("\n")
		if e.Message == nil {
			fmt.Fprintf(&b, "## Compaction\n\n*The messages above were replaced in the model's context by this summary:*\n\n%s\n", quote(e.Summary))
			continue
		}
		switch m := e.Message.(type) {
		case *loop.UserMessage:
			fmt.Fprintf(&b, "## User\n\n%s\n", m.Content.Text())
		case *loop.AssistantMessage:
			b.WriteString("## Assistant\n")
			for _, c := range m.Content {
				switch c := c.(type) {
				case *loop.Text:
					fmt.Fprintf(&b, "\n%s\n", c.Text)
				case *loop.Thinking:
					fmt.Fprintf(&b, "\n*Thinking:*\n\n%s\n", quote(c.Thinking))
				case *loop.ToolCall:
					fmt.Fprintf(&b, "\n**→ %s** (`%s`)\n\n", c.Name, c.ID)
					call := readCall(c)
					switch {
					case call.diff != "":
						fmt.Fprintf(&b, "`%s`\n\n%s", call.path, fenced("diff", call.diff))
					case call.content != "":
						fmt.Fprintf(&b, "`%s`\n\n%s", call.path, fenced("", call.content))
					default:
						b.WriteString(fenced("json", call.args))
					}
				}
			}
			if m.ErrorMessage != "" {
				fmt.Fprintf(&b, "\n**Error:** %s\n", m.ErrorMessage)
			}
		case *loop.ToolResultMessage:
			status := "result"
			if m.IsError {
				status = "error"
			}
			text := m.Content.Text()
			fmt.Fprintf(&b, "### %s %s (`%s`)\n\n", m.ToolName, status, m.ToolCallID)
			if n := lines(text); n > foldLines {
				// (GitHub and most Markdown viewers fold <details>.)
				fmt.Fprintf(&b, "<details><summary>%d lines</summary>\n\n%s\n</details>\n", n, fenced("", text)) // (n > 1)
			} else {
				b.WriteString(fenced("", text))
			}
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// fenced is text in a code block whose fence no line of text can close.
func fenced(lang, text string) string {
	fence := "```"
	for strings.Contains(text, fence) {
		fence += "`"
	}
	return fence + lang + "\n" + strings.TrimSuffix(text, "\n") + "\n" + fence + "\n"
}

// quote is text as a Markdown block quote.
func quote(text string) string {
	return "> " + strings.ReplaceAll(strings.TrimRight(text, "\n"), "\n", "\n> ") + "\n"
}

// ExportFile writes the branch of the session file src to the file dst:
// an HTML page when dst ends in .html, else Markdown.
func ExportFile(src, dst string) error {
	h, entries, err := Branch(src)
	if err != nil {
		return err
	}
	f, err := os.Create(dst)
	if err != nil {
		return err
	}
	defer f.Close()
	if strings.HasSuffix(dst, ".html") {
		return HTML(f, h, entries)
	}
	return Markdown(f, h, entries)
}
