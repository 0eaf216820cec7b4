package tui

import (
	"fmt"
	"strings"
	"testing"

	"github.com/charmbracelet/x/ansi"
	"github.com/stretchr/testify/assert"

	"github.com/pi-remote/pi-remote/agent"
	"github.com/pi-remote/pi-remote/loop"
)

// The footer at each width: what matters most stays when it is narrow.
func TestFooterGolden(t *testing.T) {
	states := []footer{
		{hosts: []hostState{{"devbox", true}}, cwd: "/home/alice/src/project", branch: "main", model: "anthropic/claude-sonnet-4-5", thinking: "low",
			usage: agent.Totals{Usage: loop.Usage{Input: 12_300, Output: 1_250, CacheRead: 40_000}, Cost: 0.0421}, context: 52_000, window: 200_000, auto: true},
		{hosts: []hostState{{"devbox", true}, {"gpu", false}}, cwd: "/srv", model: "openai/gpt-4o-mini",
			usage: agent.Totals{Usage: loop.Usage{Input: 900, Output: 80}}, context: 100_000, window: 128_000},
		{hosts: []hostState{{"local", true}}, cwd: "/tmp", model: "openai/qwen3", context: 7_800, window: 8_000, auto: true},
	}
	th := newTheme(false)
	for _, w := range widths {
		var out []string
		for _, f := range states {
			line := f.view(w, th)
			assert.LessOrEqual(t, ansi.StringWidth(line), w)
			out = append(out, line)
		}
		golden(t, fmt.Sprintf("footer-%d.golden", w), strings.Join(out, "\n")+"\n")
	}
	// Colour marks a context past 70 % and past 90 %.
	color := newTheme(true)
	assert.Contains(t, states[1].view(120, color), "\x1b[", "78 %: the warning colour")
	assert.NotEqual(t, states[1].view(120, color), states[2].view(120, color))
	assert.NotContains(t, states[0].view(120, th), "\x1b[", "no colour without it")
}

// The footer on its own: a host's link, the default host first, and the
// status line (a notice before what the keys do while a run goes on).
func TestFooterState(t *testing.T) {
	th := newTheme(false)
	f := footer{hosts: []hostState{{"dev", true}, {"gpu", true}, {"ci", true}}}
	f.setLink("gpu", false)
	assert.Equal(t, "dev ● gpu ◌ reconnecting ci ●", strings.Split(f.view(200, th), " · ")[0])
	f.setLink("gpu", true)
	f.setDefaultHost("ci")
	assert.Equal(t, []hostState{{"ci", true}, {"dev", true}, {"gpu", true}}, f.hosts)
	f.setDefaultHost("nowhere")
	assert.Equal(t, []hostState{{"ci", true}, {"dev", true}, {"gpu", true}}, f.hosts, "an unknown host changes nothing")

	assert.Equal(t, "", f.status(false, "⠋", th))
	assert.Equal(t, "⠋ working — Esc aborts, Enter steers, Alt+Enter queues a follow-up", f.status(true, "⠋", th))
	f.notice = "aborting…"
	assert.Equal(t, "aborting…", f.status(true, "⠋", th))

	f.setUsage(agent.Totals{Cost: 0.5}, 250, 1000)
	assert.Contains(t, f.view(200, th), "ctx 25% of 1k")
	assert.Contains(t, f.view(200, th), "$0.500")
}
