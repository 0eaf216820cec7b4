//go:build linux

package integration

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pi-remote/pi-remote/integration/sshd"
	rssh "github.com/pi-remote/pi-remote/ops/ssh"
)

// Calls that may wait behind another request (reads, stats) take a busy
// server rather than open a session once every server is busy: batches of
// 16 read tool calls (a stat and a read each), through the loop's
// pipeline, against a user whose ~/.bashrc sleeps 3 s open no session and
// wait for no login shell. (A round that waited for one takes 3 s or more;
// one that did not takes tens of milliseconds, a figure
// docs/bench-batches.md measures, so 3 s leaves a loaded machine room.)
func TestReadsBeyondThePoolOpenNoSession(t *testing.T) {
	t.Parallel()
	home := ensureUser(t, "pi-slowreads", "/bin/bash")
	uid, gid := userIDs(t, "pi-slowreads")
	const login = 3 * time.Second
	require.NoError(t, os.WriteFile(filepath.Join(home, ".bashrc"), []byte(fmt.Sprintf("sleep %d\n", int(login.Seconds()))), 0o644))
	srv := sshd.Start(t, sshd.Options{User: "pi-slowreads"})
	h := host(t, srv, rssh.HostOptions{})
	dir := filepath.Join(home, "reads")
	require.NoError(t, os.MkdirAll(dir, 0o755))
	batchFixtures(t, dir, uid, gid)
	run := inProcess(t, h, dir)
	reads := batchKinds[2]
	require.Equal(t, "read, 16 files", reads.name)
	run(reads.calls(dir, 0))
	warm := settledSessions(t, h)
	for round := 1; round <= 3; round++ {
		took := run(reads.calls(dir, round))
		t.Logf("round %d took %v", round, took.Round(time.Millisecond))
		assert.Less(t, took, login, "round %d waited for a login shell", round)
	}
	assert.Equal(t, warm, h.SessionsOpened(), "no session beyond the warm-up's")
}
