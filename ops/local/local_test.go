package local_test

import (
	"path/filepath"
	"testing"

	"github.com/pi-remote/pi-remote/internal/unprivileged"
	"github.com/pi-remote/pi-remote/ops"
	"github.com/pi-remote/pi-remote/ops/local"
	"github.com/pi-remote/pi-remote/ops/opstest"
)

func TestConformance(t *testing.T) {
	t.Parallel()
	opstest.Run(t, opstest.Harness{New: func(t *testing.T) (ops.Operations, string) {
		dir, err := filepath.EvalSymlinks(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		return local.New(), dir
	}})
}

// The suite's permission checks need a user that permission bits stop.
func TestConformanceUnprivileged(t *testing.T) {
	t.Parallel()
	unprivileged.Rerun(t, "TestConformance")
}
