//go:build unix

package ssh

import (
	"bufio"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pi-remote/pi-remote/ops/ssh/internal/hostproto"
)

// The wrapper of spawned processes, run by each shell over pipes as sshd
// runs it: as the leader of a session of its own (OpenSSH), and as a
// process that leads no group (dropbear), which it must become first.
// Either way its process is one group it leads, and it leaves no file.
func TestSpawnWrapperUnderEachShell(t *testing.T) {
	for _, sh := range testShells(t) {
		for _, leader := range []bool{true, false} {
			name := strings.Join(sh, " ") + map[bool]string{true: " leading its group", false: " in another's group"}[leader]
			t.Run(name, func(t *testing.T) {
				tmp := t.TempDir()
				marker := "\x1e@test:"
				cmd := exec.Command(sh[0], append(sh[1:], "-c", bootstrapScript)...)
				cmd.Env = append(os.Environ(), "TMPDIR="+tmp)
				cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: leader}
				stdin, err := cmd.StdinPipe()
				require.NoError(t, err)
				stdout, err := cmd.StdoutPipe()
				require.NoError(t, err)
				var stderr tailBuffer
				stderr.max = 4096
				cmd.Stderr = &stderr
				require.NoError(t, cmd.Start())
				done := make(chan struct{})
				var waitErr error
				go func() {
					waitErr = cmd.Wait()
					close(done)
				}()
				t.Cleanup(func() {
					stdin.Close()
					select {
					case <-done:
					case <-time.After(10 * time.Second):
						cmd.Process.Kill()
					}
				})

				program := hostproto.Spawn(marker, "abc123", "1", "", []string{"PI_X=a b"}, []string{"sh", "-c", `echo "$PI_X"; exec cat`}) + programEnd + "\n"
				_, err = io.WriteString(stdin, program)
				require.NoError(t, err)
				out := bufio.NewReader(stdout)
				line, err := out.ReadString('\n')
				require.NoError(t, err, "stderr: %s", stderr.suffix())
				require.True(t, strings.HasPrefix(line, marker+"READY "), "%q%s", line, stderr.suffix())
				pid, err := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(line, marker+"READY ")))
				require.NoError(t, err)
				assert.Equal(t, cmd.Process.Pid, pid, "the channel's process is the wrapper, whose pid the line says")
				pgid, err := syscall.Getpgid(pid)
				require.NoError(t, err)
				assert.Equal(t, pid, pgid, "the wrapper leads its process group")
				// Anyone on the host may read a process's words (ps); its
				// environment is its owner's. The variables (an MCP server's
				// token) are never words, the wrapper's made leader included.
				if words, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline"); err == nil {
					assert.NotContains(t, string(words), "PI_X=", "the wrapper's words: %q", words)
				}

				line, err = out.ReadString('\n')
				require.NoError(t, err)
				assert.Equal(t, "a b\n", line)
				_, err = io.WriteString(stdin, "echo me\n")
				require.NoError(t, err)
				line, err = out.ReadString('\n')
				require.NoError(t, err)
				assert.Equal(t, "echo me\n", line)

				left, err := os.ReadDir(tmp)
				require.NoError(t, err)
				assert.Empty(t, left, "the FIFO and its directory are gone once the process runs")

				require.NoError(t, stdin.Close())
				select {
				case <-done:
					require.NoError(t, waitErr, "cat ended at the end of its input, and the wrapper with its status")
				case <-time.After(30 * time.Second):
					t.Fatal("the wrapper did not end after its input did")
				}
			})
		}
	}
}

// A malformed variable, a missing program or directory: one FAIL line,
// and nothing runs.
func TestSpawnWrapperRefuses(t *testing.T) {
	for _, c := range []struct {
		name string
		dir  string
		env  []string
		args []string
		want string
	}{
		{"missing program", "", nil, []string{"pi-remote-no-such-program"}, "FAIL notfound pi-remote-no-such-program"},
		{"program like an option", "", nil, []string{"-c"}, "FAIL notfound -c"},
		{"missing dir", "/nonexistent/dir", nil, []string{"true"}, "FAIL nodir /nonexistent/dir"},
		{"malformed variable", "", []string{"A-B=1"}, []string{"true"}, "FAIL env"},
		{"variable without value", "", []string{"PATH"}, []string{"true"}, "FAIL env"},
	} {
		t.Run(c.name, func(t *testing.T) {
			marker := "\x1e@test:"
			cmd := exec.Command("sh", "-c", bootstrapScript)
			cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
			cmd.Stdin = strings.NewReader(hostproto.Spawn(marker, "abc", "1", c.dir, c.env, c.args) + programEnd + "\n")
			out, _ := cmd.Output()
			assert.True(t, strings.HasPrefix(string(out), marker+c.want), "%q", out)
		})
	}
}
