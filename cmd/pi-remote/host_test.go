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
