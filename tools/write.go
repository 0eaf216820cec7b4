package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/pi-remote/pi-remote/env"
	"github.com/pi-remote/pi-remote/loop"
	"github.com/pi-remote/pi-remote/ops"
)

type writeInput struct {
	Path    string `json:"path" jsonschema_description:"Path to the file to write (relative to the working directory, or absolute)"`
	Content string `json:"content" jsonschema_description:"Content to write to the file"`
}

// WriteDetails are the write tool's details.
type WriteDetails struct {
	Path  string `json:"path"`
	Bytes int    `json:"bytes"`
}

func writeTool(e *env.ExecutionEnv) Definition {
	return Define(Definition{
		Name: "write",
		Description: "Write content to a file, creating it (and its parent directories) or replacing it entirely. " +
			"The write is atomic and keeps the mode of an existing file." + batchOrder,
		PromptSnippet:    "Create or overwrite files",
		PromptGuidelines: []string{"Use write only for new files or complete rewrites; use edit for changes to existing files."},
		Admit:            AdmitPath(e),
		RenderCall:       func(args json.RawMessage) string { return renderPathCall("write", args) },
	}, func(ctx context.Context, in writeInput, _ func(loop.Result)) (loop.Result, error) {
		abs, err := e.Resolve(ctx, in.Path)
		if err != nil {
			return errorResult("Invalid path %q: %v", in.Path, err)
		}
		err = Mutate(ctx, e, in.Path, func(canonical string) error {
			return e.WriteFile(ctx, abs, strings.NewReader(in.Content), ops.WriteOptions{CreateParents: true, Canonical: canonical})
		})
		if err != nil {
			return fileError(in.Path, err)
		}
		return loop.Result{
			Content: loop.ContentList{&loop.Text{Text: fmt.Sprintf("Successfully wrote %d bytes to %s", len(in.Content), in.Path)}},
			Details: WriteDetails{Path: abs, Bytes: len(in.Content)},
		}, nil
	})
}
