package integration

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pi-remote/pi-remote/internal/tier"
)

// binary is the pi-remote command built once for the CLI tests.
var binary string

// fastTier is what go test -short runs here (when no -run is given): the
// conformance suite and the tools over sshd, and one pass of each front
// end (print, rpc, acp, jobs) against it.
const fastTier = "^(TestOpsConformance|TestTools|TestRunAgainstOpenAICompatibleServerAndSSHD|TestCLIOverSSH|TestRPC|TestACPWithTypeScriptSDK|TestJobsCommand)$"

func TestMain(m *testing.M) {
	flag.Parse()
	tier.Parallel(4)
	if testing.Short() && flag.Lookup("test.run").Value.String() == "" {
		flag.Set("test.run", fastTier)
	}
	dir, err := os.MkdirTemp("", "pi-remote-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binary = filepath.Join(dir, "pi-remote")
	build := exec.Command("go", "build", "-o", binary, "../cmd/pi-remote")
	build.Stderr = os.Stderr
	// Stamped with the commit, as a build from a clone is by default (this
	// machine's GOFLAGS may say -buildvcs=false).
	build.Env = append(os.Environ(), "GOFLAGS="+strings.TrimSpace(strings.ReplaceAll(os.Getenv("GOFLAGS"), "-buildvcs=false", ""))+" -buildvcs=auto")
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building pi-remote:", err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// cli runs the built binary and returns its exit code, stdout and stderr.
func cli(t *testing.T, stdin string, args ...string) (int, string, string) {
	t.Helper()
	cmd := exec.Command(binary, args...)
	cmd.Stdin = bytes.NewBufferString(stdin)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return code, out.String(), errOut.String()
}
