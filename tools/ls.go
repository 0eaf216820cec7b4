package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/pi-remote/pi-remote/env"
	"github.com/pi-remote/pi-remote/loop"
	"github.com/pi-remote/pi-remote/ops"
)

type lsInput struct {
	Path  string `json:"path,omitempty" jsonschema_description:"Directory to list (default: the working directory)"`
	Limit int    `json:"limit,omitempty" jsonschema:"minimum=1" jsonschema_description:"Maximum number of entries to return (default: 500)"`
}

// LsDetails are the ls tool's details.
type LsDetails struct {
	Path         string `json:"path"`
	Entries      int    `json:"entries"`
	Total        int    `json:"total"`
	LimitReached bool   `json:"limitReached,omitempty"`
	Truncated    bool   `json:"truncated,omitempty"`
}

const defaultLsLimit = 500

func lsTool(e *env.ExecutionEnv) Definition {
	return Define(Definition{
		Name: "ls",
		Description: fmt.Sprintf("List a directory. Entries are sorted case-insensitively, dotfiles included; directories end with '/'. "+
			"Returns at most %d entries (change with limit) or %dKB."+batchOrder, defaultLsLimit, MaxBytes/1024),
		PromptSnippet: "List directory contents",
		ReadOnly:      true,
		Admit:         AdmitUnder(e),
		RenderCall:    func(args json.RawMessage) string { return renderPathCall("ls", args) },
	}, func(ctx context.Context, in lsInput, _ func(loop.Result)) (loop.Result, error) {
		p := in.Path
		if p == "" {
			p = "."
		}
		abs, err := e.Resolve(ctx, p)
		if err != nil {
			return errorResult("Invalid path %q: %v", p, err)
		}
		entries, err := e.ReadDir(ctx, abs)
		if err != nil {
			if isNotDir(err) {
				return errorResult("Not a directory: %s. Use read for files.", p)
			}
			return fileError(p, err)
		}
		limit := in.Limit
		if limit == 0 {
			limit = defaultLsLimit
		}
		slices.SortFunc(entries, func(a, b ops.DirEntry) int {
			if c := strings.Compare(strings.ToLower(a.Name), strings.ToLower(b.Name)); c != 0 {
				return c
			}
			return strings.Compare(a.Name, b.Name)
		})
		details := LsDetails{Path: abs, Total: len(entries)}
		if len(entries) == 0 {
			return loop.Result{Content: loop.ContentList{&loop.Text{Text: "(empty directory)"}}, Details: details}, nil
		}
		shown := entries
		if len(shown) > limit {
			shown = shown[:limit]
			details.LimitReached = true
		}
		var b strings.Builder
		for _, en := range shown {
			b.WriteString(en.Name)
			if en.IsDir {
				b.WriteByte('/')
			}
			b.WriteByte('\n')
		}
		t := truncateHead(b.String(), len(shown)+1, MaxBytes)
		details.Entries = t.OutputLines
		details.Truncated = t.Truncated
		var notices []string
		if details.LimitReached {
			notices = append(notices, fmt.Sprintf("%d of %d entries shown (limit %d). Use limit=%d for more.", len(shown), len(entries), limit, min(len(entries), limit*2)))
		}
		if t.Truncated {
			notices = append(notices, fmt.Sprintf("Output cut at the %s limit after %d entries; list a subdirectory or use find with a pattern.", formatSize(MaxBytes), t.OutputLines))
		}
		return loop.Result{Content: loop.ContentList{&loop.Text{Text: listText(t, notices...)}}, Details: details}, nil
	})
}

func isNotDir(err error) bool {
	return errors.Is(err, ops.ErrNotDir)
}
