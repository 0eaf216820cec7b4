package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strings"

	"github.com/pi-remote/pi-remote/env"
	"github.com/pi-remote/pi-remote/loop"
	"github.com/pi-remote/pi-remote/ops"
	"github.com/pi-remote/pi-remote/tools"
)

// changelogInput is the changelog tool's arguments; its JSON Schema is
// reflected from the tags (tools.Define).
type changelogInput struct {
	Path  string `json:"path" jsonschema_description:"Changelog file (relative to the working directory, or absolute); created when missing"`
	Entry string `json:"entry" jsonschema:"minLength=1" jsonschema_description:"One line saying what changed, without the leading dash"`
}

// ChangelogDetails are the changelog tool's details: what its renderer
// shows, and what a log of the session keeps.
type ChangelogDetails struct {
	Path string `json:"path"` // absolute, on the host
	Line int    `json:"line"` // 1-based line of the new entry
	Text string `json:"text"` // the line added
}

// unreleased is the heading the tool adds entries under.
const unreleased = "## Unreleased"

// changelogTools are the program's own tools for one host: called for each
// host of the workspace with its environment, so that a call acts on the
// host it names.
func changelogTools(e *env.ExecutionEnv) []tools.Definition {
	return []tools.Definition{changelogTool(e)}
}

// changelogTool adds an entry to a changelog file on e's host. It reads
// and writes the file through e (the host's operations, local or over
// SSH), and is queued on the file like edit: its place in the file's
// mutation queue is reserved in call order (tools.AdmitPath) and held for
// the whole read-modify-write (tools.Mutate), so concurrent calls on one
// file neither interleave nor lose an entry, and apply in call order.
func changelogTool(e *env.ExecutionEnv) tools.Definition {
	return tools.Define(tools.Definition{
		Name:  "changelog",
		Label: "Changelog",
		Description: "Add an entry to a changelog file (Keep a Changelog style): a \"- ENTRY\" line at the end of its " +
			"\"## Unreleased\" section, which is added at the top when missing. Several calls on one file apply in call order.",
		PromptSnippet:    "Record a change in a changelog file",
		PromptGuidelines: []string{"After a change users will notice, record it with changelog in CHANGELOG.md."},
		// ReadOnly is left false: the tool changes a file, so the
		// permission gate refuses it on a read-only host and asks before
		// it on an asking one.
		Admit:      tools.AdmitPath(e),
		RenderCall: renderChangelogCall,
		RenderResult: func(res loop.Result, th tools.Theme) string {
			d, ok := res.Details.(ChangelogDetails)
			if !ok || res.IsError {
				return res.Content.Text()
			}
			// (The entry is the model's text: its controls are shown as
			// text, not sent to the terminal.)
			return th.Green("+ "+tools.Printable(d.Text)) + th.Dim(fmt.Sprintf("  (%s:%d)", tools.Printable(d.Path), d.Line))
		},
	}, func(ctx context.Context, in changelogInput, _ func(loop.Result)) (loop.Result, error) {
		return addEntry(ctx, e, in)
	})
}

// renderChangelogCall shows a call as "changelog PATH: ENTRY".
func renderChangelogCall(args json.RawMessage) string {
	var in changelogInput
	if json.Unmarshal(args, &in) != nil {
		return "changelog"
	}
	return "changelog " + in.Path + ": " + in.Entry
}

func addEntry(ctx context.Context, e *env.ExecutionEnv, in changelogInput) (loop.Result, error) {
	entry := strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(in.Entry), "- "))
	if entry == "" || strings.ContainsAny(entry, "\r\n") {
		return loop.ErrorResult("entry must be one line of text."), nil
	}
	abs, err := e.Resolve(ctx, in.Path)
	if err != nil {
		return loop.ErrorResult(fmt.Sprintf("Invalid path %q: %v", in.Path, err)), nil
	}
	var details ChangelogDetails
	err = tools.Mutate(ctx, e, in.Path, func(canonical string) error {
		old, err := e.ReadFile(ctx, abs)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		updated, line := insertEntry(string(old), "- "+entry)
		details = ChangelogDetails{Path: abs, Line: line, Text: "- " + entry}
		// (The write is atomic; canonical makes it fail rather than
		// replace another file than the one queued on, should a symlink
		// on the way have changed.)
		return e.WriteFile(ctx, abs, strings.NewReader(updated), ops.WriteOptions{CreateParents: true, Canonical: canonical})
	})
	if err != nil {
		return loop.ErrorResult(fmt.Sprintf("Could not update %s: %v", in.Path, err)), nil
	}
	return loop.Result{
		Content: loop.ContentList{&loop.Text{Text: fmt.Sprintf("Added to %s, line %d: %s", in.Path, details.Line, details.Text)}},
		Details: details,
	}, nil
}

// insertEntry puts line at the end of content's Unreleased section (before
// the blank lines that end it). Without that section, it adds one before
// the first release's "## " heading, or at the end; it returns the new
// content and line's 1-based line number.
func insertEntry(content, line string) (string, int) {
	var lines []string
	if content != "" {
		lines = strings.Split(strings.TrimSuffix(content, "\n"), "\n")
	}
	start := slices.IndexFunc(lines, func(l string) bool { return strings.TrimSpace(l) == unreleased })
	if start < 0 {
		section := []string{unreleased, "", line}
		at := slices.IndexFunc(lines, func(l string) bool { return strings.HasPrefix(l, "## ") })
		switch {
		case at >= 0:
			section = append(section, "")
		case len(lines) > 0 && strings.TrimSpace(lines[len(lines)-1]) != "":
			at, section = len(lines), append([]string{""}, section...)
		default:
			at = len(lines)
		}
		lines = slices.Insert(lines, at, section...)
		return strings.Join(lines, "\n") + "\n", at + slices.Index(section, line) + 1
	}
	end := len(lines)
	for i := start + 1; i < len(lines); i++ {
		if strings.HasPrefix(lines[i], "#") {
			end = i
			break
		}
	}
	for end > start+1 && strings.TrimSpace(lines[end-1]) == "" {
		end--
	}
	if end == start+1 {
		// An empty section: a blank line after the heading first.
		lines = slices.Insert(lines, end, "")
		end++
	}
	lines = slices.Insert(lines, end, line)
	return strings.Join(lines, "\n") + "\n", end + 1
}
