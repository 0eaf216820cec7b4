package acp

import (
	"context"
	"encoding/json"
	"testing"

	acpsdk "github.com/coder/acp-go-sdk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pi-remote/pi-remote/agent"
	"github.com/pi-remote/pi-remote/agent/permission"
	"github.com/pi-remote/pi-remote/loop"
	"github.com/pi-remote/pi-remote/tools"
)

func TestHostCwd(t *testing.T) {
	m := CwdMap{"/home/me/src": "/srv/src", "/home/me/src/big": "/data/big", "/home/me/w": "/w/"}
	for _, tc := range []struct {
		name, editor string
		local        bool
		flag         string
		m            CwdMap
		want, err    string
	}{
		{name: "local is the editor's directory", editor: "/home/me/src/app", local: true, flag: "/ignored", m: m, want: "/home/me/src/app"},
		{name: "mapped exactly", editor: "/home/me/src", m: m, want: "/srv/src"},
		{name: "mapped below", editor: "/home/me/src/app/cmd", m: m, want: "/srv/src/app/cmd"},
		{name: "longest key wins", editor: "/home/me/src/big/x", m: m, want: "/data/big/x"},
		{name: "a longer name is no child", editor: "/home/me/srcs/app", flag: "/flag", m: m, want: "/flag"},
		{name: "target cleaned", editor: "/home/me/w/a", m: m, want: "/w/a"},
		{name: "unmapped takes --cwd", editor: "/elsewhere", flag: "/opt/app", m: m, want: "/opt/app"},
		{name: "unmapped without --cwd is the home directory", editor: "/elsewhere", m: m, want: ""},
		{name: "editor directory cleaned", editor: "/home/me/src/app/../lib/", m: m, want: "/srv/src/lib"},
		{name: "relative editor directory", editor: "src", m: m, err: "not an absolute path"},
		{name: "relative target", editor: "/x/y", m: CwdMap{"/x": "rel/dir"}, err: "not an absolute path on the host"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := HostCwd(tc.editor, tc.local, tc.flag, tc.m)
			if tc.err != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tc.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestHostDirsAbs(t *testing.T) {
	d := hostDirs{defaultHost: "dev", cwd: map[string]string{"dev": "/srv/app", "ci": "/build"}, local: map[string]bool{}}
	assert.Equal(t, "/srv/app/a/b.go", d.abs("", "a/b.go"))
	assert.Equal(t, "/build/x", d.abs("ci", "x"))
	assert.Equal(t, "/etc/hosts", d.abs("", "/etc/hosts"))
	assert.Equal(t, "/srv/x", d.abs("", "../x"))
	assert.Equal(t, "", d.abs("", ""))
}

func toolCall(id, name, args string) *loop.ToolCall {
	return &loop.ToolCall{ID: id, Name: name, Arguments: json.RawMessage(args)}
}

// asJSON is v as the client receives it.
func asJSON(t *testing.T, v any) map[string]any {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, json.Unmarshal(b, &m))
	return m
}

func TestTranslatorRun(t *testing.T) {
	tr := newTranslator(hostDirs{defaultHost: "dev", cwd: map[string]string{"dev": "/srv/app", "ci": "/build"}, local: map[string]bool{}}, nil)
	var got []map[string]any
	feed := func(e loop.Event) {
		for _, u := range tr.event(e) {
			got = append(got, asJSON(t, u))
		}
	}
	feed(loop.MessageUpdate{Delta: &loop.ThinkingDelta{Delta: "hmm"}})
	feed(loop.MessageUpdate{Delta: &loop.TextDelta{Delta: "On it."}})
	feed(loop.MessageUpdate{Delta: &loop.ToolCallDelta{ID: "e1", Name: "edit"}}) // no update until the call is whole
	feed(loop.MessageEnd{Message: &loop.AssistantMessage{Content: loop.ContentList{
		&loop.Text{Text: "On it."},
		toolCall("e1", "edit", `{"path":"main.go","edits":[{"oldText":"a","newText":"b"},{"oldText":"c","newText":"d"}]}`),
		toolCall("w1", "write", `{"path":"/tmp/new.txt","content":"fresh"}`),
		toolCall("b1", "bash", `{"command":"make test\necho done","host":"ci"}`),
		toolCall("g1", "grep", `{"pattern":"TODO"}`),
		toolCall("m1", "mcp_search", `{"q":1}`),
	}}})
	require.Len(t, got, 7)
	assert.Equal(t, map[string]any{"sessionUpdate": "agent_thought_chunk", "content": map[string]any{"type": "text", "text": "hmm"}}, got[0])
	assert.Equal(t, map[string]any{"sessionUpdate": "agent_message_chunk", "content": map[string]any{"type": "text", "text": "On it."}}, got[1])

	edit := got[2]
	assert.Equal(t, "tool_call", edit["sessionUpdate"])
	assert.Equal(t, "e1", edit["toolCallId"])
	assert.Equal(t, "pending", edit["status"])
	assert.Equal(t, "edit", edit["kind"])
	assert.Equal(t, "Edit /srv/app/main.go", edit["title"])
	assert.Equal(t, []any{map[string]any{"path": "/srv/app/main.go"}}, edit["locations"])
	assert.Equal(t, []any{
		map[string]any{"type": "diff", "path": "/srv/app/main.go", "oldText": "a", "newText": "b"},
		map[string]any{"type": "diff", "path": "/srv/app/main.go", "oldText": "c", "newText": "d"},
	}, edit["content"], "an edit shows each replacement as a diff")

	write := got[3]
	assert.Equal(t, "Write /tmp/new.txt", write["title"])
	assert.Equal(t, []any{map[string]any{"type": "diff", "path": "/tmp/new.txt", "newText": "fresh"}}, write["content"])

	bash := got[4]
	assert.Equal(t, "execute", bash["kind"])
	assert.Equal(t, "ci: $ make test …", bash["title"], "the first line, and the host when the call names one")
	assert.Nil(t, bash["locations"])
	assert.Equal(t, map[string]any{"command": "make test\necho done", "host": "ci"}, bash["rawInput"])

	assert.Equal(t, "search", got[5]["kind"])
	assert.Equal(t, `grep "TODO" in /srv/app`, got[5]["title"])
	assert.Equal(t, "other", got[6]["kind"])
	assert.Equal(t, "mcp_search", got[6]["title"])

	got = nil
	feed(loop.ToolExecutionStart{ToolCallID: "e1", ToolName: "edit"})
	feed(loop.ToolExecutionStart{ToolCallID: "b1", ToolName: "bash"})
	feed(loop.ToolExecutionUpdate{ToolCallID: "b1", ToolName: "bash", PartialResult: loop.Result{Content: loop.ContentList{&loop.Text{Text: "ok 1\n"}}}})
	feed(loop.ToolExecutionEnd{ToolCallID: "e1", ToolName: "edit", Result: loop.Result{
		Content: loop.ContentList{&loop.Text{Text: "Successfully replaced 2 blocks in main.go."}},
		Details: tools.EditDetails{Path: "/srv/app/main.go", Replacements: 2, FirstChangedLine: 12},
	}})
	feed(loop.ToolExecutionEnd{ToolCallID: "b1", ToolName: "bash", IsError: true, Result: loop.Result{Content: loop.ContentList{&loop.Text{Text: "ok 1\nFAIL\n\n[Command exited with code 2.]"}}}})
	feed(agent.UsageUpdate{ContextTokens: 1500, ContextWindow: 200000, Session: agent.Totals{Cost: 0.25}})
	require.Len(t, got, 6)
	assert.Equal(t, map[string]any{"sessionUpdate": "tool_call_update", "toolCallId": "e1", "status": "in_progress"}, got[0])
	assert.Equal(t, map[string]any{"sessionUpdate": "tool_call_update", "toolCallId": "b1", "status": "in_progress", "content": []any{
		map[string]any{"type": "content", "content": map[string]any{"type": "text", "text": "ok 1\n"}},
	}}, got[2], "bash's output so far")
	assert.Equal(t, "completed", got[3]["status"])
	assert.Equal(t, []any{map[string]any{"path": "/srv/app/main.go", "line": float64(12)}}, got[3]["locations"])
	assert.Len(t, got[3]["content"], 2, "the diffs again")
	assert.Equal(t, "failed", got[4]["status"])
	assert.Equal(t, []any{map[string]any{"type": "content", "content": map[string]any{"type": "text", "text": "ok 1\nFAIL\n\n[Command exited with code 2.]"}}}, got[4]["content"])
	assert.Equal(t, map[string]any{"sessionUpdate": "usage_update", "used": float64(1500), "size": float64(200000), "cost": map[string]any{"amount": 0.25, "currency": "USD"}}, got[5])

	// The calls that never ran (the run was cancelled) end as failed, once.
	var rest []string
	for _, u := range tr.unfinished() {
		m := asJSON(t, u)
		assert.Equal(t, "failed", m["status"])
		rest = append(rest, m["toolCallId"].(string))
	}
	assert.Equal(t, []string{"w1", "g1", "m1"}, rest)
	assert.Empty(t, tr.unfinished())
}

// A saved session replays as the live run showed it; the details read
// back from the file are JSON, not the tools' types.
func TestTranslatorReplay(t *testing.T) {
	tr := newTranslator(hostDirs{defaultHost: "local", cwd: map[string]string{"local": "/home/me/app"}, local: map[string]bool{"local": true}}, nil)
	var details any
	require.NoError(t, json.Unmarshal([]byte(`{"path":"/home/me/app/x.go","replacements":1,"diff":"-a\n+b","firstChangedLine":3}`), &details))
	msgs := []loop.Message{
		loop.NewUserText("fix x"),
		&loop.AssistantMessage{Content: loop.ContentList{&loop.Thinking{Thinking: "look"}, &loop.Text{Text: "Fixing."}, toolCall("e1", "edit", `{"path":"x.go","oldText":"a","newText":"b"}`), toolCall("r1", "read", `{"path":"y.go"}`)}},
		&loop.ToolResultMessage{ToolCallID: "e1", ToolName: "edit", Content: loop.ContentList{&loop.Text{Text: "Successfully replaced 1 block in x.go."}}, Details: details},
		&loop.AssistantMessage{Content: loop.ContentList{&loop.Text{Text: "Done."}}},
	}
	var got []string
	var editEnd map[string]any
	for _, u := range tr.replay(msgs) {
		m := asJSON(t, u)
		line := m["sessionUpdate"].(string)
		if id, ok := m["toolCallId"]; ok {
			line += " " + id.(string) + " " + m["status"].(string)
			if id == "e1" && m["status"] == "completed" {
				editEnd = m
			}
		} else {
			line += " " + m["content"].(map[string]any)["text"].(string)
		}
		got = append(got, line)
	}
	assert.Equal(t, []string{
		"user_message_chunk fix x",
		"agent_thought_chunk look",
		"agent_message_chunk Fixing.",
		"tool_call e1 pending",
		"tool_call r1 pending",
		"tool_call_update e1 completed",
		"agent_message_chunk Done.",
		"tool_call_update r1 failed", // its result is not in the file
	}, got)
	require.NotNil(t, editEnd)
	assert.Equal(t, []any{map[string]any{"path": "/home/me/app/x.go", "line": float64(3)}}, editEnd["locations"])
	assert.Equal(t, []any{map[string]any{"type": "diff", "path": "/home/me/app/x.go", "oldText": "a", "newText": "b"}}, editEnd["content"],
		"the legacy oldText/newText form is a diff too")
}

// A call that may wait for approval stays pending when it starts: the
// answer that allows it (conversation.ask) or its first output says it
// runs.
func TestTranslatorPendingWhileItMayAsk(t *testing.T) {
	var asked []string
	tr := newTranslator(hostDirs{defaultHost: "dev", cwd: map[string]string{"dev": "/srv"}},
		func(host, tool string) bool { asked = append(asked, host+":"+tool); return tool != "bash" })
	tr.event(loop.MessageEnd{Message: &loop.AssistantMessage{Content: loop.ContentList{
		toolCall("b1", "bash", `{"command":"make"}`), toolCall("r1", "read", `{"path":"x","host":"ci"}`),
	}}})
	assert.Empty(t, tr.event(loop.ToolExecutionStart{ToolCallID: "b1", ToolName: "bash"}), "bash may ask: still pending")
	start := tr.event(loop.ToolExecutionStart{ToolCallID: "r1", ToolName: "read"})
	require.Len(t, start, 1)
	assert.Equal(t, "in_progress", asJSON(t, start[0])["status"])
	assert.Equal(t, []string{"dev:bash", "ci:read"}, asked, "asked of each call's own host")
	out := tr.event(loop.ToolExecutionUpdate{ToolCallID: "b1", ToolName: "bash", PartialResult: loop.Result{Content: loop.ContentList{&loop.Text{Text: "cc main.c\n"}}}})
	require.Len(t, out, 1)
	assert.Equal(t, "in_progress", asJSON(t, out[0])["status"], "output means it runs")
}

func TestAnswer(t *testing.T) {
	for _, tc := range []struct {
		option   string
		decision string
	}{
		{optionOnce, permission.Once},
		{optionAlways, permission.Session},
		{optionReject, permission.Deny},
	} {
		a, err := answer(acpsdk.NewRequestPermissionOutcomeSelected(acpsdk.PermissionOptionId(tc.option)))
		require.NoError(t, err)
		assert.Equal(t, tc.decision, a.Decision, tc.option)
	}
	_, err := answer(acpsdk.NewRequestPermissionOutcomeCancelled())
	assert.ErrorIs(t, err, context.Canceled)
	_, err = answer(acpsdk.NewRequestPermissionOutcomeSelected("yolo"))
	assert.ErrorContains(t, err, "did not offer")
}

func TestSlashCommand(t *testing.T) {
	for _, tc := range []struct {
		text, name, input string
		ok                bool
	}{
		{"/compact", "compact", "", true},
		{"  /compact keep the API notes  ", "compact", "keep the API notes", true},
		{"/review some/path", "review", "some/path", true},
		{"/usr/bin/env is odd", "", "", false},
		{"compact", "", "", false},
		{"/", "", "", false},
	} {
		name, input, ok := slashCommand(tc.text)
		assert.Equal(t, tc.ok, ok, tc.text)
		assert.Equal(t, tc.name, name, tc.text)
		assert.Equal(t, tc.input, input, tc.text)
	}
}

func TestPromptText(t *testing.T) {
	got := promptText([]acpsdk.ContentBlock{
		acpsdk.TextBlock("explain"),
		acpsdk.ResourceLinkBlock("main.go", "file:///home/me/app/main.go"),
		acpsdk.ResourceBlock(acpsdk.EmbeddedResourceResource{TextResourceContents: &acpsdk.TextResourceContents{Uri: "file:///home/me/app/a.go", Text: "package a"}}),
		acpsdk.ImageBlock("AAAA", "image/png"),
	})
	assert.Equal(t, "explain\n@file:///home/me/app/main.go\n<context uri=\"file:///home/me/app/a.go\">\npackage a\n</context>", got)
}
