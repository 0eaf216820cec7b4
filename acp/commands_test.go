package acp

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	acpsdk "github.com/coder/acp-go-sdk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pi-remote/pi-remote/agent/permission"
	"github.com/pi-remote/pi-remote/llm"
	"github.com/pi-remote/pi-remote/prompts"
	"github.com/pi-remote/pi-remote/skills"
	"github.com/pi-remote/pi-remote/tools"
	"github.com/pi-remote/pi-remote/workspace"
)

// templateOptions are localOptions whose workspaces have a prompt
// template /review (its description carrying a terminal control) and a
// user's skill /skill:deploy.
func templateOptions(t *testing.T, turns string) Options {
	o := localOptions(t, turns)
	script := strings.TrimPrefix(o.Model, "scripted/")
	o.Open = func(ctx context.Context, editorCwd string) (*workspace.Workspace, error) {
		cwd, err := HostCwd(editorCwd, true, "", nil)
		if err != nil {
			return nil, err
		}
		model, err := llm.LoadScript(script)
		if err != nil {
			return nil, err
		}
		hosts, err := workspace.OpenHosts(ctx, workspace.HostOptions{Cwd: cwd}, workspace.Session, nil, io.Discard)
		if err != nil {
			return nil, err
		}
		return workspace.Open(ctx, hosts, workspace.Options{
			Model: model, Active: tools.DefaultActive, Gate: permission.NewGate(permission.Policy{Mode: permission.Auto}),
			Templates:  []prompts.Template{{Name: "review", Description: "Review \x1b[31mcode", Path: "/p/review.md", User: true, Body: "Review $1 for bugs."}},
			UserSkills: []skills.Skill{{Name: "deploy", Description: "Ship it", Path: "/s/deploy/SKILL.md", User: true, Body: "Run make deploy."}},
		})
	}
	return o
}

func advertised(us []acpsdk.SessionUpdate) map[string]acpsdk.AvailableCommand {
	out := map[string]acpsdk.AvailableCommand{}
	for _, u := range us {
		if u.AvailableCommandsUpdate != nil {
			for _, ac := range u.AvailableCommandsUpdate.AvailableCommands {
				out[ac.Name] = ac
			}
		}
	}
	return out
}

// The workspace's prompt templates and skills are advertised beside
// /compact (descriptions with their controls shown as text), and expand
// as in the terminal and rpc.
func TestServeWorkspaceCommands(t *testing.T) {
	o := templateOptions(t, `{"turns":[{"text":"Reviewed."},{"text":"Deployed."}]}`)
	c := &client{t: t, seen: make(chan acpsdk.SessionUpdate, 1)}
	conn := connect(t, o, c)
	s, err := conn.NewSession(t.Context(), acpsdk.NewSessionRequest{Cwd: t.TempDir(), McpServers: []acpsdk.McpServer{}})
	require.NoError(t, err)
	r, err := conn.Prompt(t.Context(), acpsdk.PromptRequest{SessionId: s.SessionId, Prompt: []acpsdk.ContentBlock{acpsdk.TextBlock("/review main.go")}})
	require.NoError(t, err)
	assert.Equal(t, acpsdk.StopReasonEndTurn, r.StopReason)
	_, err = conn.Prompt(t.Context(), acpsdk.PromptRequest{SessionId: s.SessionId, Prompt: []acpsdk.ContentBlock{acpsdk.TextBlock("/skill:deploy to staging")}})
	require.NoError(t, err)

	cmds := advertised(c.take())
	require.Contains(t, cmds, "compact")
	require.Contains(t, cmds, "review")
	require.Contains(t, cmds, "skill:deploy")
	assert.Len(t, cmds, 3)
	assert.NotContains(t, cmds["review"].Description, "\x1b")
	assert.Contains(t, cmds["review"].Description, "Review")
	assert.Equal(t, "Ship it", cmds["skill:deploy"].Description)
	require.NotNil(t, cmds["review"].Input)
	assert.NotEmpty(t, cmds["review"].Input.Unstructured.Hint)

	file := sessionFiles(t)
	assert.Contains(t, file, "Review main.go for bugs.", "the model got the template's text")
	assert.Contains(t, file, "Run make deploy.", "the model got the skill's body")
	assert.Contains(t, file, "to staging")
}

// An unknown /name is refused and nothing reaches the model, as in rpc;
// a path or a prompt beginning with // is sent as it is.
func TestServeUnknownCommand(t *testing.T) {
	o := templateOptions(t, `{"turns":[{"text":"ok"},{"text":"ok"}]}`)
	c := &client{t: t, seen: make(chan acpsdk.SessionUpdate, 1)}
	conn := connect(t, o, c)
	s, err := conn.NewSession(t.Context(), acpsdk.NewSessionRequest{Cwd: t.TempDir(), McpServers: []acpsdk.McpServer{}})
	require.NoError(t, err)
	_, err = conn.Prompt(t.Context(), acpsdk.PromptRequest{SessionId: s.SessionId, Prompt: []acpsdk.ContentBlock{acpsdk.TextBlock("/reveiw main.go")}})
	var re *acpsdk.RequestError
	require.ErrorAs(t, err, &re)
	assert.Equal(t, -32602, re.Code)
	assert.Contains(t, err.Error(), "unknown command /reveiw")
	assert.NotContains(t, sessionFiles(t), "reveiw", "nothing was sent to the model")

	for _, text := range []string{"/etc/hosts is broken", "//review as words"} {
		r, err := conn.Prompt(t.Context(), acpsdk.PromptRequest{SessionId: s.SessionId, Prompt: []acpsdk.ContentBlock{acpsdk.TextBlock(text)}})
		require.NoError(t, err, text)
		assert.Equal(t, acpsdk.StopReasonEndTurn, r.StopReason)
		assert.Contains(t, sessionFiles(t), text)
	}
}

// sessionFiles are the session files under $HOME, concatenated.
func sessionFiles(t *testing.T) string {
	home, err := os.UserHomeDir()
	require.NoError(t, err)
	var all string
	filepath.WalkDir(home, func(p string, d os.DirEntry, err error) error {
		if err == nil && strings.HasSuffix(p, ".jsonl") {
			b, _ := os.ReadFile(p)
			all += string(b)
		}
		return nil
	})
	return all
}
