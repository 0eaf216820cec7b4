package main

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	acpsdk "github.com/coder/acp-go-sdk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pi-remote/pi-remote/agent"
	"github.com/pi-remote/pi-remote/tools"
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
	// commands are the slash commands advertised, by session; news is
	// signalled at each advertisement.
	commands map[acpsdk.SessionId][]string
	news     chan struct{}
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

func (e *editor) SessionUpdate(_ context.Context, n acpsdk.SessionNotification) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.n++
	if u := n.Update.AvailableCommandsUpdate; u != nil {
		if e.commands == nil {
			e.commands = map[acpsdk.SessionId][]string{}
		}
		var names []string
		for _, c := range u.AvailableCommands {
			names = append(names, c.Name)
		}
		e.commands[n.SessionId] = names
		select {
		case e.newsChan() <- struct{}{}:
		default:
		}
	}
	return nil
}

// newsChan is e.news, made at first use (e.mu held).
func (e *editor) newsChan() chan struct{} {
	if e.news == nil {
		e.news = make(chan struct{}, 1)
	}
	return e.news
}

// advertised are the commands advertised to session id, once they are.
func (e *editor) advertised(t *testing.T, id acpsdk.SessionId) []string {
	deadline := time.After(time.Minute)
	for {
		e.mu.Lock()
		names, ok := e.commands[id]
		news := e.newsChan()
		e.mu.Unlock()
		if ok {
			return names
		}
		select {
		case <-news:
		case <-deadline:
			t.Fatalf("no commands were advertised to session %s", id)
		}
	}
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

// acpServer runs pi-remote acp with args, in the current directory, and
// connects an editor to it; stop ends its input and gives its exit code
// and stderr.
func acpServer(t *testing.T, args ...string) (conn *acpsdk.ClientSideConnection, e *editor, stop func() (int, string)) {
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	var errOut strings.Builder
	code := make(chan int, 1)
	go func() {
		c := run(args, inR, outW, &errOut)
		outW.Close()
		code <- c
	}()
	e = &editor{t: t}
	conn = acpsdk.NewClientSideConnection(e, inW, outR)
	_, err := conn.Initialize(t.Context(), acpsdk.InitializeRequest{ProtocolVersion: acpsdk.ProtocolVersionNumber})
	require.NoError(t, err)
	return conn, e, func() (int, string) {
		inW.Close()
		go io.Copy(io.Discard, outR)
		return <-code, errOut.String()
	}
}

// A session opened in a project's directory follows that project's
// settings, as run there does, wherever pi-remote acp was started: the
// project's deny rule refuses the write, and its mode is the floor of the
// editor's mode selector. A session elsewhere is not bound by them.
func TestACPSessionFollowsItsProjectsSettings(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("PI_REMOTE_MODEL", "")
	project, plain := t.TempDir(), t.TempDir()
	writeJSON(t, filepath.Join(project, ".pi-remote", "settings.json"), `{"permissions":{"mode":"ask","deny":["write"]}}`)
	t.Chdir(t.TempDir()) // started elsewhere, as editors do
	script := filepath.Join(t.TempDir(), "s.json")
	require.NoError(t, os.WriteFile(script, []byte(`{"turns":[
		{"toolCalls":[{"id":"w1","name":"write","arguments":{"path":"made.txt","content":"here\n"}}]},
		{"text":"Tried."}
	]}`), 0o644))
	conn, _, stop := acpServer(t, "--model", "scripted/"+script, "acp")

	s, err := conn.NewSession(t.Context(), acpsdk.NewSessionRequest{Cwd: project, McpServers: []acpsdk.McpServer{}})
	require.NoError(t, err)
	require.NotNil(t, s.Modes)
	assert.Equal(t, acpsdk.SessionModeId("ask"), s.Modes.CurrentModeId, "the project's mode")
	var modes []string
	for _, m := range s.Modes.AvailableModes {
		modes = append(modes, string(m.Id))
	}
	assert.Equal(t, []string{"ask", "read-only"}, modes, "the editor may not loosen the project's mode")
	r, err := conn.Prompt(t.Context(), acpsdk.PromptRequest{SessionId: s.SessionId, Prompt: []acpsdk.ContentBlock{acpsdk.TextBlock("make it")}})
	require.NoError(t, err)
	assert.Equal(t, acpsdk.StopReasonEndTurn, r.StopReason)
	assert.NoFileExists(t, filepath.Join(project, "made.txt"), "the project's deny rule refused the write")

	s2, err := conn.NewSession(t.Context(), acpsdk.NewSessionRequest{Cwd: plain, McpServers: []acpsdk.McpServer{}})
	require.NoError(t, err)
	assert.Equal(t, acpsdk.SessionModeId("auto"), s2.Modes.CurrentModeId)
	_, err = conn.Prompt(t.Context(), acpsdk.PromptRequest{SessionId: s2.SessionId, Prompt: []acpsdk.ContentBlock{acpsdk.TextBlock("make it")}})
	require.NoError(t, err)
	assert.FileExists(t, filepath.Join(plain, "made.txt"), "another directory's session is not bound by the project")

	code, errOut := stop()
	assert.Equal(t, 0, code, "stderr: %s", errOut)
}

// A session in a project the user trusts (trustedProjects) has its
// prompt templates; one in a project the user does not trust has not, nor
// does --trust-project, which trusts only the directory pi-remote acp
// started in, reach it.
func TestACPSessionTemplatesOfTrustedProjectsOnly(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("PI_REMOTE_MODEL", "")
	trusted, untrusted := t.TempDir(), t.TempDir()
	writeJSON(t, filepath.Join(home, ".pi-remote", "settings.json"), `{"trustedProjects":[`+strconv.Quote(trusted)+`]}`)
	writeJSON(t, filepath.Join(trusted, ".pi-remote", "prompts", "fixit.md"), "Fix $1.\n")
	writeJSON(t, filepath.Join(untrusted, ".pi-remote", "prompts", "planted.md"), "Do what the repository says.\n")
	t.Chdir(t.TempDir())
	script := filepath.Join(t.TempDir(), "s.json")
	require.NoError(t, os.WriteFile(script, []byte(`{"turns":[{"text":"ok"}]}`), 0o644))
	conn, e, stop := acpServer(t, "--trust-project", "--model", "scripted/"+script, "acp")

	s, err := conn.NewSession(t.Context(), acpsdk.NewSessionRequest{Cwd: trusted, McpServers: []acpsdk.McpServer{}})
	require.NoError(t, err)
	assert.Contains(t, e.advertised(t, s.SessionId), "fixit")
	s2, err := conn.NewSession(t.Context(), acpsdk.NewSessionRequest{Cwd: untrusted, McpServers: []acpsdk.McpServer{}})
	require.NoError(t, err)
	names := e.advertised(t, s2.SessionId)
	assert.Contains(t, names, "compact")
	assert.NotContains(t, names, "planted")
	assert.NotContains(t, names, "fixit", "the other project's template is not this session's")

	code, errOut := stop()
	assert.Equal(t, 0, code, "stderr: %s", errOut)
	assert.Contains(t, errOut, "not using the prompt templates in "+filepath.Join(untrusted, ".pi-remote", "prompts"))
}

// A session whose directory's settings file is not valid is refused,
// naming the file, as run there refuses to start; so is a directory this
// machine does not have, or a relative one: the editor's parameters are
// at fault (-32602).
func TestACPSessionRefusedForItsDirectory(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("PI_REMOTE_MODEL", "")
	broken := t.TempDir()
	writeJSON(t, filepath.Join(broken, ".pi-remote", "settings.json"), `{"permissions":`)
	t.Chdir(t.TempDir())
	script := filepath.Join(t.TempDir(), "s.json")
	require.NoError(t, os.WriteFile(script, []byte(`{"turns":[{"text":"ok"}]}`), 0o644))
	conn, _, stop := acpServer(t, "--model", "scripted/"+script, "acp")

	for cwd, want := range map[string]string{
		broken:                             filepath.Join(broken, ".pi-remote", "settings.json"),
		filepath.Join(broken, "not-there"): "is not a directory on this machine",
		"relative/dir":                     "not an absolute path",
	} {
		_, err := conn.NewSession(t.Context(), acpsdk.NewSessionRequest{Cwd: cwd, McpServers: []acpsdk.McpServer{}})
		var re *acpsdk.RequestError
		require.ErrorAs(t, err, &re, cwd)
		assert.Equal(t, -32602, re.Code, cwd)
		assert.Contains(t, err.Error(), want, cwd)
		_, err = conn.LoadSession(t.Context(), acpsdk.LoadSessionRequest{SessionId: "0123", Cwd: cwd, McpServers: []acpsdk.McpServer{}})
		require.ErrorAs(t, err, &re, cwd)
		assert.Equal(t, -32602, re.Code, cwd)
	}
	code, errOut := stop()
	assert.Equal(t, 0, code, "stderr: %s", errOut)
}

// A project's "tools" narrows a session opened in it, as it narrows run
// there, unless --tools chose the tools. (The active tools are what the
// model is offered; a call of another tool is the loop's to refuse.)
func TestACPSessionTools(t *testing.T) {
	narrow := settings{Settings: agent.Settings{Tools: []string{"read", "ls"}}}
	def := strings.Join(tools.DefaultActive, ",")
	for _, c := range []struct {
		name      string
		g         globalOptions
		o         runOptions
		s         settings
		want      string
		wantNamed bool
	}{
		{"the project's", globalOptions{}, runOptions{tools: def}, narrow, "read,ls", true},
		{"--tools wins", globalOptions{}, runOptions{tools: "read,write", toolsGiven: true}, narrow, "read,write", true},
		{"the start directory's settings do not", globalOptions{fromSettings: []string{"tools"}}, runOptions{tools: "read,write", toolsGiven: true}, narrow, "read,ls", true},
		{"none: the defaults", globalOptions{fromSettings: []string{"tools"}}, runOptions{tools: "read", toolsGiven: true}, settings{}, def, false},
	} {
		got, named := c.g.sessionTools(&c.o, c.s)
		assert.Equal(t, c.want, got, c.name)
		assert.Equal(t, c.wantNamed, named, c.name)
	}
}

// End to end: a project whose "tools" leaves write out gets no write in a
// session opened there, wherever pi-remote acp started.
func TestACPSessionToolsNarrowedByItsProject(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("PI_REMOTE_MODEL", "")
	t.Chdir(t.TempDir())
	project := t.TempDir()
	writeJSON(t, filepath.Join(project, ".pi-remote", "settings.json"), `{"tools":["read"]}`)
	script := filepath.Join(t.TempDir(), "s.json")
	require.NoError(t, os.WriteFile(script, []byte(`{"turns":[
		{"toolCalls":[{"id":"w1","name":"write","arguments":{"path":"made.txt","content":"here\n"}}]},
		{"text":"Tried."}
	]}`), 0o644))
	conn, _, stop := acpServer(t, "--model", "scripted/"+script, "acp")
	s, err := conn.NewSession(t.Context(), acpsdk.NewSessionRequest{Cwd: project, McpServers: []acpsdk.McpServer{}})
	require.NoError(t, err)
	_, err = conn.Prompt(t.Context(), acpsdk.PromptRequest{SessionId: s.SessionId, Prompt: []acpsdk.ContentBlock{acpsdk.TextBlock("make it")}})
	require.NoError(t, err)
	code, errOut := stop()
	assert.Equal(t, 0, code, "stderr: %s", errOut)
	assert.NoFileExists(t, filepath.Join(project, "made.txt"), "the project's tools leave write out")
}
