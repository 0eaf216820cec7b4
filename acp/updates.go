package acp

import (
	"encoding/json"
	"fmt"
	"path"
	"path/filepath"
	"strings"

	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/pi-remote/pi-remote/agent"
	"github.com/pi-remote/pi-remote/internal/termtext"
	"github.com/pi-remote/pi-remote/loop"
)

// hostDirs says where a session's hosts work, so that a tool call's
// relative path can be shown as the absolute path on its host.
type hostDirs struct {
	defaultHost string
	cwd         map[string]string // by host name
	local       map[string]bool   // the host is this machine (its own path syntax)
}

// abs is p on host as an absolute path ("" stays "").
func (h hostDirs) abs(host, p string) string {
	if p == "" {
		return ""
	}
	if host == "" {
		host = h.defaultHost
	}
	cwd := h.cwd[host]
	if h.local[host] {
		if filepath.IsAbs(p) || cwd == "" {
			return filepath.Clean(p)
		}
		return filepath.Join(cwd, p)
	}
	if path.IsAbs(p) || cwd == "" {
		return path.Clean(p)
	}
	return path.Join(cwd, p)
}

// callArgs are the arguments of the seven tools that updates show.
type callArgs struct {
	Host    string          `json:"host"`
	Path    string          `json:"path"`
	Pattern string          `json:"pattern"`
	Command string          `json:"command"`
	Content *string         `json:"content"`
	Edits   json.RawMessage `json:"edits"`
	OldText *string         `json:"oldText"`
	NewText *string         `json:"newText"`
}

type editPair struct {
	OldText string `json:"oldText"`
	NewText string `json:"newText"`
}

// edits are an edit call's replacements, in either form the tool takes
// (an array, the array as a JSON string, or one oldText/newText).
func (a callArgs) edits() []editPair {
	var pairs []editPair
	raw := a.Edits
	var s string
	if len(raw) > 0 && raw[0] == '"' && json.Unmarshal(raw, &s) == nil {
		raw = json.RawMessage(s)
	}
	if len(raw) > 0 && json.Unmarshal(raw, &pairs) == nil {
		return pairs
	}
	if a.OldText != nil || a.NewText != nil {
		p := editPair{}
		if a.OldText != nil {
			p.OldText = *a.OldText
		}
		if a.NewText != nil {
			p.NewText = *a.NewText
		}
		return []editPair{p}
	}
	return nil
}

func parseArgs(raw json.RawMessage) callArgs {
	var a callArgs
	json.Unmarshal(raw, &a) // what does not parse is shown as the bare tool
	return a
}

// toolKind is the ACP kind of a tool: what the editor shows it as.
func toolKind(name string) acpsdk.ToolKind {
	switch name {
	case "read":
		return acpsdk.ToolKindRead
	case "edit", "write":
		return acpsdk.ToolKindEdit
	case "bash":
		return acpsdk.ToolKindExecute
	case "grep", "find", "ls":
		return acpsdk.ToolKindSearch
	}
	return acpsdk.ToolKindOther
}

// title is the one line an editor shows for a call.
func title(name string, a callArgs, abs string) string {
	var t string
	switch name {
	case "read":
		t = "Read " + abs
	case "edit":
		t = "Edit " + abs
	case "write":
		t = "Write " + abs
	case "bash":
		line, _, more := strings.Cut(strings.TrimSpace(a.Command), "\n")
		if more {
			line += " …"
		}
		t = "$ " + line
	case "grep", "find":
		t = fmt.Sprintf("%s %q", name, a.Pattern)
		if abs != "" {
			t += " in " + abs
		}
	case "ls":
		t = "ls " + abs
	default:
		t = name
	}
	if a.Host != "" {
		t = a.Host + ": " + t
	}
	// The model chose every part of it, and the editor shows it when it
	// asks for approval: control characters are shown, not obeyed, by a
	// client that draws it on a terminal, and it stays one line.
	return strings.ReplaceAll(termtext.String(strings.TrimSpace(t)), "\n", "^J")
}

// call is what an update needs of a tool call beyond its id.
type call struct {
	name string
	args callArgs
	abs  string // the target's absolute path on its host ("" for none)
}

// translator turns one session's loop events, and the messages of a saved
// session, into ACP session updates. Not safe for concurrent use: the
// agent session emits from one goroutine at a time.
type translator struct {
	dirs  hostDirs
	calls map[string]call // announced, not yet ended
	order []string        // announced ids, in order
	// quiet says that no call of tool on host can wait for approval
	// (permission.Gate.Quiet); nil: none can.
	quiet func(host, tool string) bool
}

func newTranslator(d hostDirs, quiet func(host, tool string) bool) *translator {
	return &translator{dirs: d, calls: map[string]call{}, quiet: quiet}
}

// mayAsk says whether a call of c may wait for the person's approval: it
// then stays pending until it is allowed (see conversation.ask).
func (t *translator) mayAsk(c call) bool {
	host := c.args.Host
	if host == "" {
		host = t.dirs.defaultHost
	}
	return t.quiet != nil && !t.quiet(host, c.name)
}

// event is the updates one event of a run makes.
func (t *translator) event(e loop.Event) []acpsdk.SessionUpdate {
	switch e := e.(type) {
	case loop.MessageUpdate:
		switch d := e.Delta.(type) {
		case *loop.TextDelta:
			if d.Delta != "" {
				return []acpsdk.SessionUpdate{acpsdk.UpdateAgentMessageText(d.Delta)}
			}
		case *loop.ThinkingDelta:
			if d.Delta != "" {
				return []acpsdk.SessionUpdate{acpsdk.UpdateAgentThoughtText(d.Delta)}
			}
		}
	case loop.MessageEnd:
		// The streamed text went out as chunks; the calls are announced
		// once their arguments are whole.
		if a, ok := e.Message.(*loop.AssistantMessage); ok {
			return t.announce(a)
		}
	case loop.ToolExecutionStart:
		if _, ok := t.calls[e.ToolCallID]; !ok {
			// A call the model did not make (none today): announce it.
			return []acpsdk.SessionUpdate{t.start(&loop.ToolCall{ID: e.ToolCallID, Name: e.ToolName, Arguments: e.Args}, acpsdk.ToolCallStatusInProgress)}
		}
		if t.mayAsk(t.calls[e.ToolCallID]) {
			// Pending while it may wait for approval: the answer that
			// allows it, or its first output, says in_progress.
			return nil
		}
		return []acpsdk.SessionUpdate{acpsdk.UpdateToolCall(acpsdk.ToolCallId(e.ToolCallID), acpsdk.WithUpdateStatus(acpsdk.ToolCallStatusInProgress))}
	case loop.ToolExecutionUpdate:
		// bash's output so far (the tail the model will see): it runs.
		if text := e.PartialResult.Content.Text(); text != "" {
			return []acpsdk.SessionUpdate{acpsdk.UpdateToolCall(acpsdk.ToolCallId(e.ToolCallID),
				acpsdk.WithUpdateStatus(acpsdk.ToolCallStatusInProgress),
				acpsdk.WithUpdateContent([]acpsdk.ToolCallContent{acpsdk.ToolContent(acpsdk.TextBlock(text))}))}
		}
	case loop.ToolExecutionEnd:
		return []acpsdk.SessionUpdate{t.end(e.ToolCallID, e.Result.Content, e.Result.Details, e.IsError)}
	case agent.UsageUpdate:
		u := acpsdk.SessionUsageUpdate{Used: e.ContextTokens, Size: e.ContextWindow}
		if e.Session.Cost > 0 {
			u.Cost = &acpsdk.Cost{Amount: e.Session.Cost, Currency: "USD"}
		}
		return []acpsdk.SessionUpdate{{UsageUpdate: &u}}
	}
	return nil
}

// announce is a pending tool_call for each call of an assistant message.
func (t *translator) announce(a *loop.AssistantMessage) []acpsdk.SessionUpdate {
	var out []acpsdk.SessionUpdate
	for _, c := range a.Content {
		if tc, ok := c.(*loop.ToolCall); ok {
			out = append(out, t.start(tc, acpsdk.ToolCallStatusPending))
		}
	}
	return out
}

// start announces a call: its kind, title, location on its host, and for
// edit and write the change it proposes (what a permission prompt shows).
func (t *translator) start(tc *loop.ToolCall, status acpsdk.ToolCallStatus) acpsdk.SessionUpdate {
	a := parseArgs(tc.Arguments)
	target := a.Path
	if target == "" && (tc.Name == "grep" || tc.Name == "find" || tc.Name == "ls") {
		target = "."
	}
	c := call{name: tc.Name, args: a, abs: t.dirs.abs(a.Host, target)}
	if _, seen := t.calls[tc.ID]; !seen {
		t.order = append(t.order, tc.ID)
	}
	t.calls[tc.ID] = c
	opts := []acpsdk.ToolCallStartOpt{
		acpsdk.WithStartKind(toolKind(tc.Name)),
		acpsdk.WithStartStatus(status),
		acpsdk.WithStartRawInput(json.RawMessage(nonEmpty(tc.Arguments))),
	}
	if c.abs != "" {
		opts = append(opts, acpsdk.WithStartLocations([]acpsdk.ToolCallLocation{{Path: c.abs}}))
	}
	if diffs := c.diffs(); len(diffs) > 0 {
		opts = append(opts, acpsdk.WithStartContent(diffs))
	}
	return acpsdk.StartToolCall(acpsdk.ToolCallId(tc.ID), title(tc.Name, a, c.abs), opts...)
}

// diffs are the changes an edit or write call makes, as ACP diffs: for
// edit each replaced region (oldText → newText, not the whole file), for
// write the new content (oldText absent: the editor shows it as new).
func (c call) diffs() []acpsdk.ToolCallContent {
	if c.abs == "" {
		return nil
	}
	switch c.name {
	case "edit":
		var out []acpsdk.ToolCallContent
		for _, e := range c.args.edits() {
			out = append(out, acpsdk.ToolDiffContent(c.abs, e.NewText, e.OldText))
		}
		return out
	case "write":
		if c.args.Content != nil {
			return []acpsdk.ToolCallContent{acpsdk.ToolDiffContent(c.abs, *c.args.Content)}
		}
	}
	return nil
}

// end is a call's last update: completed or failed, with what it did.
// details may be the tool's typed value or, from a saved session, its JSON.
func (t *translator) end(id string, content loop.ContentList, details any, isError bool) acpsdk.SessionUpdate {
	c, ok := t.calls[id]
	delete(t.calls, id)
	status := acpsdk.ToolCallStatusCompleted
	if isError {
		status = acpsdk.ToolCallStatusFailed
	}
	opts := []acpsdk.ToolCallUpdateOpt{acpsdk.WithUpdateStatus(status)}
	var body []acpsdk.ToolCallContent
	if ok && !isError {
		body = c.diffs()
		var d struct {
			Path             string `json:"path"`
			FirstChangedLine int    `json:"firstChangedLine"`
		}
		if b, err := json.Marshal(details); err == nil && json.Unmarshal(b, &d) == nil && d.Path != "" {
			loc := acpsdk.ToolCallLocation{Path: d.Path}
			if d.FirstChangedLine > 0 {
				loc.Line = acpsdk.Ptr(d.FirstChangedLine)
			}
			opts = append(opts, acpsdk.WithUpdateLocations([]acpsdk.ToolCallLocation{loc}))
		}
	}
	if text := content.Text(); text != "" && (len(body) == 0 || c.name == "bash") {
		body = append(body, acpsdk.ToolContent(acpsdk.TextBlock(text)))
	}
	if len(body) > 0 {
		opts = append(opts, acpsdk.WithUpdateContent(body))
	}
	return acpsdk.UpdateToolCall(acpsdk.ToolCallId(id), opts...)
}

// unfinished fails the calls announced that never ended (a run cancelled
// before they ran): an editor shows no call as still pending.
func (t *translator) unfinished() []acpsdk.SessionUpdate {
	var out []acpsdk.SessionUpdate
	for _, id := range t.order {
		if _, open := t.calls[id]; open {
			delete(t.calls, id)
			out = append(out, acpsdk.UpdateToolCall(acpsdk.ToolCallId(id), acpsdk.WithUpdateStatus(acpsdk.ToolCallStatusFailed)))
		}
	}
	t.order = t.order[:0]
	return out
}

// replay is the updates that show a saved conversation as it happened:
// what session/load sends before it answers.
func (t *translator) replay(msgs []loop.Message) []acpsdk.SessionUpdate {
	var out []acpsdk.SessionUpdate
	for _, m := range msgs {
		switch m := m.(type) {
		case *loop.UserMessage:
			for _, c := range m.Content {
				if x, ok := c.(*loop.Text); ok && x.Text != "" {
					out = append(out, acpsdk.UpdateUserMessageText(x.Text))
				}
			}
		case *loop.AssistantMessage:
			for _, c := range m.Content {
				switch x := c.(type) {
				case *loop.Thinking:
					if x.Thinking != "" {
						out = append(out, acpsdk.UpdateAgentThoughtText(x.Thinking))
					}
				case *loop.Text:
					if x.Text != "" {
						out = append(out, acpsdk.UpdateAgentMessageText(x.Text))
					}
				}
			}
			out = append(out, t.announce(m)...)
		case *loop.ToolResultMessage:
			out = append(out, t.end(m.ToolCallID, m.Content, m.Details, m.IsError))
		}
	}
	return append(out, t.unfinished()...)
}

func nonEmpty(b json.RawMessage) json.RawMessage {
	if len(b) == 0 {
		return json.RawMessage("{}")
	}
	return b
}
