package tools_test

import (
	"testing"

	"github.com/pi-remote/pi-remote/ops"
	"github.com/pi-remote/pi-remote/ops/local"
	"github.com/pi-remote/pi-remote/tools/toolstest"
)

// The behaviour tables live in toolstest so that the integration tests run
// them over SSH too; here they run on this machine.
func TestTools(t *testing.T) {
	toolstest.Run(t, toolstest.Harness{New: func(*testing.T) ops.Operations { return local.New() }, Update: *update})
}
