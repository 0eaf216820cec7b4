package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// Each host warms fewer command servers the more hosts a session has (each
// one is a login shell on its host), a full pool for one or two hosts and
// never none; one-shot commands warm one.
func TestWarmServersShrinkWithHosts(t *testing.T) {
	var h hostFlags
	for n, want := range map[int]int{1: 0, 2: 0, 3: 5, 4: 4, 8: 2, 16: 1, 200: 1} {
		assert.Equal(t, want, h.hostOptions(n).WarmServers, "%d hosts", n)
	}
	h.oneShot = true
	assert.Equal(t, 1, h.hostOptions(1).WarmServers, "one-shot")
	assert.Equal(t, 1, h.hostOptions(50).WarmServers, "one-shot, many hosts")
}

// A lease shorter than the wait for a dropped host would kill a command
// whose client still waits to come back to it: refused before any host
// is dialled.
func TestLeaseShorterThanTheReattachTimeoutIsRefused(t *testing.T) {
	code, _, stderr := runCLI(t, "", "--host", "nobody@127.0.0.1:1", "--lease-ttl", "30s", "tool", "ls")
	assert.Equal(t, 2, code)
	assert.Contains(t, stderr, "--lease-ttl 30s is shorter than --reattach-timeout 3m0s")
	code, _, stderr = runCLI(t, "", "--host", "nobody@127.0.0.1:1", "--lease-ttl", "30s", "--reattach-timeout", "20s", "--connect-timeout", "1s", "tool", "ls")
	assert.NotEqual(t, 2, code, stderr)
	assert.NotContains(t, stderr, "--lease-ttl")
	// 0 is the default lease, 30 minutes.
	code, _, stderr = runCLI(t, "", "--host", "nobody@127.0.0.1:1", "--lease-ttl", "0", "--connect-timeout", "1s", "tool", "ls")
	assert.NotEqual(t, 2, code, stderr)
}
