package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pi-remote/pi-remote/agent"
	"github.com/pi-remote/pi-remote/llm"
	"github.com/pi-remote/pi-remote/loop"
	"github.com/pi-remote/pi-remote/printer"
	"github.com/pi-remote/pi-remote/session"
	"github.com/pi-remote/pi-remote/tui"
)

// The user's templates always; the project's only when the user trusts
// it, and never over the user's or a built-in command; the user's own
// skills.
func TestLoadSkillsAndTemplates(t *testing.T) {
	home, project := t.TempDir(), t.TempDir()
	t.Setenv("HOME", home)
	write := func(p, text string) {
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(text), 0o644))
	}
	write(filepath.Join(home, ".pi-remote", "prompts", "review.md"), "Mine: review $1.")
	write(filepath.Join(home, ".pi-remote", "prompts", "model.md"), "Shadows /model.")
	write(filepath.Join(home, ".pi-remote", "skills", "notes", "SKILL.md"), "---\nname: notes\ndescription: Takes notes.\n---\nBody.\n")
	write(filepath.Join(project, ".pi-remote", "prompts", "review.md"), "Theirs.")
	write(filepath.Join(project, ".pi-remote", "prompts", "ship.md"), "---\ndescription: Ship it\n---\nShip $@.")

	var warn bytes.Buffer
	mine, templates := loadSkillsAndTemplates(settings{loaded: agent.LoadedSettings{ProjectDir: project}}, &warn)
	require.Len(t, mine, 1)
	assert.Equal(t, "notes", mine[0].Name)
	require.Len(t, templates, 1)
	assert.Equal(t, "Mine: review $1.", templates[0].Body)
	assert.Contains(t, warn.String(), "pi-remote: not using the prompt templates in "+filepath.Join(project, ".pi-remote", "prompts")+", as you have not trusted the project")
	assert.Contains(t, warn.String(), "pi-remote: prompt template "+filepath.Join(home, ".pi-remote", "prompts", "model.md")+" is not used: /model is a built-in command")

	warn.Reset()
	_, templates = loadSkillsAndTemplates(settings{loaded: agent.LoadedSettings{ProjectDir: project, Trusted: true}}, &warn)
	require.Len(t, templates, 2)
	assert.Equal(t, "Mine: review $1.", templates[0].Body, "the user's own first")
	assert.Equal(t, "ship", templates[1].Name)
	assert.Equal(t, "Ship it", templates[1].Description)
	assert.Contains(t, warn.String(), "/review is "+filepath.Join(home, ".pi-remote", "prompts", "review.md"))
}

// The dumb terminal's line prompt offers the templates and skills too:
// /help lists them, and one's message is a run.
func TestLinePromptTemplates(t *testing.T) {
	dir := t.TempDir()
	model := llm.NewScripted(llm.ScriptTurn{Text: "Reviewed."})
	sess, err := session.Create(filepath.Join(dir, "s.jsonl"), session.Header{Host: "local", Cwd: dir})
	require.NoError(t, err)
	defer sess.Close()
	var stdout, stderr syncBuffer
	out := printer.New(&stdout, &stderr, nil, false, false)
	a := &runAgent{out: out, errw: &stderr, path: sess.Path()}
	a.s = agent.New(agent.Options{Config: loop.Config{Model: model}, Model: agent.ModelInfo{Window: agent.DefaultWindow}, File: sess, Emit: out.Emit})
	c := tui.Commands{
		Prompts: func() []tui.PromptCommand { return []tui.PromptCommand{{Name: "review", Description: "Review a file"}} },
		Expand: func(name, args string) (string, bool) {
			return "Review " + args + " for bugs.", name == "review"
		},
	}
	in := strings.NewReader("/help\n/review src/a.go\n/reveiw x\n")
	require.NoError(t, a.interactive(t.Context(), iostreams{in: in, out: &stdout, err: &stderr}, make(chan os.Signal), lineCommands(a, c, &runOptions{})))
	assert.Regexp(t, `/review \[args\] +Review a file`, stderr.String())
	assert.Contains(t, stderr.String(), "unknown command /reveiw")
	var prompts []string
	for _, m := range a.s.Messages() {
		if u, ok := m.(*loop.UserMessage); ok {
			prompts = append(prompts, u.Content.Text())
		}
	}
	assert.Equal(t, []string{"Review src/a.go for bugs."}, prompts)
}

// In a real terminal: /review (a user template) and /skill:pdf (a skill
// of the working directory) send their messages to the model; /hotkeys
// lists both; an unknown /NAME sends nothing.
func TestInteractiveTemplatesAndSkills(t *testing.T) {
	dir, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	home := t.TempDir()
	write := func(p, text string) {
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(text), 0o644))
	}
	write(filepath.Join(home, ".pi-remote", "prompts", "review.md"), "---\ndescription: Review a file for bugs\n---\nReview $1 for bugs.\n")
	skill := filepath.Join(dir, ".agents", "skills", "pdf", "SKILL.md")
	write(skill, "---\nname: pdf\ndescription: Fills PDF forms.\n---\nRun scripts/fill.py.\n")
	scriptDir, err := os.MkdirTemp("", "tpl")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(scriptDir) })
	script := filepath.Join(scriptDir, "s.json")
	write(script, `{"turns":[{"text":"Reviewed it."},{"text":"Filled it."}]}`)
	file := filepath.Join(t.TempDir(), "s.jsonl")
	tm := startTerminal(t, 120, 30, []string{"HOME=" + home, "PI_REMOTE_MODEL="}, "--cwd", dir, "run", "--model", "scripted/"+script, "--session", file)
	tm.WaitFor("scripted/")

	tm.Type("/hotkeys")
	tm.Keys("Enter")
	tm.WaitFor("Prompt templates and skills")
	screen := tm.Screen()
	assert.Regexp(t, `/review \[args\] +Review a file for bugs`, screen)
	assert.Regexp(t, `/skill:pdf \[args\] +Fills PDF forms.`, screen)

	tm.Type("/review src/a.go")
	tm.Keys("Enter")
	tm.WaitFor("Reviewed it.")
	tm.WaitGone("working —")
	tm.Type("/skill:pdf form.pdf")
	tm.Keys("Enter")
	tm.WaitFor("Filled it.")
	tm.WaitGone("working —")
	tm.Type("/reveiw x")
	tm.Keys("Enter")
	tm.WaitFor("unknown command /reveiw")
	tm.Keys("C-d")

	_, entries, err := session.Branch(file)
	require.NoError(t, err)
	var sent []string
	for _, e := range entries {
		if u, ok := e.Message.(*loop.UserMessage); ok {
			sent = append(sent, u.Content.Text())
		}
	}
	assert.Equal(t, []string{
		"Review src/a.go for bugs.",
		"Use the skill \"pdf\" (" + skill + " on host \"local\"). Paths in it are relative to " + filepath.Dir(skill) + ".\n\nRun scripts/fill.py.\n\nform.pdf\n",
	}, sent)
}
