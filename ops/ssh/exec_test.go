package ssh

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pi-remote/pi-remote/ops"
	"github.com/pi-remote/pi-remote/ops/ssh/internal/hostproto"
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

// An ended job's status becomes Exec's error: none for a clean exit, an
// ExitError naming why the host stopped it otherwise, also when the
// command exited 0 after its output was cut at the cap.
func TestJobStatusError(t *testing.T) {
	for status, want := range map[string]string{
		"0":                "",
		"0 saved":          "",
		"3":                "command exited with code 3",
		"141 capped":       "command stopped: its output passed the cap of 4 MiB (exit code 141)",
		"0 capped unsaved": "command stopped: its output passed the cap of 4 MiB (exit code 0)",
		"137 lease":        "command stopped: killed by its lease after 30s without a client (exit code 137)",
		"137 killed saved": "command stopped: killed with pi-remote jobs kill (exit code 137)",
		"255 lost":         "command stopped: its exit status was lost (a process that waited for it on the host was killed) (exit code 255)",
	} {
		js, err := hostproto.ParseJobStatus(status)
		require.NoError(t, err, status)
		err = exitError(js, 4<<20, 30*time.Second)
		if want == "" {
			assert.NoError(t, err, status)
			continue
		}
		var exit *ops.ExitError
		require.ErrorAs(t, err, &exit, status)
		assert.Contains(t, err.Error(), want, status)
	}
}
