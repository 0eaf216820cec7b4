package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

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
