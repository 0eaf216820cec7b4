package session

import (
	"fmt"
	"html/template"
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
					fmt.Fprintf(&b, "\n**→ %s** (`%s`)\n\n%s", c.Name, c.ID, fenced("json", string(c.Arguments)))
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
			fmt.Fprintf(&b, "### %s %s (`%s`)\n\n%s", m.ToolName, status, m.ToolCallID, fenced("", m.Content.Text()))
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

// htmlPage lays out an HTML export; text keeps its line breaks.
var htmlPage = template.Must(template.New("session").Parse(`<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>Session {{.Header.ID}}</title>
<style>
body{font-family:system-ui,sans-serif;max-width:60rem;margin:2rem auto;padding:0 1rem;line-height:1.45}
section{border-left:4px solid #ccc;padding:.2rem 1rem;margin:1rem 0}
section.user{border-color:#3a7bd5}section.assistant{border-color:#2e9e5b}
section.tool{border-color:#999;background:#f7f7f7}section.error{border-color:#d33}
section.compaction{border-color:#c90;background:#fff8e6}
.text{white-space:pre-wrap}pre{white-space:pre-wrap;overflow-wrap:anywhere;background:#f0f0f0;padding:.5rem}
h2{font-size:1rem;margin:.5rem 0}
</style></head><body>
<h1>Session {{.Header.ID}}</h1>
<p>Host <code>{{.Header.Host}}</code>, working directory <code>{{.Header.Cwd}}</code>, started {{.Started}}{{if .Header.ForkedFrom}}, forked from <code>{{.Header.ForkedFrom}}</code>{{end}}</p>
{{range .Items}}<section class="{{.Class}}"><h2>{{.Title}}</h2>{{range .Parts}}{{if .Pre}}<pre>{{.Text}}</pre>{{else}}<div class="text">{{.Text}}</div>{{end}}{{end}}</section>
{{end}}</body></html>
`))

type htmlPart struct {
	Text string
	Pre  bool
}

type htmlItem struct {
	Class, Title string
	Parts        []htmlPart
}

// HTML writes a session's branch as one self-contained HTML page, with
// what Markdown shows.
func HTML(w io.Writer, h Header, entries []Entry) error {
	var items []htmlItem
	for _, e := range entries {
		if e.Message == nil {
			items = append(items, htmlItem{"compaction", "Compaction: the messages above were replaced in the model's context by this summary", []htmlPart{{Text: e.Summary}}})
			continue
		}
		switch m := e.Message.(type) {
		case *loop.UserMessage:
			items = append(items, htmlItem{"user", "User", []htmlPart{{Text: m.Content.Text()}}})
		case *loop.AssistantMessage:
			it := htmlItem{Class: "assistant", Title: "Assistant"}
			for _, c := range m.Content {
				switch c := c.(type) {
				case *loop.Text:
					it.Parts = append(it.Parts, htmlPart{Text: c.Text})
				case *loop.Thinking:
					it.Parts = append(it.Parts, htmlPart{Text: "Thinking: " + c.Thinking})
				case *loop.ToolCall:
					it.Parts = append(it.Parts, htmlPart{Text: "→ " + c.Name + " " + string(c.Arguments), Pre: true})
				}
			}
			if m.ErrorMessage != "" {
				it.Class = "error"
				it.Parts = append(it.Parts, htmlPart{Text: "Error: " + m.ErrorMessage})
			}
			items = append(items, it)
		case *loop.ToolResultMessage:
			class, status := "tool", "result"
			if m.IsError {
				class, status = "error", "error"
			}
			items = append(items, htmlItem{class, m.ToolName + " " + status, []htmlPart{{Text: m.Content.Text(), Pre: true}}})
		}
	}
	return htmlPage.Execute(w, map[string]any{"Header": h, "Started": h.Created.Format(time.RFC3339), "Items": items})
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
