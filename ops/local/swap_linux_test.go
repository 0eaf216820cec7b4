package local_test

import (
	"testing"

	"github.com/pi-remote/pi-remote/internal/swaptest"
	"github.com/pi-remote/pi-remote/ops/local"
)

// Another user who may rename entries in the directory written to cannot
// turn a write against a file of root's.
func TestWriteSurvivesSwaps(t *testing.T) {
	t.Parallel()
	swaptest.Run(t, local.New())
}
