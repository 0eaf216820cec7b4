package mcpclient

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/pi-remote/pi-remote/loop"
	"github.com/pi-remote/pi-remote/tools"
)

// Tool is one tool of a running server, as the agent gets it.
type Tool struct {
	Def    tools.Definition
	Server Config
	// Remote is the tool's name on its server.
	Remote string
	// ReadOnlyHint is what the server says of the tool: that it changes
	// nothing (only a claim: Config.Project says whose).
	ReadOnlyHint bool
}

// Details are an MCP tool result's details.
type Details struct {
	Server string `json:"server"`
	Tool   string `json:"tool"`
	// Restarted says that the server was started again before this
	// call: the state it held is gone.
	Restarted bool `json:"restarted,omitempty"`
	// Died says that the server died during the call.
	Died bool `json:"died,omitempty"`
}

// Tools are the tools of every server that started, in server order,
// then in the order each server lists them. A tool whose input schema
// cannot be used (it does not compile, or refers to other documents) is
// left out, and its server's status says so; so is a tool whose name,
// made to fit (Name), is another's.
func (m *Manager) Tools() []Tool {
	if m == nil {
		return nil
	}
	return m.tools
}

// define makes the servers' tools once they started (Start).
func (m *Manager) define() {
	seen := map[string]bool{}
	for _, s := range m.servers {
		s.mu.Lock()
		list := s.tools
		s.mu.Unlock()
		var problems []string
		for _, t := range list {
			name := Name(s.cfg.Name, t.Name)
			if seen[name] {
				problems = append(problems, fmt.Sprintf("tool %q left out: its name %s is another tool's", t.Name, name))
				continue
			}
			d, err := s.definition(name, t)
			if err != nil {
				problems = append(problems, fmt.Sprintf("tool %q left out: %v", t.Name, err))
				continue
			}
			seen[name] = true
			s.names = append(s.names, name)
			m.tools = append(m.tools, Tool{Def: d, Server: s.cfg, Remote: t.Name, ReadOnlyHint: t.Annotations != nil && t.Annotations.ReadOnlyHint})
		}
		s.mu.Lock()
		s.problems = strings.Join(problems, "; ")
		s.mu.Unlock()
	}
}

// definition is tool t of server s as the agent's tool name.
func (s *server) definition(name string, t *mcp.Tool) (tools.Definition, error) {
	params, err := schema(t)
	if err == nil {
		err = bounded(params)
	}
	if err != nil {
		return tools.Definition{}, fmt.Errorf("input schema: %v", err)
	}
	validate, err := tools.ValidatorFor(params)
	if err != nil {
		return tools.Definition{}, fmt.Errorf("input schema: %v", err)
	}
	desc := strings.TrimSpace(t.Description)
	if desc == "" {
		desc = t.Title
	}
	desc = cut(desc, MaxDescription)
	label := t.Title
	if label == "" {
		label = t.Name
	}
	remote := t.Name
	return tools.Definition{
		Name:          name,
		Label:         s.cfg.Name + ": " + label,
		Description:   fmt.Sprintf("%s (Tool %q of the MCP server %q.)", desc, remote, s.cfg.Name),
		PromptSnippet: firstLine(desc) + fmt.Sprintf(" (MCP server %s)", s.cfg.Name),
		Parameters:    params,
		Validate:      validate,
		Execute: func(ctx context.Context, _ string, args json.RawMessage, onUpdate func(loop.Result)) (loop.Result, error) {
			return s.call(ctx, remote, args, onUpdate), nil
		},
	}, nil
}

// A tool's input schema goes into every model request, and compiling
// it takes time that grows fast with its depth: a larger or deeper one is
// refused.
const (
	MaxSchemaBytes = 64 << 10
	MaxSchemaDepth = 64 // objects and arrays within each other
)

// bounded says whether schema is within MaxSchemaBytes and
// MaxSchemaDepth.
func bounded(schema []byte) error {
	if len(schema) > MaxSchemaBytes {
		return fmt.Errorf("larger than %d bytes (%d)", MaxSchemaBytes, len(schema))
	}
	depth, quoted, escaped := 0, false, false
	for _, c := range schema {
		switch {
		case escaped:
			escaped = false
		case quoted && c == '\\':
			escaped = true
		case c == '"':
			quoted = !quoted
		case quoted:
		case c == '{' || c == '[':
			if depth++; depth > MaxSchemaDepth {
				return fmt.Errorf("nested deeper than %d levels", MaxSchemaDepth)
			}
		case c == '}' || c == ']':
			depth--
		}
	}
	return nil
}

// MaxDescription bounds the description of a tool the model sees: a
// server's text goes into every request's tool list.
const MaxDescription = 2048

// cut is s cut to at most n bytes, on a character's start, "…" marking
// the cut.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	if i := strings.Index(line, ". "); i >= 0 {
		line = line[:i+1]
	}
	return line
}

// call calls tool on the server: the result, or an error result that
// says what happened to the call and to the server.
func (s *server) call(ctx context.Context, tool string, args json.RawMessage, onUpdate func(loop.Result)) loop.Result {
	details := Details{Server: s.cfg.Name, Tool: tool}
	cs, restarted, err := s.live(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return withDetails(loop.ErrorResult("Tool call aborted."), details)
		}
		return withDetails(loop.ErrorResult(fmt.Sprintf("MCP server %s is not running and could not be started again: %v", s.cfg.Name, err)), details)
	}
	details.Restarted = restarted
	params := &mcp.CallToolParams{Name: tool, Arguments: json.RawMessage(args)}
	if onUpdate != nil {
		p := &progressLog{onUpdate: onUpdate}
		token, done := s.watch(p.add)
		defer done()
		params.SetProgressToken(token)
	}
	res, err := cs.CallTool(ctx, params)
	switch {
	case ctx.Err() != nil:
		// (The SDK told the server: notifications/cancelled.)
		return withDetails(loop.ErrorResult("Tool call aborted."), details)
	case err != nil && s.died(cs, err):
		details.Died = true
		msg := fmt.Sprintf("MCP server %s stopped during the call (%v); the call may or may not have taken effect. The server is started again at its next call, and whatever state it held is lost.", s.cfg.Name, err)
		if w := s.lastWords(); w != "" {
			msg += "\nIts stderr ended with:\n" + w
		}
		return withDetails(loop.ErrorResult(msg), details)
	case err != nil:
		return withDetails(loop.ErrorResult(fmt.Sprintf("MCP server %s refused the call: %v", s.cfg.Name, err)), details)
	}
	out := convert(res)
	if restarted {
		note := fmt.Sprintf("[MCP server %s was started again before this call: state it held before (open sessions, handles, data not saved) is lost.]\n", s.cfg.Name)
		out.Content = append(loop.ContentList{&loop.Text{Text: note}}, out.Content...)
	}
	return withDetails(out, details)
}

func withDetails(r loop.Result, d Details) loop.Result {
	r.Details = d
	return r
}

// maxResultBytes bounds the text of one result the model gets.
const maxResultBytes = tools.MaxBytes

// convert maps a tool result onto the loop's: text as text, images as
// images, links and embedded resources as text, audio and binary
// resources described; structured content as JSON text when there is no
// other content; isError kept.
func convert(res *mcp.CallToolResult) loop.Result {
	var out loop.Result
	out.IsError = res.IsError
	for _, c := range res.Content {
		switch c := c.(type) {
		case *mcp.TextContent:
			out.Content = append(out.Content, &loop.Text{Text: c.Text})
		case *mcp.ImageContent:
			out.Content = append(out.Content, &loop.Image{Data: base64.StdEncoding.EncodeToString(c.Data), MimeType: c.MIMEType})
		case *mcp.AudioContent:
			out.Content = append(out.Content, &loop.Text{Text: fmt.Sprintf("[audio, %s, %d bytes: not shown]", c.MIMEType, len(c.Data))})
		case *mcp.ResourceLink:
			out.Content = append(out.Content, &loop.Text{Text: describeLink(c)})
		case *mcp.EmbeddedResource:
			out.Content = append(out.Content, &loop.Text{Text: describeResource(c.Resource)})
		default:
			b, _ := json.Marshal(c)
			out.Content = append(out.Content, &loop.Text{Text: string(b)})
		}
	}
	if len(out.Content) == 0 && res.StructuredContent != nil {
		b, err := json.Marshal(res.StructuredContent)
		if err == nil {
			out.Content = append(out.Content, &loop.Text{Text: string(b)})
		}
	}
	if len(out.Content) == 0 {
		out.Content = loop.ContentList{&loop.Text{Text: "(no output)"}}
	}
	return capText(out)
}

func describeLink(l *mcp.ResourceLink) string {
	s := "Resource link: " + l.URI
	if l.Name != "" {
		s += " (" + l.Name + ")"
	}
	if l.MIMEType != "" {
		s += ", " + l.MIMEType
	}
	if l.Description != "" {
		s += ": " + l.Description
	}
	return s
}

func describeResource(r *mcp.ResourceContents) string {
	if r == nil {
		return "[empty resource]"
	}
	if r.Blob != nil && r.Text == "" {
		return fmt.Sprintf("[resource %s, %s, %d bytes of binary data: not shown]", r.URI, r.MIMEType, len(r.Blob))
	}
	return "Resource " + r.URI + ":\n" + r.Text
}

// capText cuts the text of a result at maxResultBytes in all, saying so.
func capText(r loop.Result) loop.Result {
	left := maxResultBytes
	for i, c := range r.Content {
		t, ok := c.(*loop.Text)
		if !ok {
			continue
		}
		if len(t.Text) <= left {
			left -= len(t.Text)
			continue
		}
		cut := left
		for cut > 0 && !utf8.RuneStart(t.Text[cut]) {
			cut--
		}
		total := 0
		for _, c := range r.Content {
			if t, ok := c.(*loop.Text); ok {
				total += len(t.Text)
			}
		}
		r.Content = append(r.Content[:i:i], &loop.Text{Text: t.Text[:cut] + fmt.Sprintf("\n[output cut: the result's text is %d bytes; the first %d are shown]", total, maxResultBytes)})
		return r
	}
	return r
}

// progressLog turns a call's progress notifications into partial
// results: one line each, the latest lines last.
type progressLog struct {
	onUpdate func(loop.Result)
	mu       sync.Mutex
	lines    []string
}

const progressLines = 20

// MaxProgressMessage bounds the message of one progress notification
// that a partial result shows.
const MaxProgressMessage = 200

func firstLineOnly(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

func (p *progressLog) add(n *mcp.ProgressNotificationParams) {
	line := "progress " + strconv.FormatFloat(n.Progress, 'f', -1, 64)
	if n.Total > 0 {
		line += "/" + strconv.FormatFloat(n.Total, 'f', -1, 64)
	}
	if m := strings.TrimSpace(firstLineOnly(n.Message)); m != "" {
		line += ": " + cut(m, MaxProgressMessage)
	}
	p.mu.Lock()
	p.lines = append(p.lines, line)
	if len(p.lines) > progressLines {
		p.lines = p.lines[len(p.lines)-progressLines:]
	}
	text := strings.Join(p.lines, "\n")
	p.mu.Unlock()
	p.onUpdate(loop.Result{Content: loop.ContentList{&loop.Text{Text: text}}})
}
