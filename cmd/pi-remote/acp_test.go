package main

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	acpsdk "github.com/coder/acp-go-sdk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// What would fail every session fails at start, as a usage error.
func TestACPNeedsAModel(t *testing.T) {
	t.Setenv("HOME", t.TempDir())
	t.Setenv("PI_REMOTE_MODEL", "")
	code, out, errOut := runCLI(t, "", "acp")
	assert.Equal(t, 2, code)
	assert.Empty(t, out, "stdout is the protocol's")
	assert.Contains(t, errOut, "no model")
}

// editor is an ACP client that allows every call; it must never be asked
// for its files.
type editor struct {
	t  *testing.T
	mu sync.Mutex
	n  int // updates seen
}

var errNoEditorFiles = errors.New("pi-remote must not use the editor's files or terminals")

func (e *editor) ReadTextFile(context.Context, acpsdk.ReadTextFileRequest) (acpsdk.ReadTextFileResponse, error) {
	e.t.Error(errNoEditorFiles)
	return acpsdk.ReadTextFileResponse{}, errNoEditorFiles
}

func (e *editor) WriteTextFile(context.Context, acpsdk.WriteTextFileRequest) (acpsdk.WriteTextFileResponse, error) {
	e.t.Error(errNoEditorFiles)
	return acpsdk.WriteTextFileResponse{}, errNoEditorFiles
}

func (e *editor) RequestPermission(_ context.Context, p acpsdk.RequestPermissionRequest) (acpsdk.RequestPermissionResponse, error) {
	return acpsdk.RequestPermissionResponse{Outcome: acpsdk.NewRequestPermissionOutcomeSelected(p.Options[0].OptionId)}, nil
}

func (e *editor) SessionUpdate(context.Context, acpsdk.SessionNotification) error {
	e.mu.Lock()
	e.n++
	e.mu.Unlock()
	return nil
}

func (e *editor) CreateTerminal(context.Context, acpsdk.CreateTerminalRequest) (acpsdk.CreateTerminalResponse, error) {
	e.t.Error(errNoEditorFiles)
	return acpsdk.CreateTerminalResponse{}, errNoEditorFiles
}

func (e *editor) KillTerminal(context.Context, acpsdk.KillTerminalRequest) (acpsdk.KillTerminalResponse, error) {
	return acpsdk.KillTerminalResponse{}, errNoEditorFiles
}

func (e *editor) TerminalOutput(context.Context, acpsdk.TerminalOutputRequest) (acpsdk.TerminalOutputResponse, error) {
	return acpsdk.TerminalOutputResponse{}, errNoEditorFiles
}

func (e *editor) ReleaseTerminal(context.Context, acpsdk.ReleaseTerminalRequest) (acpsdk.ReleaseTerminalResponse, error) {
	return acpsdk.ReleaseTerminalResponse{}, errNoEditorFiles
}

func (e *editor) WaitForTerminalExit(context.Context, acpsdk.WaitForTerminalExitRequest) (acpsdk.WaitForTerminalExitResponse, error) {
	return acpsdk.WaitForTerminalExitResponse{}, errNoEditorFiles
}

// On this machine a session works in the editor's directory, whatever
// --cwd says, and the session is saved with its ID.
func TestACPWorksInTheEditorsDirectory(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	editorDir, other := t.TempDir(), t.TempDir()
	script := filepath.Join(t.TempDir(), "s.json")
	require.NoError(t, os.WriteFile(script, []byte(`{"turns":[
		{"toolCalls":[{"id":"w1","name":"write","arguments":{"path":"made.txt","content":"here\n"}}]},
		{"text":"Made it."}
	]}`), 0o644))
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	var errOut strings.Builder
	code := make(chan int, 1)
	go func() {
		c := run([]string{"--cwd", other, "--model", "scripted/" + script, "acp"}, inR, outW, &errOut)
		outW.Close()
		code <- c
	}()
	e := &editor{t: t}
	conn := acpsdk.NewClientSideConnection(e, inW, outR)
	_, err := conn.Initialize(t.Context(), acpsdk.InitializeRequest{ProtocolVersion: acpsdk.ProtocolVersionNumber})
	require.NoError(t, err)
	s, err := conn.NewSession(t.Context(), acpsdk.NewSessionRequest{Cwd: editorDir, McpServers: []acpsdk.McpServer{}})
	require.NoError(t, err)
	r, err := conn.Prompt(t.Context(), acpsdk.PromptRequest{SessionId: s.SessionId, Prompt: []acpsdk.ContentBlock{acpsdk.TextBlock("make it")}})
	require.NoError(t, err)
	assert.Equal(t, acpsdk.StopReasonEndTurn, r.StopReason)
	inW.Close()
	go io.Copy(io.Discard, outR)
	assert.Equal(t, 0, <-code, "stderr: %s", errOut.String())

	b, err := os.ReadFile(filepath.Join(editorDir, "made.txt"))
	require.NoError(t, err)
	assert.Equal(t, "here\n", string(b))
	assert.NoFileExists(t, filepath.Join(other, "made.txt"))
	var saved []string
	filepath.WalkDir(filepath.Join(home, ".pi-remote", "sessions"), func(p string, d os.DirEntry, err error) error {
		if err == nil && strings.HasSuffix(p, ".jsonl") {
			if b, err := os.ReadFile(p); err == nil && strings.Contains(string(b), string(s.SessionId)) && strings.Contains(string(b), "Made it.") {
				saved = append(saved, p)
			}
		}
		return nil
	})
	assert.Len(t, saved, 1, "the session is saved, with its ID")
}
