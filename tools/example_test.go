package tools_test

import (
	"context"
	"fmt"
	"os"
	"strings"

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

// A tool of a program's own is a typed input struct and a function: Define
// reflects the schema from the struct (its json and jsonschema tags),
// validates the model's arguments against it and decodes them. This one
// only reads, so it says so (ReadOnly: the permission gate runs it on a
// read-only host) and is admitted like read (AdmitUnder: it sees the
// writes before it in its batch). workspace.Options.Tools adds such a
// tool to every host of an agent's workspace.
func ExampleDefine() {
	dir, _ := os.MkdirTemp("", "tools-define")
	defer os.RemoveAll(dir)
	e := env.New(local.New(), env.Options{Cwd: dir, Home: dir})

	type countInput struct {
		Path string `json:"path" jsonschema_description:"File whose lines to count"`
	}
	count := tools.Define(tools.Definition{
		Name:          "count_lines",
		Description:   "Count the lines of a file.",
		PromptSnippet: "Count a file's lines",
		ReadOnly:      true,
		Admit:         tools.AdmitUnder(e),
	}, func(ctx context.Context, in countInput, _ func(loop.Result)) (loop.Result, error) {
		abs, err := e.Resolve(ctx, in.Path)
		if err != nil {
			return loop.ErrorResult(err.Error()), nil
		}
		b, err := e.ReadFile(ctx, abs)
		if err != nil {
			return loop.ErrorResult(fmt.Sprintf("Cannot read %s: %v", in.Path, err)), nil
		}
		return loop.TextResult(fmt.Sprintf("%s has %d lines", in.Path, strings.Count(string(b), "\n"))), nil
	})
	defs := append(tools.Definitions(e, tools.Options{}), count)
	cfg := loop.Config{Tools: tools.WrapAll(defs)}
	ctx := context.Background()

	fmt.Println(string(count.Parameters))
	for _, call := range []loop.ToolCall{
		{ID: "1", Name: "write", Arguments: []byte(`{"path":"a.txt","content":"one\ntwo\n"}`)},
		{ID: "2", Name: "count_lines", Arguments: []byte(`{"path":"a.txt"}`)},
		{ID: "3", Name: "count_lines", Arguments: []byte(`{"file":"a.txt"}`)},
	} {
		res := loop.ExecuteTool(ctx, cfg, &call, nil)
		fmt.Printf("%s error=%v: %s\n", call.Name, res.IsError, res.Content[0].(*loop.Text).Text)
	}
	// Output:
	// {"properties":{"path":{"type":"string","description":"File whose lines to count"}},"additionalProperties":false,"type":"object","required":["path"]}
	// write error=false: Successfully wrote 8 bytes to a.txt
	// count_lines error=false: a.txt has 2 lines
	// count_lines error=true: Invalid arguments for count_lines: missing property 'path'; additional properties 'file' not allowed
}
