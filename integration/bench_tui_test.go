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
// 800 messages) in the same run: the long session should cost about what the
// empty one does, and its median stay well under 50 ms. (This figure was
// a bound inside TestTerminalUIKeystrokeLatency, which a loaded machine
// could miss; the test, TestTerminalUIKeystrokesInALongSession, keeps the
// behaviour.) Reports ms per key (median) for each and their ratio, and
// writes a markdown report to $PI_REMOTE_BENCH_TUI_OUT (default stdout).
func BenchmarkTerminalUIKeystroke(b *testing.B) {
	for b.Loop() {
		runKeystrokeBenchmark(b)
	}
}

func runKeystrokeBenchmark(b *testing.B) {
	rows := []struct {
		label string
		pairs int
	}{
		{"empty session (the baseline)", 0},
		{"long session: 500 messages", 250},
		{"long session: 800 messages", 400},
	}
	var report strings.Builder
	fmt.Fprintln(&report, "## A keystroke to the screen (ms; 20 keys, one at a time)")
	fmt.Fprintln(&report)
	fmt.Fprintln(&report, "| session | median | slowest | ratio |")
	fmt.Fprintln(&report, "|---|---|---|---|")
	var base, median float64
	for i, r := range rows {
		took := keystrokeTimes(b, r.pairs)
		median = took[len(took)/2].Seconds() * 1000
		if i == 0 {
			base = median
		}
		fmt.Fprintf(&report, "| %s | %.1f | %.1f | %.1f× |\n", r.label, median, took[len(took)-1].Seconds()*1000, median/base)
		b.ReportMetric(median, fmt.Sprintf("ms/key-p50-%d-messages", 2*r.pairs))
	}
	b.ReportMetric(median/base, "long/empty")
	out := os.Getenv("PI_REMOTE_BENCH_TUI_OUT")
	if out == "" {
		fmt.Print(report.String())
		return
	}
	if err := os.WriteFile(out, []byte(report.String()), 0o644); err != nil {
		b.Fatal(err)
	}
}
