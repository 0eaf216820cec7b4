package mcpclient_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/pi-remote/pi-remote/mcpclient"
)

// The test binary is also a tiny MCP server, written with the Go SDK,
// when PI_REMOTE_TEST_MCP_SERVER names a directory: it records there
// what it sees (a call cancelled, the pid of a child it started), so the
// tests can tell what reached the server.
const serverVariable = "PI_REMOTE_TEST_MCP_SERVER"

// With PI_REMOTE_TEST_MCP_PARENT naming a directory, the test binary is
// a pi-remote that starts the test server (one that stays when its input
// ends), writes its pid there and waits to be killed.
const parentVariable = "PI_REMOTE_TEST_MCP_PARENT"

func TestMain(m *testing.M) {
	if dir := os.Getenv(serverVariable); dir != "" {
		serve(dir)
		return
	}
	if dir := os.Getenv(parentVariable); dir != "" {
		parent(dir)
		return
	}
	os.Exit(m.Run())
}

func parent(dir string) {
	cfg := mcpclient.Config{Name: "t", Command: os.Args[0], Env: map[string]string{serverVariable: dir, parentVariable: "", lingerVariable: "1"}}
	m := mcpclient.Start(context.Background(), []mcpclient.Config{cfg}, mcpclient.Options{})
	for _, tl := range m.Tools() {
		if tl.Remote == "pid" {
			res, _ := tl.Def.Execute(context.Background(), "1", json.RawMessage(`{}`), nil)
			record(dir, "server", []byte(res.Content.Text()))
		}
	}
	select {}
}

type textIn struct {
	Text string `json:"text" jsonschema:"what to echo"`
}

type noIn struct{}

type floodIn struct {
	MB int `json:"mb"`
}

func serve(dir string) {
	s := mcp.NewServer(&mcp.Implementation{Name: "testserver", Version: "1"}, nil)
	text := func(t string) *mcp.CallToolResult {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: t}}}
	}
	mcp.AddTool(s, &mcp.Tool{Name: "echo", Description: "Echo the text back.", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(_ context.Context, _ *mcp.CallToolRequest, in textIn) (*mcp.CallToolResult, any, error) {
			return text("echo: " + in.Text), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "fail", Description: "Fail as a tool does."},
		func(_ context.Context, _ *mcp.CallToolRequest, _ noIn) (*mcp.CallToolResult, any, error) {
			r := text("the thing is broken")
			r.IsError = true
			return r, nil, nil
		})
	// block waits until its call is cancelled, and says so in a file.
	mcp.AddTool(s, &mcp.Tool{Name: "block", Description: "Wait until cancelled."},
		func(ctx context.Context, req *mcp.CallToolRequest, _ noIn) (*mcp.CallToolResult, any, error) {
			record(dir, "blocking", nil)
			<-ctx.Done()
			record(dir, "cancelled", []byte(fmt.Sprint(ctx.Err())))
			return text("cancelled"), nil, nil
		})
	// steps sends progress, then waits for a file before it answers.
	mcp.AddTool(s, &mcp.Tool{Name: "steps", Description: "Report progress."},
		func(ctx context.Context, req *mcp.CallToolRequest, _ noIn) (*mcp.CallToolResult, any, error) {
			for i := 1; i <= 3; i++ {
				req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: req.Params.GetProgressToken(), Progress: float64(i), Total: 3, Message: "step " + strconv.Itoa(i)})
			}
			for {
				if _, err := os.Stat(filepath.Join(dir, "go-on")); err == nil {
					return text("done"), nil, nil
				}
				select {
				case <-ctx.Done():
					return text("cancelled"), nil, nil
				case <-time.After(20 * time.Millisecond):
				}
			}
		})
	// crash dies in the middle of its call, saying why on stderr.
	mcp.AddTool(s, &mcp.Tool{Name: "crash", Description: "Die."},
		func(context.Context, *mcp.CallToolRequest, noIn) (*mcp.CallToolResult, any, error) {
			fmt.Fprintln(os.Stderr, "testserver: out of cheese")
			os.Exit(3)
			return nil, nil, nil
		})
	// spawn starts a long-lived child and records its pid.
	mcp.AddTool(s, &mcp.Tool{Name: "spawn", Description: "Start a child."},
		func(context.Context, *mcp.CallToolRequest, noIn) (*mcp.CallToolResult, any, error) {
			c := exec.Command("sleep", "1000")
			if err := c.Start(); err != nil {
				return nil, nil, err
			}
			record(dir, "child", []byte(strconv.Itoa(c.Process.Pid)))
			return text(strconv.Itoa(c.Process.Pid)), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "image", Description: "An image."},
		func(context.Context, *mcp.CallToolRequest, noIn) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{
				&mcp.ImageContent{Data: []byte("\x89PNG"), MIMEType: "image/png"},
				&mcp.ResourceLink{URI: "file:///tmp/x.txt", Name: "x.txt"},
				&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: "mem://a", Text: "embedded words"}},
			}}, nil, nil
		})
	// flood answers with mb megabytes of text.
	mcp.AddTool(s, &mcp.Tool{Name: "flood", Description: "A long answer."},
		func(_ context.Context, _ *mcp.CallToolRequest, in floodIn) (*mcp.CallToolResult, any, error) {
			return text(strings.Repeat("z", in.MB<<20)), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "pid", Description: "The server's pid."},
		func(context.Context, *mcp.CallToolRequest, noIn) (*mcp.CallToolResult, any, error) {
			return text(strconv.Itoa(os.Getpid())), nil, nil
		})
	if err := s.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		fmt.Fprintln(os.Stderr, "testserver:", err)
		os.Exit(1)
	}
	if os.Getenv(lingerVariable) != "" {
		select {} // a server that does not end with its input
	}
}

// lingerVariable makes the test server stay when its input ends.
const lingerVariable = "PI_REMOTE_TEST_MCP_LINGER"

// record writes a file whole (a reader never sees it half written).
func record(dir, name string, content []byte) {
	tmp := filepath.Join(dir, name+".tmp")
	if os.WriteFile(tmp, content, 0o644) == nil {
		os.Rename(tmp, filepath.Join(dir, name))
	}
}
