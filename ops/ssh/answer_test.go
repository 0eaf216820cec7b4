package ssh

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// The statuses the client accepts for each request are those server.sh
// sends for it; anything else is a protocol error.
func TestAnswerMatches(t *testing.T) {
	for _, tc := range []struct {
		fn, status string
		ok         bool
	}{
		{"call", "0", true},
		{"call", "1", true},
		{"call", "!PROTOCOL unknown request", false},
		{"call", "OK", false},
		{"call", "", false},
		{"read_head", "0", true},
		{"read_head", "E EIO read failed", true},
		{"read_head", "!PROTOCOL malformed request", false},
		{"open_file", "1", false},
		{"run_job", "0", true},
		{"run_job", "137 killed", true},
		{"run_job", "0 saved", true},
		{"run_job", "141 capped unsaved", true},
		{"run_job", "!NOJOB", true},
		{"run_job", "!DETACHED", true},
		{"run_job", "!EIO the job ended without a status (its waiter was killed)", true},
		{"run_job", "!ENOENT", true},
		{"run_job", "!PROTOCOL unknown request", false},
		{"run_job", "0 frobnicated", false},
		{"run_job", "OK", false},
		{"attach_job", "", false},
		{"attach_jobs", "OK", true},
		{"attach_jobs", "!DETACHED", true},
		{"attach_jobs", "0", false},
		{"run_jobs", "!EIO cannot create x", true},
		{"run_jobs", "!PROTOCOL malformed request", false},
		{"something_new", "!PROTOCOL unknown request", false},
	} {
		assert.Equal(t, tc.ok, answerMatches(tc.fn, tc.status), "%s answering %q", tc.fn, tc.status)
	}
}
