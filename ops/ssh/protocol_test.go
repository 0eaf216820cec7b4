//go:build unix

package ssh

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// nextAnswer reads the answer to the oldest request not answered yet, its
// output going to w. A server that does not answer within a few seconds
// fails the test (and is closed, which ends the read).
func (l *localServer) nextAnswer(t *testing.T, w io.Writer) string {
	t.Helper()
	return l.within(t, func() (string, error) { return l.readUntilMarker(w) })
}

// nextJobAnswer is jobAnswer, bounded as nextAnswer is.
func (l *localServer) nextJobAnswer(t *testing.T, w io.Writer, id string) string {
	t.Helper()
	return l.within(t, func() (string, error) { return l.readJobAnswer(w, id) })
}

// within returns what read returns, if it does within 10 s; otherwise it
// closes the server, which ends the read, and fails the test.
func (l *localServer) within(t *testing.T, read func() (string, error)) string {
	t.Helper()
	type answer struct {
		status string
		err    error
	}
	done := make(chan answer, 1)
	go func() {
		st, err := read()
		done <- answer{st, err}
	}()
	select {
	case a := <-done:
		require.NoError(t, a.err, "stderr: %s", l.stderr.suffix())
		return a.status
	case <-time.After(10 * time.Second):
		l.close()
		<-done
		t.Fatal("no answer within 10 s")
		return ""
	}
}

// Every request gets an answer, in order: one naming a function the server
// does not offer as a request (or none at all), or whose words cannot be
// parsed, or that are not what the function takes, is answered with a
// protocol error and runs nothing; the request behind it gets its own
// answer.
func TestServerAnswersEveryRequest(t *testing.T) {
	t.Parallel()
	for _, sh := range testShells(t) {
		t.Run(strings.Join(sh, " "), func(t *testing.T) {
			t.Parallel()
			cache := cacheDir(t)
			l := startLocal(t, sh, true, "XDG_CACHE_HOME="+cache)
			// What must survive: a directory a non-request function would
			// remove, and a file a command substitution would create.
			canary := filepath.Join(t.TempDir(), "canary")
			require.NoError(t, os.MkdirAll(canary, 0o700))
			ran := filepath.Join(t.TempDir(), "ran")
			for _, tc := range []struct {
				name   string
				line   string // after the marker
				status string
			}{
				{"an unknown function", "no_such_function a b", "!PROTOCOL unknown request"},
				{"an unknown file function", "call no_such_function a", "!PROTOCOL unknown request"},
				{"a function that is no request", "remove_private " + canary, "!PROTOCOL unknown request"},
				{"a file function called directly", "list_jobs", "!PROTOCOL unknown request"},
				{"a function that is no file function", "call remove_private " + canary, "!PROTOCOL unknown request"},
				{"no function", "", "!PROTOCOL unknown request"},
				{"a quoted name", "'run_jobs' a", "!PROTOCOL unknown request"},
				{"a request the server no longer has", "run_job 0123abcd 0 'touch " + ran + "' '' '' '' '' 60 '' label ''", "!PROTOCOL unknown request"},
				{"an attach request the server no longer has", "attach_job 0123abcd 0 '' '' '' 60", "!PROTOCOL unknown request"},
				{"an unterminated quote", "run_jobs 60 '' '' 'abc 0", "!PROTOCOL malformed request"},
				{"a job ID that is a path", "run_jobs 60 '' '' ../../x true '' '' '' '' label", "!PROTOCOL malformed request"},
				{"a TTL that runs a command", "run_jobs 'a[$(touch " + ran + ")]' '' '' 0123abcd true '' '' '' '' label", "!PROTOCOL malformed request"},
				{"a cap that runs a command", "run_jobs 60 'a[$(touch " + ran + ")]' '' 0123abcd true '' '' '' '' label", "!PROTOCOL malformed request"},
				{"a save size that runs a command", "run_jobs 60 '' '' 0123abcd true '' '' 'a[$(touch " + ran + ")]' '' label", "!PROTOCOL malformed request"},
				{"a save line count that runs a command", "run_jobs 60 '' '' 0123abcd true '' '' '' 'a[$(touch " + ran + ")]' label", "!PROTOCOL malformed request"},
				{"an attach offset that runs a command", "attach_jobs 60 0123abcd 'a[$(touch " + ran + ")]' '' '' ''", "!PROTOCOL malformed request"},
				{"a batch attach word that is no job ID", "attach_jobs 60 ../x 0 '' '' ''", "!PROTOCOL malformed request"},
				{"a read offset that runs a command", "open_file /etc/hostname 'a[$(touch " + ran + ")]'", "!PROTOCOL malformed request"},
				{"a read size that is no number", "read_head /etc/hostname x", "!PROTOCOL malformed request"},
			} {
				t.Run(tc.name, func(t *testing.T) {
					// The bad request and a good one behind it, sent at
					// once, as a pipelining client does.
					require.NoError(t, l.write(string(l.marker)+tc.line+"\n"))
					require.NoError(t, l.send(call("call", "stat_path", "/")))
					var out bytes.Buffer
					assert.Equal(t, tc.status, l.nextAnswer(t, &out))
					assert.Empty(t, out.String(), "nothing ran")
					out.Reset()
					assert.Equal(t, "0", l.nextAnswer(t, &out), "the next request's own answer")
					assert.True(t, strings.HasPrefix(out.String(), "OK\n"), "got %q", out.String())
				})
			}
			assert.DirExists(t, canary)
			assert.NoFileExists(t, ran)
			assert.NoFileExists(t, filepath.Join(cache, "pi-remote", "x.out"), "no job made outside the jobs directory")
			status, out := l.run(t, "echo still in step")
			assert.Equal(t, "0", status)
			assert.Equal(t, "still in step\n", out)
		})
	}
}
