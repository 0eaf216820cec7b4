package local_test

import (
	"path/filepath"
	"testing"

	"github.com/pi-remote/pi-remote/ops"
	"github.com/pi-remote/pi-remote/ops/local"
	"github.com/pi-remote/pi-remote/ops/opstest"
)

func TestConformance(t *testing.T) {
	opstest.Run(t, opstest.Harness{New: func(t *testing.T) (ops.Operations, string) {
		dir, err := filepath.EvalSymlinks(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		return local.New(), dir
	}})
}
