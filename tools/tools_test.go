package tools_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/pi-remote/pi-remote/internal/unprivileged"
	"github.com/pi-remote/pi-remote/ops"
	"github.com/pi-remote/pi-remote/ops/local"
	"github.com/pi-remote/pi-remote/tools/toolstest"
)

// The behaviour tables live in toolstest so that ops/ssh and the
// integration tests run them over SSH too; here they run on this machine.
func TestTools(t *testing.T) {
	t.Parallel()
	h := toolstest.Harness{
		New:            func(*testing.T) ops.Operations { return local.New() },
		RequireEngines: os.Getenv("CI") != "",
	}
	if *update {
		h.UpdateGolden = func(name, content string) {
			if err := os.WriteFile(filepath.Join("toolstest", "testdata", name), []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	toolstest.Run(t, h)
}

// The tables' permission cases need a user that permission bits stop.
func TestToolsUnprivileged(t *testing.T) {
	t.Parallel()
	unprivileged.Rerun(t, "TestTools")
}
