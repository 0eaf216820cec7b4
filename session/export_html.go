package session

import (
	"bytes"
	"html/template"
	"io"
	"strings"
	"time"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/extension"
	"github.com/yuin/goldmark/renderer"
	"github.com/yuin/goldmark/text"
	"github.com/yuin/goldmark/util"

	"github.com/pi-remote/pi-remote/loop"
)

// markdown renders the messages' Markdown (GitHub's: tables, strikethrough,
// task lists, autolinks). Raw HTML in a message is shown as text, and
// dangerous links are not followed (goldmark's default): the model wrote
// it.
var markdown = goldmark.New(goldmark.WithExtensions(extension.GFM),
	goldmark.WithRendererOptions(renderer.WithNodeRenderers(util.Prioritized(rawHTMLAsText{}, 100))))

// rawHTMLAsText renders raw HTML, inline or a block, as escaped text,
// where goldmark's own renderer would leave it out.
type rawHTMLAsText struct{}

func (rawHTMLAsText) RegisterFuncs(r renderer.NodeRendererFuncRegisterer) {
	write := func(w util.BufWriter, source []byte, segs *text.Segments) {
		for i := range segs.Len() {
			seg := segs.At(i)
			_, _ = w.WriteString(template.HTMLEscapeString(string(seg.Value(source))))
		}
	}
	r.Register(ast.KindRawHTML, func(w util.BufWriter, source []byte, n ast.Node, entering bool) (ast.WalkStatus, error) {
		if entering {
			write(w, source, n.(*ast.RawHTML).Segments)
		}
		return ast.WalkSkipChildren, nil
	})
	r.Register(ast.KindHTMLBlock, func(w util.BufWriter, source []byte, n ast.Node, entering bool) (ast.WalkStatus, error) {
		b := n.(*ast.HTMLBlock)
		if entering {
			_, _ = w.WriteString("<pre>")
			write(w, source, b.Lines())
			return ast.WalkContinue, nil
		}
		if b.HasClosure() {
			_, _ = w.WriteString(template.HTMLEscapeString(string(b.ClosureLine.Value(source))))
		}
		_, _ = w.WriteString("</pre>\n")
		return ast.WalkContinue, nil
	})
}

// htmlPage lays out an HTML export: text rendered from Markdown, code and
// outputs wrapped (no horizontal scrolling), long outputs and thinking
// folded, edits as coloured diffs. Its content security policy lets the
// page run no script and load nothing from elsewhere (an image the model
// linked would tell a server the page was read).
var htmlPage = template.Must(template.New("session").Parse(`<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'; img-src data:"><title>Session {{.Header.ID}}</title>
<style>
body{font-family:system-ui,sans-serif;max-width:60rem;margin:2rem auto;padding:0 1rem;line-height:1.45}
section{border-left:4px solid #ccc;padding:.2rem 1rem;margin:1rem 0;overflow-wrap:anywhere}
section.user{border-color:#3a7bd5}section.assistant{border-color:#2e9e5b}
section.tool{border-color:#999;background:#f7f7f7}section.error{border-color:#d33}
section.compaction{border-color:#c90;background:#fff8e6}
pre{white-space:pre-wrap;overflow-wrap:anywhere;background:#f0f0f0;padding:.5rem}
code{overflow-wrap:anywhere}
table{border-collapse:collapse}th,td{border:1px solid #ccc;padding:.2rem .5rem;text-align:left}
.del{background:#fdd;display:block}.add{background:#dfd;display:block}
.call{font-family:monospace;margin:.5rem 0 .2rem}
h2{font-size:1rem;margin:.5rem 0}summary{cursor:pointer;color:#555}
</style></head><body>
<h1>Session {{.Header.ID}}</h1>
<p>Host <code>{{.Header.Host}}</code>, working directory <code>{{.Header.Cwd}}</code>, started {{.Started}}{{if .Header.ForkedFrom}}, forked from <code>{{.Header.ForkedFrom}}</code>{{end}}</p>
{{range .Items}}<section class="{{.Class}}"><h2>{{.Title}}</h2>{{range .Parts}}{{.}}{{end}}</section>
{{end}}</body></html>
`))

type htmlItem struct {
	Class, Title string
	Parts        []template.HTML
}

// HTML writes a session's branch as one self-contained HTML page, with
// what Markdown shows.
func HTML(w io.Writer, h Header, entries []Entry) error {
	var items []htmlItem
	for _, e := range entries {
		if e.Message == nil {
			items = append(items, htmlItem{"compaction", "Compaction: the messages above were replaced in the model's context by this summary", []template.HTML{rendered(e.Summary)}})
			continue
		}
		switch m := e.Message.(type) {
		case *loop.UserMessage:
			items = append(items, htmlItem{"user", "User", []template.HTML{rendered(m.Content.Text())}})
		case *loop.AssistantMessage:
			it := htmlItem{Class: "assistant", Title: "Assistant"}
			for _, c := range m.Content {
				switch c := c.(type) {
				case *loop.Text:
					it.Parts = append(it.Parts, rendered(c.Text))
				case *loop.Thinking:
					it.Parts = append(it.Parts, folded("Thinking ("+countLines(c.Thinking)+")", rendered(c.Thinking)))
				case *loop.ToolCall:
					it.Parts = append(it.Parts, callHTML(c))
				}
			}
			if m.ErrorMessage != "" {
				it.Class = "error"
				it.Parts = append(it.Parts, pre("Error: "+m.ErrorMessage))
			}
			items = append(items, it)
		case *loop.ToolResultMessage:
			class, status := "tool", "result"
			if m.IsError {
				class, status = "error", "error"
			}
			text := m.Content.Text()
			part := pre(text)
			if n := lines(text); n > foldLines {
				part = folded(countLines(text), part)
			}
			items = append(items, htmlItem{class, m.ToolName + " " + status, []template.HTML{part}})
		}
	}
	return htmlPage.Execute(w, map[string]any{"Header": h, "Started": h.Created.Format(time.RFC3339), "Items": items})
}

// rendered is Markdown text as HTML; text goldmark cannot render is shown
// as it is.
func rendered(text string) template.HTML {
	var b bytes.Buffer
	if err := markdown.Convert([]byte(text), &b); err != nil {
		return pre(text)
	}
	return template.HTML(b.String()) // goldmark escapes text and omits raw HTML
}

// pre is text in a <pre>, escaped.
func pre(text string) template.HTML {
	return template.HTML("<pre>" + template.HTMLEscapeString(strings.TrimSuffix(text, "\n")) + "</pre>")
}

// folded is inner behind a <details> whose summary is summary.
func folded(summary string, inner template.HTML) template.HTML {
	return template.HTML("<details><summary>"+template.HTMLEscapeString(summary)+"</summary>") + inner + "</details>"
}

// callHTML shows a tool call: an edit as a coloured diff, a write as its
// content (folded when long), another as its arguments.
func callHTML(c *loop.ToolCall) template.HTML {
	call := readCall(c)
	head := template.HTML(`<div class="call">→ ` + template.HTMLEscapeString(c.Name) + " " + template.HTMLEscapeString(call.path) + "</div>")
	switch {
	case call.diff != "":
		var b strings.Builder
		b.WriteString("<pre>")
		for _, l := range splitLines(call.diff) {
			class := "add"
			switch {
			case strings.HasPrefix(l, "-"):
				class = "del"
			case l == "@@":
				b.WriteString("⋯\n")
				continue
			}
			b.WriteString(`<span class="` + class + `">` + template.HTMLEscapeString(l) + "</span>")
		}
		b.WriteString("</pre>")
		return head + template.HTML(b.String())
	case call.content != "":
		body := pre(call.content)
		if n := lines(call.content); n > foldLines {
			body = folded(countLines(call.content), body)
		}
		return head + body
	}
	return template.HTML(`<div class="call">→ `+template.HTMLEscapeString(c.Name)+"</div>") + pre(call.args)
}
