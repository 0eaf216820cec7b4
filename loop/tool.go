package loop

import (
	"context"
	"encoding/json"
)

// ExecutionMode says whether a tool may run alongside others in a batch.
type ExecutionMode string

const (
	Parallel   ExecutionMode = "parallel"
	Sequential ExecutionMode = "sequential"
)

// Tool is the lean tool the loop knows: enough to describe it to a model,
// prepare and validate its arguments, and run it. Product concerns (prompt
// snippets, rendering) live in package tools, which projects its rich
// definitions onto this type.
type Tool struct {
	Name        string
	Label       string
	Description string
	// Parameters is the JSON Schema of the arguments object.
	Parameters json.RawMessage
	// Strict asks the provider for constrained sampling (strict schema
	// adherence) where it supports it.
	Strict bool
	// ExecutionMode Sequential makes every batch containing this tool run
	// sequentially. Empty means Parallel.
	ExecutionMode ExecutionMode

	// PrepareArguments, optional, rewrites raw arguments before validation
	// (legacy shapes, stringified JSON). It must not have side effects.
	PrepareArguments func(args json.RawMessage) (json.RawMessage, error)

	// Validate, optional, checks (and may coerce) prepared arguments against
	// Parameters. An error becomes an error result naming the problem.
	Validate func(args json.RawMessage) (json.RawMessage, error)

	// Admit, optional, runs during the in-order prepare stage, after
	// validation and BeforeToolCall. Resources it claims (a place in a
	// file's mutation queue, or one after the mutations before it) are
	// therefore claimed in call order even though execution is parallel. Its value reaches Execute through the context
	// (AdmissionFrom). release, if non-nil, is called exactly once, after
	// Execute returns or when the call never executes.
	Admit func(ctx context.Context, args json.RawMessage) (admission any, release func(), err error)

	// Execute runs the tool. A result with IsError reports a failure the
	// model can act on; a Go error reports an infrastructure failure and also
	// becomes an error result. onUpdate streams partial results; calls after
	// Execute returns are dropped.
	Execute func(ctx context.Context, callID string, args json.RawMessage, onUpdate func(Result)) (Result, error)
}

// Result is what a tool execution produced.
type Result struct {
	Content ContentList `json:"content"`
	// Details are structured data for UIs and logs, not sent to the model.
	Details any    `json:"details,omitempty"`
	Usage   *Usage `json:"usage,omitempty"`
	// AddedToolNames are available but inactive tools that become active
	// from the next turn.
	AddedToolNames []string `json:"addedToolNames,omitempty"`
	// Terminate hints that the run may stop after this batch; the batch
	// stops the run only when every result in it says so.
	Terminate bool `json:"terminate,omitempty"`
	IsError   bool `json:"isError"`
}

// TextResult is a result holding one text block.
func TextResult(text string) Result {
	return Result{Content: ContentList{&Text{Text: text}}}
}

// ErrorResult is an error result holding one text block.
func ErrorResult(text string) Result {
	return Result{Content: ContentList{&Text{Text: text}}, IsError: true}
}

type admissionKey struct{}

type callIDKey struct{}

// CallIDFrom returns the id of the tool call whose Admit (or Execute) runs
// with ctx, or "": what a tool's admission shows a person who is asked
// about the call, so the person's front end can match it to the call's
// events.
func CallIDFrom(ctx context.Context) string {
	id, _ := ctx.Value(callIDKey{}).(string)
	return id
}

// AdmissionFrom returns the value the tool's Admit returned for this call,
// or nil.
func AdmissionFrom(ctx context.Context) any {
	return ctx.Value(admissionKey{})
}
