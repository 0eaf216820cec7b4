package integration

import (
	"fmt"
	"os"
	"strings"
	"testing"
)

// BenchmarkTerminalUIKeystroke measures how soon a keystroke reaches the
// screen in the terminal interface (keystrokeTimes: 20 keys, through
// tmux's control mode), on an empty session and on long ones (500 and
// 800 messages) in the same run, and at 80×24 on an empty session and
// with 8 tools running (bash loops printing every half second, redrawn
// as the keys are typed): the long session and the running tools should
// cost about what the empty session does, and their medians stay well
// under 50 ms. (This figure was a bound inside
// TestTerminalUIKeystrokeLatency, which a loaded machine could miss; the
// test, TestTerminalUIKeystrokesInALongSession, keeps the behaviour.)
// Reports ms per key (median) for each and their ratios to the first,
// and writes a markdown report to $PI_REMOTE_BENCH_TUI_OUT (default
// stdout).
func BenchmarkTerminalUIKeystroke(b *testing.B) {
	for b.Loop() {
		runKeystrokeBenchmark(b)
	}
}

func runKeystrokeBenchmark(b *testing.B) {
	rows := []struct {
		label  string
		metric string
		setup  keystrokeSetup
	}{
		{"empty session (the baseline)", "0-messages", keystrokeSetup{}},
		{"long session: 500 messages", "500-messages", keystrokeSetup{pairs: 250}},
		{"long session: 800 messages", "800-messages", keystrokeSetup{pairs: 400}},
		{"empty session at 80×24", "0-messages-80x24", keystrokeSetup{width: 80, height: 24}},
		{"8 tools running at 80×24", "8-tools-80x24", keystrokeSetup{tools: 8, width: 80, height: 24}},
	}
	var report strings.Builder
	fmt.Fprintln(&report, "## A keystroke to the screen (ms; 20 keys, one at a time)")
	fmt.Fprintln(&report)
	fmt.Fprintln(&report, "| session | median | slowest | ratio |")
	fmt.Fprintln(&report, "|---|---|---|---|")
	var base float64
	medians := map[string]float64{}
	for i, r := range rows {
		took := keystrokeTimes(b, r.setup)
		median := took[len(took)/2].Seconds() * 1000
		if i == 0 {
			base = median
		}
		medians[r.metric] = median
		fmt.Fprintf(&report, "| %s | %.1f | %.1f | %.1f× |\n", r.label, median, took[len(took)-1].Seconds()*1000, median/base)
		b.ReportMetric(median, "ms/key-p50-"+r.metric)
	}
	b.ReportMetric(medians["800-messages"]/base, "long/empty")
	b.ReportMetric(medians["8-tools-80x24"]/base, "tools/empty")
	out := os.Getenv("PI_REMOTE_BENCH_TUI_OUT")
	if out == "" {
		fmt.Print(report.String())
		return
	}
	if err := os.WriteFile(out, []byte(report.String()), 0o644); err != nil {
		b.Fatal(err)
	}
}
