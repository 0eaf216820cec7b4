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
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pi-remote/pi-remote/integration/sshd"
	"github.com/pi-remote/pi-remote/internal/shellquote"
)

type listedJob struct {
	ID      string `json:"id"`
	State   string `json:"state"`
	Code    *int   `json:"exitCode"`
	Why     string `json:"why"`
	Command string `json:"command"`
}

// pi-remote jobs lists what clients that died left running on a host,
// follows a job from its start to its end, and kills or forgets one.
func TestJobsCommand(t *testing.T) {
	t.Parallel()
	cache := hostCache(t)
	srv := sshd.Start(t, sshd.Options{Config: []string{"SetEnv XDG_CACHE_HOME=" + cache}})
	// The first job runs until the gate file exists: it is listed as
	// running however long a busy machine takes to list it.
	marker := fmt.Sprintf("0.2%d", time.Now().UnixNano()%1000000007)
	gate := filepath.Join(t.TempDir(), "gate")
	t.Cleanup(func() { os.WriteFile(gate, nil, 0o644) })
	t.Cleanup(func() { exec.Command("pkill", "-f", "sleep "+marker).Run() })
	// cliTo runs the CLI with its output also going to also (nil: nowhere
	// else).
	cliTo := func(also io.Writer, args ...string) (string, string, int) {
		cmd := exec.Command(binary, append(srv.Flags(), args...)...)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if also != nil {
			cmd.Stdout = io.MultiWriter(&stdout, also)
		}
		err := cmd.Run()
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return stdout.String(), stderr.String(), ee.ExitCode()
		}
		require.NoError(t, err)
		return stdout.String(), stderr.String(), 0
	}
	cli := func(args ...string) (string, string, int) { return cliTo(nil, args...) }
	list := func() []listedJob {
		out, stderr, code := cli("jobs", "--json")
		require.Equal(t, 0, code, stderr)
		var jobs []listedJob
		require.NoError(t, json.Unmarshal([]byte(out), &jobs), out)
		return jobs
	}
	// A client killed mid-command leaves a job (its lease is long).
	orphan := func(command, sleeping string) listedJob {
		client := exec.Command(binary, append(srv.Flags(), "tool", "bash", fmt.Sprintf(`{"command":%q}`, command))...)
		require.NoError(t, client.Start())
		require.EventuallyWithT(t, func(c *assert.CollectT) { assert.NotEmpty(c, sleepers(t, sleeping)) }, 10*time.Second, 50*time.Millisecond)
		require.NoError(t, client.Process.Kill())
		client.Wait()
		for _, j := range list() {
			if j.Command == command {
				return j
			}
		}
		t.Fatalf("job %q not listed in %+v", command, list())
		return listedJob{}
	}

	assert.Empty(t, list())
	command := "echo started; until [ -e " + shellquote.Quote(gate) + " ]; do sleep " + marker + "; done; echo finished; exit 3"
	j := orphan(command, marker)
	assert.Equal(t, "running", j.State)

	// The job ends while the attach follows it: the gate opens once the
	// attach has shown the job's first line.
	seen := &lineSeen{line: "started\n", seen: make(chan struct{})}
	opened := make(chan struct{})
	go func() {
		defer close(opened)
		select {
		case <-seen.seen:
		case <-time.After(time.Minute): // (the assertions below then say why)
		}
		os.WriteFile(gate, nil, 0o644)
	}()
	out, stderr, code := cliTo(seen, "jobs", "attach", j.ID)
	<-opened
	assert.Equal(t, "started\nfinished\n", out, "from its start to its end")
	assert.Equal(t, 1, code, "the job failed")
	assert.Contains(t, stderr, "code 3")
	jobs := list()
	require.Len(t, jobs, 1, "attaching does not collect")
	assert.Equal(t, "exited", jobs[0].State)
	require.NotNil(t, jobs[0].Code)
	assert.Equal(t, 3, *jobs[0].Code)

	out, stderr, code = cli("jobs", "kill", j.ID)
	require.Equal(t, 0, code, stderr)
	assert.Equal(t, fmt.Sprintf("job %s removed\n", j.ID), out, "an ended job is forgotten")
	assert.Empty(t, list())

	// (Sleeping long enough for a busy machine to list it and kill it.)
	long := "6" + marker
	t.Cleanup(func() { exec.Command("pkill", "-f", "sleep "+long).Run() })
	j = orphan("sleep "+long+"0 & sleep "+long+"; echo never", long)
	out, stderr, code = cli("jobs", "kill", j.ID)
	require.Equal(t, 0, code, stderr)
	assert.Equal(t, fmt.Sprintf("job %s killed\n", j.ID), out)
	assert.Empty(t, sleepers(t, long), "the whole group is gone")
	assert.Empty(t, sleepers(t, long+"0"))
	// (Each look is a login: under a loaded run one took more than the 5 s
	// this wait had, and the wait failed while it looked.)
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		jobs := list()
		if assert.Len(c, jobs, 1) {
			assert.Equal(c, "stopped", jobs[0].State)
			assert.Contains(c, jobs[0].Why, "jobs kill")
		}
	}, 30*time.Second, 100*time.Millisecond)

	_, stderr, code = cli("jobs", "attach", "0123456789abcdef")
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, "no such job")
	_, stderr, code = cli("jobs", "kill", "../x")
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, "not a job ID")
}

// lineSeen is a writer that closes seen once what was written holds line.
type lineSeen struct {
	mu   sync.Mutex
	buf  bytes.Buffer
	line string
	seen chan struct{}
}

func (w *lineSeen) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	had := bytes.Contains(w.buf.Bytes(), []byte(w.line))
	w.buf.Write(p)
	if !had && bytes.Contains(w.buf.Bytes(), []byte(w.line)) {
		close(w.seen)
	}
	return len(p), nil
}
