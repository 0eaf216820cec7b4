package tui

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pi-remote/pi-remote/session"
)

// promptOptions offer a template /review and a skill /skill:pdf, as the
// workspace would, and a template that takes a built-in's name.
func promptOptions(expanded *[][2]string) Options {
	return Options{Commands: Commands{
		Prompts: func() []PromptCommand {
			return []PromptCommand{{Name: "review", Description: "Review a file \x1b]0;owned\x07"}, {Name: "skill:pdf", Description: "Fills PDF forms."}, {Name: "compact", Description: "shadowing"}}
		},
		Expand: func(name, args string) (string, bool) {
			*expanded = append(*expanded, [2]string{name, args})
			switch name {
			case "review":
				return "Review " + args + " for bugs.", true
			case "skill:pdf":
				return "PDF body\n\n" + args, true
			}
			return "", false
		},
	}}
}

func (h *harness) prompted(n int) []string {
	h.t.Helper()
	require.Eventually(h.t, func() bool { h.a.mu.Lock(); defer h.a.mu.Unlock(); return len(h.a.prompts) == n }, 5*time.Second, time.Millisecond)
	h.a.mu.Lock()
	defer h.a.mu.Unlock()
	return slices.Clone(h.a.prompts)
}

// /review src/a.go sends the template's message; /skill:pdf the skill's
// body with the words after it; an unknown /name sends nothing and says
// so; a template cannot take a built-in's name.
func TestPromptTemplatesAndSkills(t *testing.T) {
	var expanded [][2]string
	h := newHarness(t, promptOptions(&expanded))
	h.typeText("/review src/a.go")
	h.do(enter)
	assert.Equal(t, []string{"Review src/a.go for bugs."}, h.prompted(1))
	close(h.a.release)
	h.settle()

	h.typeText("/skill:pdf fill form.pdf")
	h.do(enter)
	assert.Equal(t, "PDF body\n\nfill form.pdf", h.prompted(2)[1])
	h.settle()

	h.typeText("/reveiw src/a.go")
	h.do(enter)
	h.settle()
	assert.Len(t, h.a.prompts, 2, "an unknown command is not sent")
	assert.Contains(t, strings.Join(h.printed, "\n"), "unknown command /reveiw: nothing was sent")

	h.typeText("/compact")
	h.do(enter)
	h.settle()
	assert.Equal(t, []string{""}, h.a.focus, "the built-in /compact ran")
	assert.Equal(t, [][2]string{{"review", "src/a.go"}, {"skill:pdf", "fill form.pdf"}}, expanded)
}

// While a run goes on, a template's message steers it (Alt+Enter: a
// follow-up), as typed text would.
func TestPromptTemplateWhileRunning(t *testing.T) {
	var expanded [][2]string
	h := newHarness(t, promptOptions(&expanded))
	h.typeText("go")
	h.do(enter)
	h.prompted(1)
	h.typeText("/review b.go")
	h.do(enter)
	h.typeText("/skill:pdf")
	h.do(altEnter)
	assert.Equal(t, []string{"Review b.go for bugs."}, h.a.steered)
	assert.Equal(t, []string{"PDF body\n\n"}, h.a.followUps)
	close(h.a.release)
	h.settle()
}

// Completion and /hotkeys show templates and skills with their
// descriptions, controls in them shown as text.
func TestPromptCommandsListed(t *testing.T) {
	var expanded [][2]string
	h := newHarness(t, promptOptions(&expanded))
	h.typeText("/rev")
	assert.Contains(t, h.view(), "▸ /review  [args] — Review a file ^[]0;owned^G")
	h.m.editor.clear()
	h.typeText("/skill")
	assert.Contains(t, h.view(), "/skill:pdf  [args] — Fills PDF forms.")
	h.m.editor.clear()
	h.typeText("/hotkeys")
	h.do(enter)
	out := strings.Join(h.printed, "\n")
	assert.Contains(t, out, "\nPrompt templates and skills (the message each sends goes to the model):\n")
	assert.Regexp(t, `/review \[args\] +Review a file \^\[\]0;owned\^G`, out)
	assert.Regexp(t, `/skill:pdf \[args\] +Fills PDF forms.`, out)
	assert.NotContains(t, out, "shadowing")
	assert.NotContains(t, out, "\x1b]0")
}

// BuiltinCommands names every command the terminal may offer.
func TestBuiltinCommandsAreAllNamed(t *testing.T) {
	all := Commands{
		SetModel: func(string) error { return nil }, SetThinking: func(string) error { return nil },
		Session: func() string { return "" }, Export: func(string) (string, error) { return "", nil },
		Hosts: func() string { return "" }, SetDefaultHost: func(string) error { return nil },
		Sessions: func() []Choice { return nil }, ForkPoints: func() []Choice { return nil },
		Resume: func(string) (Agent, string, error) { return nil, "", nil }, Fork: func(string) (Agent, string, error) { return nil, "", nil },
		New: func() (Agent, string, error) { return nil, "", nil }, Jobs: func(int) string { return "" },
		Tree: func() ([]session.Entry, string, error) { return nil, "", nil }, Navigate: func(string) error { return nil },
		MCP: func() string { return "" },
	}
	h := newHarness(t, Options{Commands: all})
	var names []string
	for name := range h.m.commands() {
		names = append(names, name)
	}
	slices.Sort(names)
	assert.Equal(t, BuiltinCommands(), names)
}
