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

// admitPath reserves the file's place in the mutation queue during the
// loop's in-order prepare stage.
func admitPath(e *env.ExecutionEnv) func(ctx context.Context, args json.RawMessage) (any, func(), error) {
	return func(ctx context.Context, args json.RawMessage) (any, func(), error) {
		var in struct {
			Path string `json:"path"`
		}
		if err := json.Unmarshal(args, &in); err != nil {
			return nil, nil, err
		}
		r, err := e.Reserve(ctx, in.Path)
		if err != nil {
			return nil, nil, fmt.Errorf("invalid path %q: %w", in.Path, err)
		}
		return r, r.Release, nil
	}
}

// mutate runs fn in the file's mutation queue, using the place reserved by
// admitPath when the call came through the loop. fn's write passes on the
// canonical path it gets (ops.WriteOptions.Canonical).
func mutate(ctx context.Context, e *env.ExecutionEnv, p string, fn func(canonical string) error) error {
	if r, ok := loop.AdmissionFrom(ctx).(*env.Reservation); ok {
		return r.Do(ctx, fn)
	}
	return e.Mutate(ctx, p, fn)
}

func writeTool(e *env.ExecutionEnv) Definition {
	return define(Definition{
		Name: "write",
		Description: "Write content to a file, creating it (and its parent directories) or replacing it entirely. " +
			"The write is atomic and keeps the mode of an existing file." + batchOrder,
		PromptSnippet:    "Create or overwrite files",
		PromptGuidelines: []string{"Use write only for new files or complete rewrites; use edit for changes to existing files."},
		Admit:            admitPath(e),
		RenderCall:       func(args json.RawMessage) string { return renderPathCall("write", args) },
	}, func(ctx context.Context, in writeInput, _ func(loop.Result)) (loop.Result, error) {
		abs, err := e.Resolve(ctx, in.Path)
		if err != nil {
			return errorResult("Invalid path %q: %v", in.Path, err)
		}
		err = mutate(ctx, e, in.Path, func(canonical string) error {
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
