package ssh

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// A command alone streams after streamAfter; one of a batch waits longer,
// the more commands there are, up to maxStreamDelay.
func TestStreamDelay(t *testing.T) {
	for running, want := range map[int64]time.Duration{
		0:   streamAfter,
		1:   streamAfter,
		2:   2 * streamAfter,
		5:   5 * streamAfter,
		16:  maxStreamDelay,
		200: maxStreamDelay,
	} {
		assert.Equal(t, want, streamDelay(running), "%d commands", running)
	}
}
