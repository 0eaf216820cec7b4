// Package tier sorts tests into the suite's tiers (README, "Tests"). The
// fast tier, go test -short, is the inner loop: each package's own checks,
// the conformance suite once per backend kind, the host's server program
// under dash, and a few end-to-end runs over sshd. The default tier (scripts/test.sh, which
// CI runs) is everything.
package tier

import (
	"flag"
	"strconv"
	"testing"
)

// Default skips t in the fast tier: it runs in the default tier only.
func Default(t testing.TB) {
	t.Helper()
	if testing.Short() {
		t.Skip("default tier: runs without -short (bash scripts/test.sh, CI)")
	}
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
