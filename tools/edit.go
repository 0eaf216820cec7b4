package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/pi-remote/pi-remote/env"
	"github.com/pi-remote/pi-remote/loop"
	"github.com/pi-remote/pi-remote/ops"
)

type editItem struct {
	OldText string `json:"oldText" jsonschema_description:"Exact text to replace; must match one region of the original file"`
	NewText string `json:"newText" jsonschema_description:"Replacement text"`
}

type editInput struct {
	Path  string     `json:"path" jsonschema_description:"Path to the file to edit (relative to the working directory, or absolute)"`
	Edits []editItem `json:"edits" jsonschema:"minItems=1" jsonschema_description:"Replacements, each matched against the original file; they must not overlap and are applied together"`
}

// EditDetails are the edit tool's details.
type EditDetails struct {
	Path             string `json:"path"`
	Replacements     int    `json:"replacements"`
	Diff             string `json:"diff"`
	FirstChangedLine int    `json:"firstChangedLine"`
}

// conflictRetries is how often edit re-reads and re-applies when another
// process changed the file between its read and its write.
const conflictRetries = 3

const utf8BOM = "\ufeff"

// prepareEditArgs folds the legacy {oldText, newText} form into edits and
// parses edits sent as a JSON string.
func prepareEditArgs(args json.RawMessage) (json.RawMessage, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(args, &m); err != nil {
		return nil, fmt.Errorf("arguments must be a JSON object")
	}
	if e, ok := m["edits"]; ok && len(e) > 0 && e[0] == '"' {
		var s string
		if err := json.Unmarshal(e, &s); err != nil {
			return nil, err
		}
		if !json.Valid([]byte(s)) {
			return nil, fmt.Errorf(`field "edits": a string that is not valid JSON; send an array of {oldText, newText}`)
		}
		m["edits"] = json.RawMessage(s)
	}
	oldText, hasOld := m["oldText"]
	newText, hasNew := m["newText"]
	if hasOld || hasNew {
		if _, ok := m["edits"]; ok {
			return nil, fmt.Errorf("give either edits or oldText/newText, not both")
		}
		item := map[string]json.RawMessage{}
		if hasOld {
			item["oldText"] = oldText
		}
		if hasNew {
			item["newText"] = newText
		}
		b, err := json.Marshal([]map[string]json.RawMessage{item})
		if err != nil {
			return nil, err
		}
		m["edits"] = b
		delete(m, "oldText")
		delete(m, "newText")
	}
	return json.Marshal(m)
}

func editTool(e *env.ExecutionEnv) Definition {
	return Define(Definition{
		Name: "edit",
		Description: "Edit a file by replacing exact text. Each edits[i].oldText must match exactly one region of the original file " +
			"(whitespace included); all edits are matched against the original and applied together, so they must not overlap. " +
			"Line endings and a UTF-8 BOM are kept. For several changes to one file, send one edit call with several edits." + batchOrder,
		PromptSnippet: "Make precise replacements in files",
		PromptGuidelines: []string{
			"Read a file before editing it; copy oldText exactly from what read returned.",
			"Keep oldText as short as possible while still unique.",
		},
		PrepareArguments: prepareEditArgs,
		Admit:            AdmitPath(e),
		RenderCall:       func(args json.RawMessage) string { return renderPathCall("edit", args) },
		RenderResult: func(res loop.Result, th Theme) string {
			if d, ok := res.Details.(EditDetails); ok && d.Diff != "" {
				return res.Content.Text() + "\n" + colorDiff(d.Diff, th)
			}
			return res.Content.Text()
		},
	}, func(ctx context.Context, in editInput, _ func(loop.Result)) (loop.Result, error) {
		return runEdit(ctx, e, in)
	})
}

func runEdit(ctx context.Context, e *env.ExecutionEnv, in editInput) (loop.Result, error) {
	abs, err := e.Resolve(ctx, in.Path)
	if err != nil {
		return errorResult("Invalid path %q: %v", in.Path, err)
	}
	if len(in.Edits) == 0 {
		return errorResult("edits is empty: give at least one {oldText, newText}.")
	}
	var details EditDetails
	var mErr *matchError
	err = Mutate(ctx, e, in.Path, func(canonical string) error {
		for attempt := 0; ; attempt++ {
			original, err := e.ReadFile(ctx, abs)
			if err != nil {
				return err
			}
			updated, d, err := applyEdits(string(original), in.Edits, in.Path)
			if err != nil {
				if attempt > 0 {
					return &matchError{fmt.Sprintf("%s changed on disk while it was being edited, and the edit no longer applies: %v", in.Path, err)}
				}
				return err
			}
			err = e.WriteFile(ctx, abs, strings.NewReader(updated), ops.WriteOptions{
				Guard:     &ops.Guard{Content: original},
				Canonical: canonical,
			})
			if errors.Is(err, ops.ErrModified) && attempt < conflictRetries {
				continue
			}
			if errors.Is(err, ops.ErrModified) {
				return &matchError{fmt.Sprintf("%s keeps changing on disk (another process is writing it); the edit was not applied. Read it again and retry.", in.Path)}
			}
			if err != nil {
				return err
			}
			d.Path = abs
			details = d
			return nil
		}
	})
	if errors.As(err, &mErr) {
		return errorResult("%s", mErr.msg)
	}
	if err != nil {
		return fileError(in.Path, err)
	}
	noun := "block"
	if details.Replacements != 1 {
		noun = "blocks"
	}
	return loop.Result{
		Content: loop.ContentList{&loop.Text{Text: fmt.Sprintf("Successfully replaced %d %s in %s.", details.Replacements, noun, in.Path)}},
		Details: details,
	}, nil
}

// applyEdits applies edits to a file's content, keeping its BOM and line
// endings, and describes the change.
func applyEdits(content string, edits []editItem, displayPath string) (string, EditDetails, error) {
	bom := ""
	if strings.HasPrefix(content, utf8BOM) {
		bom, content = utf8BOM, content[len(utf8BOM):]
	}
	regions, err := findRegions(content, edits, detectEOL(content), displayPath)
	if err != nil {
		return "", EditDetails{}, err
	}
	updated := applyRegions(content, regions)
	if updated == content {
		return "", EditDetails{}, &matchError{fmt.Sprintf("The edits leave %s unchanged. Give a replacement that differs.", displayPath)}
	}
	diff, first := lineDiff(content, updated, regions)
	return bom + updated, EditDetails{Replacements: len(regions), Diff: diff, FirstChangedLine: first}, nil
}
