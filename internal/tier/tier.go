// Package tier sorts tests into the suite's three tiers (README, "Tests"):
//
//   - fast, go test -short: the inner loop. Each package's own checks, the
//     conformance suite once per backend kind, the host's server program under dash, and a
//     few end-to-end runs over sshd.
//   - default, bash scripts/test.sh (what CI runs): everything that guards
//     behaviour, with one cell per axis of the host matrix and stress loops
//     at a size that finds what they guard.
//   - soak, PI_REMOTE_SOAK=1 on top of the default tier: the long soaks at
//     full length and the whole host matrix, before a release and with the
//     benchmarks (scripts/bench.sh).
package tier

import (
	"flag"
	"os"
	"strconv"
	"testing"
)

// SoakVariable is the environment variable that turns the soak tier on
// (set to 1).
const SoakVariable = "PI_REMOTE_SOAK"

// Default skips t in the fast tier: it runs in the default tier only.
func Default(t testing.TB) {
	t.Helper()
	if testing.Short() {
		t.Skip("default tier: runs without -short (bash scripts/test.sh, CI)")
	}
}

// Soak skips t unless the soak tier is on (PI_REMOTE_SOAK=1). CI does
// not set it: there the skip is intended, not a missing dependency.
func Soak(t testing.TB) {
	t.Helper()
	if !Soaking() {
		t.Skip("soak tier: runs with " + SoakVariable + "=1 (scripts/bench.sh sets it)")
	}
}

// Soaking says whether the soak tier is on.
func Soaking() bool { return os.Getenv(SoakVariable) == "1" }

// Rounds is how many rounds a stress loop runs in the current tier: fast
// in the fast tier, soak in the soak tier, normal otherwise.
func Rounds(fast, normal, soak int) int {
	switch {
	case Soaking():
		return soak
	case testing.Short():
		return fast
	}
	return normal
}

// Parallel sets -test.parallel to n unless the command line gave one: a
// package whose tests mostly wait (for sshd, for sleeps on the host, for
// slow links) runs more of them at once than the default, GOMAXPROCS,
// which is 2 on the machines this suite runs on. Call it in TestMain,
// after flag.Parse.
func Parallel(n int) {
	given := false
	flag.Visit(func(f *flag.Flag) { given = given || f.Name == "test.parallel" })
	if !given {
		flag.Set("test.parallel", strconv.Itoa(n))
	}
}
