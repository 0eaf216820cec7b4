package tools_test

import (
	"context"
	"fmt"
	"os"

	"github.com/pi-remote/pi-remote/env"
	"github.com/pi-remote/pi-remote/loop"
	"github.com/pi-remote/pi-remote/ops/local"
	"github.com/pi-remote/pi-remote/tools"
)

// The tools run through the same pipeline as in an agent run: arguments are
// prepared and validated, then executed on the environment.
func Example() {
	dir, _ := os.MkdirTemp("", "tools-example")
	defer os.RemoveAll(dir)
	e := env.New(local.New(), env.Options{Cwd: dir, Home: dir})
	cfg := loop.Config{Tools: tools.WrapAll(tools.Definitions(e, tools.Options{}))}
	ctx := context.Background()

	for _, call := range []loop.ToolCall{
		{ID: "1", Name: "write", Arguments: []byte(`{"path":"greet.txt","content":"hello world\n"}`)},
		{ID: "2", Name: "edit", Arguments: []byte(`{"path":"greet.txt","oldText":"world","newText":"there"}`)},
		{ID: "3", Name: "read", Arguments: []byte(`{"path":"greet.txt"}`)},
		{ID: "4", Name: "read", Arguments: []byte(`{"path":"greet.txt","offset":"x"}`)},
	} {
		res := loop.ExecuteTool(ctx, cfg, &call, nil)
		fmt.Printf("%s error=%v: %s\n", call.Name, res.IsError, res.Content[0].(*loop.Text).Text)
	}
	// Output:
	// write error=false: Successfully wrote 12 bytes to greet.txt
	// edit error=false: Successfully replaced 1 block in greet.txt.
	// read error=false: hello there
	//
	// read error=true: Invalid arguments for read: field "offset": got string, want integer
}
