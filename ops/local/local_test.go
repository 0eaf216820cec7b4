package local_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

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

// The write tests again in a process whose umask is 077, which new files
// must get (they got 0644 whatever the umask).
func TestConformanceUmask077(t *testing.T) {
	t.Parallel()
	if runtime.GOOS == "windows" {
		t.Skip("Windows has no umask")
	}
	out, err := exec.Command("/bin/sh", "-c", `umask 077 && exec "$0" "$@"`,
		os.Args[0], "-test.run=^TestConformance$/^Write$", "-test.count=1", "-test.v").CombinedOutput()
	require.NoError(t, err, "%s", out)
	assert.Contains(t, string(out), "--- PASS: TestConformance/Write/a_new_file_gets_the_mode_the_host's_umask_gives ")
}

// The suite's permission checks need a user that permission bits stop.
func TestConformanceUnprivileged(t *testing.T) {
	t.Parallel()
	unprivileged.Rerun(t, "TestConformance")
}
