package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"charm.land/glamour/v2/styles"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pi-remote/pi-remote/agent"
	"github.com/pi-remote/pi-remote/env"
	"github.com/pi-remote/pi-remote/internal/tmuxtest"
	"github.com/pi-remote/pi-remote/llm"
	"github.com/pi-remote/pi-remote/loop"
	"github.com/pi-remote/pi-remote/ops/local"
	"github.com/pi-remote/pi-remote/printer"
	"github.com/pi-remote/pi-remote/session"
	"github.com/pi-remote/pi-remote/tools"
	"github.com/pi-remote/pi-remote/tui"
)

// syncBuffer is a bytes.Buffer safe for a writer and a polling reader.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// The prompt loop: each line is a run in one session; Ctrl-C aborts the
// running command and returns to the prompt; end of input exits.
func TestInteractiveLoop(t *testing.T) {
	dir := t.TempDir()
	marker := fmt.Sprintf("300.%d", time.Now().UnixNano()%1000000007)
	model := llm.NewScripted(
		llm.ScriptTurn{Text: "First answer."},
		llm.ScriptTurn{ToolCalls: []llm.ScriptToolCall{{ID: "c1", Name: "bash", Arguments: json.RawMessage(`{"command":"sleep ` + marker + `"}`)}}},
		llm.ScriptTurn{Text: "Third answer."},
		llm.ScriptTurn{Text: "## Goal\nanswer three prompts"}, // the summary /compact asks for
	)
	e := env.New(local.New(), env.Options{Cwd: dir, Home: dir})
	defs := tools.Definitions(e, tools.Options{})
	sess, err := session.Create(filepath.Join(dir, "s.jsonl"), session.Header{Host: "local", Cwd: dir})
	require.NoError(t, err)
	defer sess.Close()
	var stdout, stderr syncBuffer
	byName := map[string]tools.Definition{}
	for _, d := range defs {
		byName[d.Name] = d
	}
	out := printer.New(&stdout, &stderr, byName, false, false)
	a := &runAgent{out: out, errw: &stderr, path: sess.Path()}
	a.s = agent.New(agent.Options{Config: loop.Config{Model: model, Tools: tools.WrapAll(defs)}, Model: agent.ModelInfo{Window: agent.DefaultWindow}, File: sess, Emit: out.Emit})

	inR, inW := io.Pipe()
	sigs := make(chan os.Signal, 1)
	done := make(chan error, 1)
	go func() {
		done <- a.interactive(t.Context(), iostreams{in: inR, out: &stdout, err: &stderr}, sigs, lineCommands(a, tui.Commands{}, &runOptions{}))
	}()

	io.WriteString(inW, "one\n")
	require.Eventually(t, func() bool { return strings.Contains(stdout.String(), "First answer.") }, 5*time.Second, 10*time.Millisecond)
	io.WriteString(inW, "two\n")
	require.Eventually(t, func() bool { return procRunning(marker) }, 5*time.Second, 10*time.Millisecond, "the command runs")
	sigs <- os.Interrupt
	require.Eventually(t, func() bool { return strings.Contains(stderr.String(), "aborting") }, 5*time.Second, 10*time.Millisecond)
	require.Eventually(t, func() bool { return !procRunning(marker) }, 5*time.Second, 20*time.Millisecond, "the aborted command is killed")
	io.WriteString(inW, "three\n")
	require.Eventually(t, func() bool { return strings.Contains(stdout.String(), "Third answer.") }, 5*time.Second, 10*time.Millisecond)
	io.WriteString(inW, "/compact keep the answers\n")
	require.Eventually(t, func() bool { return strings.Contains(stderr.String(), "compacted: ") }, 5*time.Second, 10*time.Millisecond)
	inW.Close()
	select {
	case err := <-done:
		assert.NoError(t, err, "end of input exits cleanly")
	case <-time.After(5 * time.Second):
		t.Fatal("the loop did not end at end of input")
	}

	_, entries, err := session.Branch(sess.Path())
	require.NoError(t, err)
	var prompts []string
	for _, e := range entries {
		if u, ok := e.Message.(*loop.UserMessage); ok {
			prompts = append(prompts, u.Content.Text())
		}
	}
	assert.Equal(t, []string{"one", "two", "three"}, prompts, "one session across the loop")
	_, saved, err := session.Open(sess.Path())
	require.NoError(t, err)
	assert.Equal(t, "## Goal\nanswer three prompts", saved.Summary, "/compact stored its summary")
}

// procRunning says whether a process with "sleep marker" in its command
// line exists (read from /proc).
func procRunning(marker string) bool {
	dirs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, d := range dirs {
		b, err := os.ReadFile(d)
		if err == nil && strings.Contains(strings.ReplaceAll(string(b), "\x00", " "), "sleep "+marker) {
			return true
		}
	}
	return false
}

// asMain, set in the environment, makes the test binary pi-remote itself
// (TestMain): a test can run it in a real terminal.
const asMain = "PI_REMOTE_TEST_AS_MAIN"

func TestMain(m *testing.M) {
	if os.Getenv(asMain) == "1" {
		os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}

// startTerminal runs pi-remote (this test binary as main) with args in a
// width×height terminal, with env added to the environment.
func startTerminal(t *testing.T, width, height int, env []string, args ...string) *tmuxtest.Terminal {
	t.Helper()
	return tmuxtest.Start(t, width, height, append(append(append([]string{asMain + "=1"}, env...), os.Args[0]), args...)...)
}

// In ask mode, the terminal asks before a write and shows how it would
// change the file. Denied with a reason, the file is untouched and the model reads
// the reason in the call's result; allowed "always", the same call runs
// again without asking, and /session lists the rule the answer added.
func TestInteractiveApproval(t *testing.T) {
	dir := t.TempDir()
	notes := filepath.Join(dir, "notes.txt")
	require.NoError(t, os.WriteFile(notes, []byte("old notes\n"), 0o644))
	write := func(id, content string) string {
		return `{"toolCalls":[{"id":"` + id + `","name":"write","arguments":{"path":"notes.txt","content":"` + content + `"}}]}`
	}
	// (A short path: the footer drops the model's name, which names the
	// script, when it does not fit, and the test waits for that name.)
	scriptDir, err := os.MkdirTemp("", "ask")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(scriptDir) })
	script := filepath.Join(scriptDir, "s.json")
	require.NoError(t, os.WriteFile(script, []byte(`{"turns":[`+
		write("c1", `fresh\nnotes \u001b[2J\n`)+`,{"text":"Understood, left alone."},`+
		write("c2", `kept\n`)+`,`+write("c3", `kept\n`)+`,{"text":"Wrote it twice."}]}`), 0o644))
	file := filepath.Join(t.TempDir(), "s.jsonl")
	tm := startTerminal(t, 120, 30, []string{"HOME=" + t.TempDir(), "PI_REMOTE_MODEL="},
		"--cwd", dir, "--permissions", "ask", "run", "--model", "scripted/"+script, "--session", file)
	tm.WaitFor("scripted/")

	tm.Type("write the notes")
	tm.Keys("Enter")
	tm.WaitFor("approve write on local?")
	screen := tm.Screen()
	assert.Contains(t, screen, "host local asks before write")
	assert.Contains(t, screen, "the file's content would change:")
	assert.Contains(t, screen, "- old notes")
	assert.Contains(t, screen, "+ fresh")
	assert.Contains(t, screen, "+ notes ^[[2J", "the model's escape sequence is shown as text")
	assert.Contains(t, screen, "y allow once · a always (this session) · n deny… · Esc deny")
	tm.Keys("n")
	tm.WaitFor("reason ›")
	tm.Type("keep the old notes")
	tm.Keys("Enter")
	tm.WaitFor("Understood, left alone.")
	b, err := os.ReadFile(notes)
	require.NoError(t, err)
	assert.Equal(t, "old notes\n", string(b), "denied: the file is untouched")
	_, entries, err := session.Branch(file)
	require.NoError(t, err)
	var denied *loop.ToolResultMessage
	for _, e := range entries {
		if r, ok := e.Message.(*loop.ToolResultMessage); ok && r.ToolCallID == "c1" {
			denied = r
		}
	}
	require.NotNil(t, denied, "the call's result is in the session, for the next model request")
	assert.True(t, denied.IsError)
	assert.Contains(t, denied.Content.Text(), "Denied by the user: keep the old notes")

	tm.Type("write them now")
	tm.Keys("Enter")
	tm.WaitFor("approve write on local?")
	tm.Keys("a")
	tm.WaitFor("Wrote it twice.")
	b, err = os.ReadFile(notes)
	require.NoError(t, err)
	assert.Equal(t, "kept\n", string(b))
	// (Had the second call asked, nobody would have answered.)
	all := tm.Scrollback()
	assert.Equal(t, 2, strings.Count(all, "✓ write notes.txt"), "both calls ran")
	assert.Equal(t, 1, strings.Count(all, "allowed for the rest of this session: write"), "asked once:\n%s", all)

	tm.WaitGone("working —")
	tm.Type("/session")
	tm.Keys("Enter")
	tm.WaitFor("(this session)")
	screen = tm.Screen()
	assert.Contains(t, screen, "local  ask        (--permissions)")
	canonical, err := filepath.EvalSymlinks(notes)
	require.NoError(t, err)
	assert.Contains(t, screen, "allow  local:write("+filepath.ToSlash(canonical)+")  (this session)")
	tm.Keys("C-d")
}

// In a real terminal, a prompt longer than the terminal is wide is shown
// whole, on as many rows as it wraps onto, and Up inside it moves to the
// row above; only from its first row does Up recall an earlier prompt.
func TestInteractiveWrappedEditor(t *testing.T) {
	dir, home := t.TempDir(), t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(home, ".pi-remote"), 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(home, ".pi-remote", "history.jsonl"), []byte(`"an earlier prompt"`+"\n"), 0o600))
	scriptDir, err := os.MkdirTemp("", "wrap")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(scriptDir) })
	script := filepath.Join(scriptDir, "s.json")
	require.NoError(t, os.WriteFile(script, []byte(`{"turns":[{"text":"unused"}]}`), 0o644))
	tm := startTerminal(t, 100, 30, []string{"HOME=" + home, "PI_REMOTE_MODEL="},
		"--cwd", dir, "run", "--model", "scripted/"+script, "--session", filepath.Join(t.TempDir(), "s.jsonl"))
	tm.WaitFor("scripted/")
	var words []string
	for i := range 30 {
		words = append(words, fmt.Sprintf("w%03d", i))
	}
	tm.Type(strings.Join(words, " ")) // 149 columns
	tm.WaitFor("w029")
	assert.Contains(t, tm.Screen(), "› w000 w001", "the line's start is shown with its end")
	tm.Keys("Up")
	tm.Type("X")
	tm.WaitFor("X")
	screen := tm.Screen()
	assert.NotContains(t, screen, "an earlier prompt", "Up inside the line stays in it")
	assert.Contains(t, screen, "w029", "the line is still there")
	tm.Keys("Home", "Up")
	tm.WaitFor("an earlier prompt")
	tm.Keys("C-d")
}

// Made narrower, a terminal rewraps the prompt being written; the
// redrawn editor leaves no copy of its old rows above it, to scroll into
// the scrollback as if the prompt had been sent.
func TestInteractiveResizeLeavesNoCopy(t *testing.T) {
	dir := t.TempDir()
	scriptDir, err := os.MkdirTemp("", "wrap")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(scriptDir) })
	script := filepath.Join(scriptDir, "s.json")
	var answer []string
	for i := range 30 {
		answer = append(answer, fmt.Sprintf("answer line %d", i))
	}
	turn, err := json.Marshal(map[string]any{"turns": []any{map[string]string{"text": strings.Join(answer, "\n\n")}}})
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(script, turn, 0o644))
	tm := startTerminal(t, 100, 20, []string{"HOME=" + t.TempDir(), "PI_REMOTE_MODEL="},
		"--cwd", dir, "run", "--model", "scripted/"+script, "--session", filepath.Join(t.TempDir(), "s.jsonl"))
	tm.WaitFor("scripted/")
	// An answer that fills the screen: the live part is at its bottom, as
	// it is once a conversation is under way.
	tm.Type("go")
	tm.Keys("Enter")
	tm.WaitFor("answer line 28")
	var words []string
	for i := range 30 {
		words = append(words, fmt.Sprintf("w%03d", i))
	}
	tm.Type(strings.Join(words, " ")) // 149 columns: two rows
	tm.WaitFor("w029")
	for _, width := range []int{70, 50} {
		tm.Tmux("resize-window", "-t", "main", "-x", fmt.Sprint(width), "-y", "20")
		// Redrawn: the terminal's rewrapped rows fill it to the last
		// column, the program's never do.
		require.Eventually(t, func() bool {
			screen := tm.Screen()
			i := strings.LastIndex(screen, "› w000")
			if i < 0 || !strings.Contains(screen[i:], "w029") {
				return false
			}
			for _, l := range strings.Split(screen[i:], "\n") {
				if utf8.RuneCountInString(l) >= width {
					return false
				}
			}
			return true
		}, 5*time.Second, 20*time.Millisecond, "redrawn at %d columns", width)
		require.Eventually(t, func() bool { return strings.Count(tm.Scrollback(), "w000") == 1 }, 5*time.Second, 20*time.Millisecond,
			"at %d columns the prompt is on the screen once and in the scrollback never:\n%s", width, tm.Scrollback())
	}
	tm.Keys("C-d")
}

// Tools running in parallel never make the live part taller than the
// terminal: the scrollback gets each finished box once, in the order the
// model asked for them (the first call ends last here), and no copy of
// the live part (the working line, the footer).
func TestInteractiveParallelTools(t *testing.T) {
	for _, tc := range []struct {
		name          string
		tools         int
		width, height int
	}{
		{"4 tools at 80x24", 4, 80, 24},
		{"3 tools at 80x24", 3, 80, 24},
		{"8 tools at 80x30", 8, 80, 30},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			var calls []string
			for i := range tc.tools {
				// Each call prints its name and a count every half second;
				// the first runs longest. (Its last line, "A-done", is not
				// in the call as written.)
				n := string(rune('A' + i))
				command := fmt.Sprintf("n=%s; i=0; while [ $i -lt %d ]; do echo $n$i; i=$((i+1)); sleep 0.5; done; echo $n-done", n, 2+2*(tc.tools-i))
				arg, err := json.Marshal(map[string]string{"command": command})
				require.NoError(t, err)
				calls = append(calls, fmt.Sprintf(`{"id":"c%d","name":"bash","arguments":%s}`, i, arg))
			}
			scriptDir, err := os.MkdirTemp("", "par")
			require.NoError(t, err)
			t.Cleanup(func() { os.RemoveAll(scriptDir) })
			script := filepath.Join(scriptDir, "s.json")
			require.NoError(t, os.WriteFile(script, []byte(`{"turns":[{"toolCalls":[`+strings.Join(calls, ",")+`]},{"text":"All of them finished."}]}`), 0o644))
			tm := startTerminal(t, tc.width, tc.height, []string{"HOME=" + t.TempDir(), "PI_REMOTE_MODEL="},
				"--cwd", dir, "run", "--model", "scripted/"+script, "--session", filepath.Join(t.TempDir(), "s.jsonl"))
			tm.WaitFor("scripted/")

			tm.Type("run the loops")
			tm.Keys("Enter")
			tm.WaitFor("All of them finished.")
			// (The run's end redraws the live part without its working
			// line: then the scrollback is whole.)
			require.Eventually(t, func() bool { return !strings.Contains(tm.Screen(), "Esc aborts") }, 10*time.Second, 20*time.Millisecond)
			all := tm.Scrollback()
			assert.Equal(t, 0, strings.Count(all, "Esc aborts"), "copies of the working line:\n%s", all)
			assert.Equal(t, 1, strings.Count(all, "ctx 0%"), "copies of the footer:\n%s", all)
			assert.Equal(t, 1, strings.Count(all, "› run the loops"), "the prompt stays in the scrollback, once")
			assert.Equal(t, tc.tools, strings.Count(all, "✓ $ n="), "each box once, with its call:\n%s", all)
			last := -1
			for i := range tc.tools {
				done := string(rune('A'+i)) + "-done"
				assert.Equal(t, 1, strings.Count(all, done), "%s: each box once, whole:\n%s", done, all)
				at := strings.Index(all, done)
				assert.Greater(t, at, last, "%s: boxes in the order of the calls:\n%s", done, all)
				last = at
			}
			tm.Keys("C-d")
		})
	}
}

// Ctrl+O shows all tool output in place: the running box grows on the
// screen, goes to the scrollback in full, and pressing it again prints
// nothing again.
func TestInteractiveCtrlO(t *testing.T) {
	dir := t.TempDir()
	command := `i=0; while [ $i -lt 12 ]; do printf 'row%02d\n' $i; i=$((i+1)); sleep 0.25; done`
	arg, err := json.Marshal(map[string]string{"command": command})
	require.NoError(t, err)
	scriptDir, err := os.MkdirTemp("", "ctrlo")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(scriptDir) })
	script := filepath.Join(scriptDir, "s.json")
	require.NoError(t, os.WriteFile(script, []byte(`{"turns":[{"toolCalls":[{"id":"c1","name":"bash","arguments":`+string(arg)+`}]},{"text":"Counted."}]}`), 0o644))
	tm := startTerminal(t, 80, 30, []string{"HOME=" + t.TempDir(), "PI_REMOTE_MODEL="},
		"--cwd", dir, "run", "--model", "scripted/"+script, "--session", filepath.Join(t.TempDir(), "s.jsonl"))
	tm.WaitFor("scripted/")

	tm.Type("count the rows")
	tm.Keys("Enter")
	tm.WaitFor("row07")
	assert.NotContains(t, tm.Screen(), "row00", "folded: the last lines")
	tm.Keys("C-o")
	tm.WaitFor("row00")
	tm.WaitFor("Counted.")
	all := tm.Scrollback()
	assert.Equal(t, 1, strings.Count(all, "row00"), "the box in full, once:\n%s", all)
	assert.Equal(t, 1, strings.Count(all, "row11"), "the box in full, once:\n%s", all)
	tm.Keys("C-o")
	tm.WaitFor("tool output folded")
	tm.Keys("C-o")
	tm.WaitFor("tool output in full")
	all = tm.Scrollback()
	assert.Equal(t, 1, strings.Count(all, "row00"), "nothing printed again:\n%s", all)
	tm.Keys("C-d")
}

// In a real terminal, !COMMAND runs on the host and its output reaches
// the model with the next prompt; !!COMMAND's does not; Ctrl+T, Ctrl+L and
// Shift+Tab act as /hotkeys says.
func TestInteractiveShellAndKeys(t *testing.T) {
	dir := t.TempDir()
	scriptDir, err := os.MkdirTemp("", "sh")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(scriptDir) })
	script := filepath.Join(scriptDir, "s.json")
	require.NoError(t, os.WriteFile(script, []byte(`{"turns":[{"text":"Seen it."}]}`), 0o644))
	file := filepath.Join(t.TempDir(), "s.jsonl")
	tm := startTerminal(t, 100, 30, []string{"HOME=" + t.TempDir(), "PI_REMOTE_MODEL="},
		"--cwd", dir, "run", "--model", "scripted/"+script, "--session", file)
	tm.WaitFor("scripted/")

	tm.Type("!echo from-the-shell-$((6*7))")
	tm.Keys("Enter")
	tm.WaitFor("from-the-shell-42")
	tm.WaitFor("output goes with your next prompt")
	tm.Type("!!echo kept-out-$((2+2))")
	tm.Keys("Enter")
	tm.WaitFor("kept-out-4")
	tm.Type("look at that")
	tm.Keys("Enter")
	tm.WaitFor("Seen it.")
	_, entries, err := session.Branch(file)
	require.NoError(t, err)
	var prompt string
	for _, e := range entries {
		if u, ok := e.Message.(*loop.UserMessage); ok {
			prompt = u.Content.Text()
		}
	}
	assert.Contains(t, prompt, "echo from-the-shell-$((6*7))")
	assert.Contains(t, prompt, "from-the-shell-42")
	assert.NotContains(t, prompt, "kept-out")
	assert.True(t, strings.HasSuffix(prompt, "look at that"), prompt)

	tm.WaitGone("working —") // (Shift+Tab and Ctrl+L wait for the run's end)
	tm.Keys("S-Tab")
	tm.WaitFor("thinking: low")
	tm.Keys("C-t")
	tm.WaitFor("thinking shown")
	tm.Keys("C-l")
	tm.WaitFor("model (now scripted/")
	tm.Keys("Escape")
	tm.Keys("C-d")
}

// In a real terminal, Ctrl+P switches to the next model of the scoped
// list the settings' "enabledModels" give, as /model does, and the next
// prompt goes to it; --models, given, is the list instead.
func TestInteractiveCtrlPCyclesModels(t *testing.T) {
	dir, home := t.TempDir(), t.TempDir()
	scriptDir, err := os.MkdirTemp("", "cyc")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(scriptDir) })
	a, b := filepath.Join(scriptDir, "a.json"), filepath.Join(scriptDir, "b.json")
	require.NoError(t, os.WriteFile(a, []byte(`{"turns":[{"text":"Answered by A."}]}`), 0o644))
	require.NoError(t, os.WriteFile(b, []byte(`{"turns":[{"text":"Answered by B."}]}`), 0o644))
	writeJSON(t, filepath.Join(home, ".pi-remote", "settings.json"), `{"enabledModels": ["scripted/`+a+`", "scripted/`+b+`", "gpt-4o"]}`)
	env := []string{"HOME=" + home, "PI_REMOTE_MODEL=", "OPENAI_API_KEY="}
	tm := startTerminal(t, 120, 30, env, "--cwd", dir, "run", "--model", "scripted/"+a, "--session", filepath.Join(t.TempDir(), "s.jsonl"))
	tm.WaitFor("scripted/")
	tm.Keys("C-p")
	tm.WaitFor("model: scripted/" + b)
	tm.Type("who answers?")
	tm.Keys("Enter")
	tm.WaitFor("Answered by B.")
	tm.WaitGone("working —")
	tm.Keys("C-p")
	tm.WaitFor("model: scripted/" + a)
	tm.Keys("C-d")

	// The flag's list: one model, the one in use (gpt-4o has no key).
	tm = startTerminal(t, 120, 30, env, "--cwd", dir, "run", "--model", "scripted/"+a, "--models", "scripted/"+a+",gpt-4o", "--session", filepath.Join(t.TempDir(), "s.jsonl"))
	tm.WaitFor("scripted/")
	tm.Keys("C-p")
	tm.WaitFor("of the scoped list can be used; skipped: openai/gpt-4o — needs OPENAI_API_KEY")
	tm.Keys("C-d")
}

// In a real terminal, "theme" in the settings chooses the answer's
// colours: Glamour's dark style's heading and code colours with "dark",
// its light style's with "light", whatever the background; with "auto"
// the background the terminal reports (tmux answers OSC 11 with the
// pane's), dark when it reports none. (tmux's capture-pane -e keeps the
// escape sequences.) The answer's plain words keep the terminal's own
// colour in every case, and NO_COLOR leaves no colour or attribute at
// all.
func TestInteractiveTheme(t *testing.T) {
	scriptDir, err := os.MkdirTemp("", "theme")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(scriptDir) })
	script := filepath.Join(scriptDir, "s.json")
	require.NoError(t, os.WriteFile(script, []byte(`{"turns":[{"text":"## Theme probe\n\nPlain words and `+"`inline code`"+`.\n\nThe end."}]}`), 0o644))
	// answer is the answer's rows with their escape sequences, as a
	// terminal with background ("": one that does not say) shows them
	// with env (settings in a home of its own).
	answer := func(background string, env []string, settings string) string {
		t.Helper()
		home := t.TempDir()
		writeJSON(t, filepath.Join(home, ".pi-remote", "settings.json"), settings)
		env = append([]string{asMain + "=1", "HOME=" + home, "PI_REMOTE_MODEL="}, env...)
		tm := tmuxtest.StartOn(t, background, 100, 30, append(append(env, os.Args[0]),
			"--cwd", t.TempDir(), "run", "--model", "scripted/"+script, "--session", filepath.Join(t.TempDir(), "s.jsonl"))...)
		tm.WaitFor("scripted/")
		tm.Type("go")
		tm.Keys("Enter")
		tm.WaitFor("The end.")
		tm.WaitGone("working —")
		all := tm.ScrollbackEscapes()
		tm.Keys("C-d")
		start, end := strings.Index(all, "## Theme probe"), strings.Index(all, "The end.")
		require.True(t, start >= 0 && end > start, "%q", all)
		start = strings.LastIndex(all[:start], "\n") + 1
		return all[start:end]
	}
	fg := func(c *string) string { return "\x1b[38;5;" + *c + "m" }
	bg := func(c *string) string { return "\x1b[48;5;" + *c + "m" }
	dark, light := styles.DarkStyleConfig, styles.LightStyleConfig
	require.NotEqual(t, *dark.Heading.Color, *light.Heading.Color)
	require.NotEqual(t, *dark.Code.BackgroundColor, *light.Code.BackgroundColor)

	for _, tc := range []struct {
		name, background, theme string
		light                   bool
	}{
		{"dark", "", "dark", false},
		{"light", "", "light", true},
		{"dark on a light background", "colour255", "dark", false},
		{"light on a dark background", "colour234", "light", true},
		{"auto on a light background", "colour255", "auto", true},
		{"auto on a dark background", "colour234", "auto", false},
		{"auto where the terminal does not say", "", "auto", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want, not := dark, light
			if tc.light {
				want, not = light, dark
			}
			got := answer(tc.background, nil, `{"theme": "`+tc.theme+`"}`)
			assert.Contains(t, got, fg(want.Heading.Color)+"## Theme probe", "%q", got)
			assert.Contains(t, got, bg(want.Code.BackgroundColor), "%q", got)
			assert.NotContains(t, got, fg(not.Heading.Color)+"## Theme probe", "%q", got)
			assert.Contains(t, got, "\x1b[49m  Plain words and ", "the words in the terminal's own colours: %q", got)
		})
	}

	got := answer("colour255", []string{"NO_COLOR=1"}, `{"theme": "light"}`)
	assert.Contains(t, got, "Plain words and inline code.")
	assert.NotContains(t, got, "\x1b", "no escape sequence: %q", got)
}
