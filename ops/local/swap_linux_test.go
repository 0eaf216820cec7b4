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

// An edit in a directory another user may rename entries in gives the new
// file the attributes of the file it replaces, never those of a file the
// other user exchanged in meanwhile.
func TestEditKeepsAttributesOfTheFileItReplaces(t *testing.T) {
	t.Parallel()
	swaptest.RunExchange(t, local.New())
}
