package integration

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pi-remote/pi-remote/integration/sshd"
	"github.com/pi-remote/pi-remote/internal/termtext/termtexttest"
)

// What a job printed and its command line reach a terminal with their
// controls shown as text (jobs, jobs attach); into a pipe, attach gives
// the job's output byte for byte.
func TestJobsOnATerminal(t *testing.T) {
	t.Parallel()
	cache := hostCache(t)
	srv := sshd.Start(t, sshd.Options{Config: []string{"SetEnv XDG_CACHE_HOME=" + cache}})
	hostile := "clip\x1b]52;c;cm0gLXJmIH4=\a title\x1b]0;pwned\a clear\x1b[2J c1\u009b2J raw\x9b2J cr\rover\n"
	file := filepath.Join(t.TempDir(), "hostile.txt")
	require.NoError(t, os.WriteFile(file, []byte(hostile), 0o644))
	// (Long enough to be listed as running on a busy machine.)
	marker := fmt.Sprintf("3.%d", time.Now().UnixNano()%1000000007)
	t.Cleanup(func() { exec.Command("pkill", "-f", "sleep "+marker).Run() })
	run := func(stdout io.Writer, args ...string) (string, int) {
		cmd := exec.Command(binary, append(srv.Flags(), args...)...)
		var stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = stdout, &stderr
		err := cmd.Run()
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return stderr.String(), ee.ExitCode()
		}
		require.NoError(t, err)
		return stderr.String(), 0
	}

	// A client killed mid-command leaves its job.
	command := "cat " + file + "; sleep " + marker + " # \x1b]0;label\a"
	args, err := json.Marshal(map[string]string{"command": command})
	require.NoError(t, err)
	client := exec.Command(binary, append(srv.Flags(), "tool", "bash", string(args))...)
	require.NoError(t, client.Start())
	require.EventuallyWithT(t, func(c *assert.CollectT) { assert.NotEmpty(c, sleepers(t, marker)) }, 10*time.Second, 50*time.Millisecond)
	require.NoError(t, client.Process.Kill())
	client.Wait()
	var listed bytes.Buffer
	stderr, code := run(&listed, "jobs", "--json")
	require.Equal(t, 0, code, stderr)
	var jobs []listedJob
	require.NoError(t, json.Unmarshal(listed.Bytes(), &jobs), listed.String())
	require.Len(t, jobs, 1)
	id := jobs[0].ID
	assert.Equal(t, command, jobs[0].Command, "--json has the exact command")

	tty, output := termtexttest.PTY(t)
	stderr, code = run(tty, "jobs")
	shown := output()
	require.Equal(t, 0, code, stderr)
	assert.Empty(t, termtexttest.Controls(shown))
	assert.Contains(t, shown, "# ^[]0;label^G")

	var piped bytes.Buffer
	stderr, code = run(&piped, "jobs", "attach", id)
	require.Equal(t, 0, code, stderr)
	assert.Equal(t, hostile, piped.String(), "piped: byte for byte")

	tty, output = termtexttest.PTY(t)
	stderr, code = run(tty, "jobs", "attach", id)
	shown = output()
	require.Equal(t, 0, code, stderr)
	assert.Empty(t, termtexttest.Controls(shown))
	assert.Equal(t, "clip^[]52;c;cm0gLXJmIH4=^G title^[]0;pwned^G clear^[[2J c1<U+009B>2J raw\\x9b2J cr^Mover\n", shown)

	stderr, code = run(io.Discard, "jobs", "kill", id)
	require.Equal(t, 0, code, stderr)
}
