package integration

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pi-remote/pi-remote/integration/sshd"
	"github.com/pi-remote/pi-remote/session"
)

// Ctrl-C during a long remote bash: the remote process is killed, the run
// exits 1, and the session file it leaves can be continued.
func TestRunAbortKillsRemoteCommandAndKeepsSession(t *testing.T) {
	srv := sshd.Start(t, sshd.Options{})
	home := t.TempDir()
	t.Setenv("HOME", home)
	dir := t.TempDir()
	marker := fmt.Sprintf("300.%d", time.Now().UnixNano()%1000000007)
	t.Cleanup(func() { exec.Command("pkill", "-f", "sleep "+marker).Run() })
	script := filepath.Join(t.TempDir(), "script.json")
	require.NoError(t, os.WriteFile(script, []byte(`{"turns":[
		{"text":"Running the long job.","toolCalls":[{"id":"c1","name":"bash","arguments":{"command":"sleep `+marker+`"}}]},
		{"text":"unreachable"}
	]}`), 0o644))

	args := append(srv.Flags(), "--cwd", dir, "run", "--model", "scripted/"+script, "--mode", "json", "do the long job")
	cmd := exec.Command(binary, args...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	require.NoError(t, cmd.Start())
	require.Eventually(t, func() bool { return len(psMatching(t, "sleep "+marker)) > 0 }, 20*time.Second, 50*time.Millisecond, "the remote command runs")
	require.NoError(t, cmd.Process.Signal(syscall.SIGINT))
	err := cmd.Wait()
	var ee *exec.ExitError
	require.ErrorAs(t, err, &ee, "stderr: %s", errOut.String())
	assert.Equal(t, 1, ee.ExitCode())
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		assert.Empty(c, psMatching(t, "sleep "+marker), "the remote process is gone")
	}, 10*time.Second, 100*time.Millisecond)

	files, err := filepath.Glob(filepath.Join(home, ".pi-remote", "sessions", "*", "*.jsonl"))
	require.NoError(t, err)
	require.Len(t, files, 1)
	_, saved, err := session.Open(files[0])
	history := saved.Messages
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(history), 2, "the prompt and the assistant turn with the call were saved")
	assert.Contains(t, string(mustJSON(t, history[1])), "sleep "+marker)

	next := filepath.Join(t.TempDir(), "next.json")
	require.NoError(t, os.WriteFile(next, []byte(`{"turns":[{"text":"Picking up where we stopped."}]}`), 0o644))
	code, stdout, stderr := cli(t, "", append(srv.Flags(), "--cwd", dir, "run", "--model", "scripted/"+next, "--continue", "go on")...)
	require.Equal(t, 0, code, stderr)
	assert.Equal(t, "Picking up where we stopped.\n", stdout)
	assert.True(t, strings.Contains(stderr, "session: "+files[0]), "continued the same file: %s", stderr)
}
