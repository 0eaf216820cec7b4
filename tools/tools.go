// Package tools holds pi-remote's seven tools — read, bash, edit, write,
// grep, find, ls — as rich Definitions, and Wrap, which projects a
// definition onto the lean loop.Tool the agent loop runs.
//
// A program's own tool is made the same way (Define, with AdmitPath and
// Mutate for a tool that changes a file) and given to an agent through
// workspace.Options.Tools; docs/extending.md walks through it.
//
// Every tool acts through an env.ExecutionEnv, so it behaves the same on the
// local machine and on a remote host. Tools never import os, os/exec or a
// backend package. Their exact behaviour is specified in docs/tools.md; the
// tests in this package pin each rule.
package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/pi-remote/pi-remote/env"
	"github.com/pi-remote/pi-remote/loop"
)

// Definition is the product-side description of a tool: everything the
// loop needs (see loop.Tool for the fields they share), plus what the
// product adds around it — the tool's lines in the system prompt, whether
// it changes its host (for the permission gate), and how a terminal shows
// its calls and results. The loop, the system prompt and the renderers
// take a definition as it is: a tool of a program's own (see Define)
// needs no change anywhere else.
type Definition struct {
	// Name is what the model calls the tool by; Label is how a person
	// sees it (Define sets it to Name when empty).
	Name  string
	Label string
	// Description tells the model what the tool does.
	Description string
	// PromptSnippet is the tool's one-line entry in the system prompt's
	// tool list (the description's first sentence when empty).
	PromptSnippet string
	// PromptGuidelines are added to the system prompt while the tool is
	// active.
	PromptGuidelines []string
	// Parameters is the JSON Schema of the arguments object (Define
	// reflects it from the input struct).
	Parameters json.RawMessage
	// Strict asks the provider for constrained sampling where it has it.
	Strict bool
	// ExecutionMode loop.Sequential runs every batch holding this tool one
	// call at a time; empty is parallel.
	ExecutionMode loop.ExecutionMode
	// ReadOnly says that the tool changes nothing on its host (read, grep,
	// find and ls). The permission gate then runs it where a host is
	// read-only or asks before changes. The zero value is the safe one: a
	// tool that does not say so is taken to change its host, refused on a
	// read-only host and asked about on an asking one, like write and edit.
	ReadOnly bool

	// PrepareArguments, Validate, Admit and Execute are the loop's stages
	// (loop.Tool); Define fills Validate and Execute from a typed input
	// struct, and AdmitPath is the Admit of a tool that changes a file.
	PrepareArguments func(args json.RawMessage) (json.RawMessage, error)
	Validate         func(args json.RawMessage) (json.RawMessage, error)
	Admit            func(ctx context.Context, args json.RawMessage) (any, func(), error)
	Execute          func(ctx context.Context, callID string, args json.RawMessage, onUpdate func(loop.Result)) (loop.Result, error)

	// RenderCall and RenderResult show the call and its result in a
	// terminal (the print mode's lines, the terminal UI's tool box). Nil
	// means a generic rendering: the name and the arguments' JSON; the
	// result's text folded to FoldLines lines. RenderCall's output has its
	// terminal controls shown as text (the arguments are the model's).
	// RenderResult gets the result with its Content so cleaned, and its
	// output may be styled with th; text it takes from Details must go
	// through Printable.
	RenderCall   func(args json.RawMessage) string
	RenderResult func(res loop.Result, th Theme) string
}

// Wrap projects a definition onto the lean tool the loop runs, dropping the
// prompt metadata and renderers.
func Wrap(d Definition) loop.Tool {
	return loop.Tool{
		Name:             d.Name,
		Label:            d.Label,
		Description:      d.Description,
		Parameters:       d.Parameters,
		Strict:           d.Strict,
		ExecutionMode:    d.ExecutionMode,
		PrepareArguments: d.PrepareArguments,
		Validate:         d.Validate,
		Admit:            d.Admit,
		Execute:          d.Execute,
	}
}

// FromTool makes a minimal definition for a bare loop tool, so registries
// can hold definitions only.
func FromTool(t loop.Tool) Definition {
	return Definition{
		Name:             t.Name,
		Label:            t.Label,
		Description:      t.Description,
		Parameters:       t.Parameters,
		Strict:           t.Strict,
		ExecutionMode:    t.ExecutionMode,
		PrepareArguments: t.PrepareArguments,
		Validate:         t.Validate,
		Admit:            t.Admit,
		Execute:          t.Execute,
	}
}

// WrapAll wraps definitions in order.
func WrapAll(defs []Definition) []loop.Tool {
	out := make([]loop.Tool, len(defs))
	for i, d := range defs {
		out[i] = Wrap(d)
	}
	return out
}

// Names of the built-in tools, and the default and read-only active sets.
var (
	AllNames      = []string{"read", "bash", "edit", "write", "grep", "find", "ls"}
	DefaultActive = []string{"read", "bash", "edit", "write"}
	ReadOnly      = []string{"read", "grep", "find", "ls"}
)

// Options tune the tools.
type Options struct {
	// BashTimeout is the default bash timeout (120 s when zero).
	BashTimeout time.Duration
	// MaxBashTimeout bounds the timeout a call may ask for (2 h when zero).
	MaxBashTimeout time.Duration
}

// Definitions returns the seven tools acting on e, in AllNames order.
func Definitions(e *env.ExecutionEnv, opts Options) []Definition {
	if opts.BashTimeout <= 0 {
		opts.BashTimeout = 120 * time.Second
	}
	if opts.MaxBashTimeout <= 0 {
		opts.MaxBashTimeout = 2 * time.Hour
	}
	return []Definition{
		readTool(e),
		bashTool(e, opts),
		editTool(e),
		writeTool(e),
		grepTool(e),
		findTool(e),
		lsTool(e),
	}
}

// Select returns the definitions named, in the order given, or an error
// naming an unknown one.
func Select(defs []Definition, names []string) ([]Definition, error) {
	var out []Definition
	for _, n := range names {
		i := slices.IndexFunc(defs, func(d Definition) bool { return d.Name == n })
		if i < 0 {
			var known []string
			for _, d := range defs {
				known = append(known, d.Name)
			}
			return nil, fmt.Errorf("unknown tool %q (known: %s)", n, strings.Join(known, ", "))
		}
		out = append(out, defs[i])
	}
	return out, nil
}

// SystemPrompt assembles the tool section of a system prompt from the
// active tools' snippets and guidelines only.
func SystemPrompt(active []Definition) string {
	var b strings.Builder
	b.WriteString("Available tools:\n")
	for _, d := range active {
		snippet := d.PromptSnippet
		if snippet == "" {
			snippet = firstSentence(d.Description)
		}
		fmt.Fprintf(&b, "- %s: %s\n", d.Name, snippet)
	}
	var guidelines []string
	for _, d := range active {
		for _, g := range d.PromptGuidelines {
			if !slices.Contains(guidelines, g) {
				guidelines = append(guidelines, g)
			}
		}
	}
	if len(guidelines) > 0 {
		b.WriteString("\nGuidelines:\n")
		for _, g := range guidelines {
			fmt.Fprintf(&b, "- %s\n", g)
		}
	}
	return b.String()
}

func firstSentence(s string) string {
	if i := strings.Index(s, ". "); i >= 0 {
		return s[:i+1]
	}
	return s
}

// Define completes a definition from a typed input struct In and the
// function that runs the tool, the way every built-in tool is made:
//
//   - Parameters is In's JSON Schema, reflected once per type by
//     github.com/invopop/jsonschema: fields named by their json tags,
//     described by jsonschema_description tags, constrained by jsonschema
//     tags ("minItems=1"); a field without omitempty is required, and
//     unknown fields are refused.
//   - Validate checks the model's arguments against it, after turning
//     strings into the numbers and booleans the schema asks for ("5" to 5),
//     and names each bad field in the error the model reads.
//   - Execute decodes the arguments into In, waits, when the call was
//     admitted behind an env.Barrier, for the mutations before it, and
//     calls run; onUpdate is never nil there.
//   - Label is the name when empty.
//
// run reports a failure the model can act on as a result with IsError
// (loop.ErrorResult) and keeps a Go error for an infrastructure failure;
// either way the loop goes on. d's other fields are kept as they are.
func Define[In any](d Definition, run func(ctx context.Context, in In, onUpdate func(loop.Result)) (loop.Result, error)) Definition {
	d.Parameters = schemaFor[In]()
	v := newArgValidator(d.Parameters)
	d.Validate = v.validate
	d.Execute = func(ctx context.Context, _ string, args json.RawMessage, onUpdate func(loop.Result)) (loop.Result, error) {
		in, err := decode[In](args)
		if err != nil {
			return loop.ErrorResult(err.Error()), nil
		}
		if onUpdate == nil {
			onUpdate = func(loop.Result) {}
		}
		if err := awaitBarrier(ctx); err != nil {
			return loop.ErrorResult("Tool call aborted."), nil
		}
		return run(ctx, in, onUpdate)
	}
	if d.Label == "" {
		d.Label = d.Name
	}
	return d
}

// errorResult is an error result with details, for failures the model can
// act on.
func errorResult(format string, a ...any) (loop.Result, error) {
	return loop.ErrorResult(fmt.Sprintf(format, a...)), nil
}
