package main

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/cobra"

	"github.com/pi-remote/pi-remote/internal/termtext"
	"github.com/pi-remote/pi-remote/loop"
	"github.com/pi-remote/pi-remote/tools"
	"github.com/pi-remote/pi-remote/workspace"
)

func newMCPCmd(ios iostreams, g *globalOptions) *cobra.Command {
	var toolList string
	cmd := &cobra.Command{
		Use:   "mcp",
		Short: "Serve the tools of the chosen host(s) as an MCP server on stdio",
		Long: `Serve pi-remote's tools over the Model Context Protocol on stdin/stdout, so
another agent (Claude Code, Codex, Cursor...) works on the chosen host(s)
through pi-remote's persistent connection and mutation queue.

bash output arrives as progress notifications when the client asks for
progress; cancelling a call kills the remote command; tool failures are
tool results with isError, not protocol errors.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return mcpRun(cmd.Context(), ios, g, toolList)
		},
	}
	cmd.Flags().StringVar(&toolList, "tools", strings.Join(tools.DefaultActive, ","), "tools to expose, comma-separated: "+strings.Join(tools.AllNames, ","))
	return cmd
}

func mcpRun(ctx context.Context, ios iostreams, g *globalOptions, toolList string) error {
	hs, err := workspace.OpenHosts(ctx, g.host, workspace.Session, nil, g.warn)
	if err != nil {
		return err
	}
	defer hs.Close()
	defs, err := hs.Definitions()
	if err != nil {
		return usageErrorf("%v", err)
	}
	active, err := tools.Select(defs, splitList(toolList))
	if err != nil {
		return usageErrorf("--tools: %v", err)
	}
	server := mcp.NewServer(&mcp.Implementation{Name: "pi-remote", Version: "dev"}, nil)
	// Only the tools of --tools are served, and only they may run.
	var names []string
	for _, d := range active {
		names = append(names, d.Name)
	}
	cfg := loop.Config{Tools: tools.WrapAll(defs), Active: names, MaxArgumentBytes: maxArgsInput}
	var seq atomic.Int64
	for _, d := range active {
		var schema map[string]any
		if err := json.Unmarshal(d.Parameters, &schema); err != nil {
			return fmt.Errorf("tool %s: schema: %w", d.Name, err)
		}
		server.AddTool(&mcp.Tool{Name: d.Name, Description: d.Description, InputSchema: schema},
			func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				args := req.Params.Arguments
				if len(args) == 0 {
					args = json.RawMessage("{}")
				}
				token := req.Params.GetProgressToken()
				var progress float64
				emit := func(e loop.Event) {
					u, ok := e.(loop.ToolExecutionUpdate)
					if !ok || token == nil {
						return
					}
					progress++
					req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{
						ProgressToken: token, Progress: progress, Message: termtext.LastLines(u.PartialResult.Content.Text(), liveLines),
					})
				}
				call := &loop.ToolCall{ID: fmt.Sprintf("mcp-%d", seq.Add(1)), Name: d.Name, Arguments: args}
				m := loop.ExecuteTool(ctx, cfg, call, emit)
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
				return res, nil
			})
	}
	// The server ends at the end of its input or at an interrupt. A
	// failure of its streams is the client connection's, never a usage
	// error.
	err = server.Run(ctx, &mcpStdio{in: ios.in, out: ios.out, maxLine: mcp.DefaultMaxLineLength})
	if err == nil || ctx.Err() != nil {
		return nil
	}
	return &exitError{code: exitConnection, err: fmt.Errorf("mcp: the connection to the client failed: %w", err)}
}
