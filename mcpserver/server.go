// Package mcpserver serves a workspace's tools over the Model Context
// Protocol on a line-based stdio transport, so that another agent (Claude
// Code, Codex, Cursor...) works on pi-remote's hosts through their
// persistent connections and mutation queues. Tool failures are tool
// results with isError, never protocol errors; bash output arrives as
// progress notifications when the client asks for progress; cancelling a
// call kills the command. A line that holds no message is answered with a
// JSON-RPC error and the server reads on.
package mcpserver

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/pi-remote/pi-remote/internal/termtext"
	"github.com/pi-remote/pi-remote/loop"
	"github.com/pi-remote/pi-remote/tools"
)

// Options say what a server serves.
type Options struct {
	// Defs are the tools of the workspace's hosts (Hosts.Definitions);
	// Active the ones served, and the only ones that may run.
	Defs   []tools.Definition
	Active []tools.Definition
	// MaxArgumentBytes bounds a call's arguments (0: the loop's default).
	MaxArgumentBytes int
	// ProgressLines is how many of a running command's last lines a
	// progress notification carries.
	ProgressLines int
}

// Serve serves o's tools on in and out until the end of in (MCP's stdio
// shutdown: the calls in flight are cancelled, their commands killed) or
// until ctx ends; both are a nil error. A *ClientError says that the
// client's streams failed.
func Serve(ctx context.Context, in io.Reader, out io.Writer, o Options) error {
	server := mcp.NewServer(&mcp.Implementation{Name: "pi-remote", Version: "dev"}, nil)
	var names []string
	for _, d := range o.Active {
		names = append(names, d.Name)
	}
	cfg := loop.Config{Tools: tools.WrapAll(o.Defs), Active: names, MaxArgumentBytes: o.MaxArgumentBytes}
	for _, d := range o.Active {
		var schema map[string]any
		if err := json.Unmarshal(d.Parameters, &schema); err != nil {
			return fmt.Errorf("tool %s: schema: %w", d.Name, err)
		}
		server.AddTool(&mcp.Tool{Name: d.Name, Description: d.Description, InputSchema: schema},
			func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return call(ctx, cfg, d.Name, req, o.ProgressLines), nil
			})
	}
	err := server.Run(ctx, &stdio{in: in, out: out, maxLine: mcp.DefaultMaxLineLength})
	if err == nil || ctx.Err() != nil {
		return nil
	}
	return &ClientError{Err: err}
}

// ClientError says that the connection to the client failed: its
// streams, never the hosts'.
type ClientError struct{ Err error }

func (e *ClientError) Error() string {
	return "mcp: the connection to the client failed: " + e.Err.Error()
}
func (e *ClientError) Unwrap() error { return e.Err }

// call runs one tool call, its progress told to the client when it asks.
func call(ctx context.Context, cfg loop.Config, name string, req *mcp.CallToolRequest, progressLines int) *mcp.CallToolResult {
	token := req.Params.GetProgressToken()
	var progress float64
	emit := func(e loop.Event) {
		u, ok := e.(loop.ToolExecutionUpdate)
		if !ok || token == nil {
			return
		}
		progress++
		req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{
			ProgressToken: token, Progress: progress, Message: termtext.LastLines(u.PartialResult.Content.Text(), progressLines),
		})
	}
	m := tools.Call(ctx, cfg, name, req.Params.Arguments, emit)
	res := &mcp.CallToolResult{IsError: m.IsError}
	for _, c := range m.Content {
		switch c := c.(type) {
		case *loop.Text:
			res.Content = append(res.Content, &mcp.TextContent{Text: c.Text})
		case *loop.Image:
			data, err := base64.StdEncoding.DecodeString(c.Data)
			if err == nil {
				res.Content = append(res.Content, &mcp.ImageContent{Data: data, MIMEType: c.MimeType})
			}
		}
	}
	if len(res.Content) == 0 {
		res.Content = []mcp.Content{&mcp.TextContent{Text: ""}}
	}
	return res
}
