//go:build unix

package agent

import (
	"context"
	"os/exec"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// A hook that leaves a process holding its stdout and stderr (a daemon
// in a session of its own, out of the hook's process group) does not
// hold the call past the hook's exit and the short wait for its output;
// what it said before it exited still decides.
func TestHookDaemonHoldingItsOutput(t *testing.T) {
	if _, err := exec.LookPath("setsid"); err != nil {
		t.Skip("no setsid")
	}
	h := preHooks(t, HookMatcher{Command: `setsid sleep 4 & echo "not on Fridays" >&2; exit 2`, Timeout: 20})
	start := time.Now()
	o := h.PreToolUse(context.Background(), bashCall("ls"))
	assert.Less(t, time.Since(start), hookWaitDelay+5*time.Second)
	assert.True(t, o.Block)
	assert.Contains(t, o.Reason, "not on Fridays")
}

// A hook that kills its whole process group ("kill 0", as a careless
// cleanup does) kills only itself: it runs in a group of its own, not
// pi-remote's. It is a failure, and the call goes on.
func TestHookKillingItsGroup(t *testing.T) {
	h := preHooks(t, HookMatcher{Command: `kill -KILL 0`})
	o := h.PreToolUse(context.Background(), bashCall("ls"))
	assert.False(t, o.Block)
	if assert.Len(t, o.Failures, 1) {
		assert.Contains(t, o.Failures[0], "killed")
	}
}
