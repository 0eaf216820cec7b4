//go:build unix

package workspace

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pi-remote/pi-remote/agent"
	"github.com/pi-remote/pi-remote/loop"
	"github.com/pi-remote/pi-remote/tools"
)

// hooked is a workspace over local hosts in dir with hooks, and the
// notices it told.
type hooked struct {
	w       *Workspace
	mu      sync.Mutex
	notices []string
}

func openHooked(t *testing.T, dir string, hosts []string, hooks map[string][]agent.HookMatcher) *hooked {
	t.Helper()
	hs, err := OpenHosts(t.Context(), HostOptions{Cwd: dir, Hosts: hosts}, OneShot, nil, nil)
	require.NoError(t, err)
	w, err := Open(t.Context(), hs, Options{Hooks: hooks})
	require.NoError(t, err)
	t.Cleanup(w.Close)
	h := &hooked{w: w}
	w.SetSessionID("session-1")
	w.SetNotice(func(s string) {
		h.mu.Lock()
		defer h.mu.Unlock()
		h.notices = append(h.notices, s)
	})
	return h
}

func (h *hooked) call(t *testing.T, name string, args any) *loop.ToolResultMessage {
	b, err := json.Marshal(args)
	require.NoError(t, err)
	return tools.Call(t.Context(), h.w.Config, name, b, nil)
}

func (h *hooked) told() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.notices
}

// script writes an executable hook script into dir.
func script(t *testing.T, dir, name, body string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	require.NoError(t, os.WriteFile(p, []byte("#!/bin/sh\n"+body), 0o755))
	return p
}

func pre(command string, timeout float64) map[string][]agent.HookMatcher {
	return map[string][]agent.HookMatcher{"PreToolUse": {{Matcher: "Bash|write", Command: command, Timeout: timeout}}}
}

// A PreToolUse hook that exits 2 blocks the call: the model reads its
// stderr, and nothing ran.
func TestHookBlocksRm(t *testing.T) {
	dir, hooks := t.TempDir(), t.TempDir()
	victim := filepath.Join(dir, "victim")
	require.NoError(t, os.WriteFile(victim, []byte("keep me"), 0o644))
	block := script(t, hooks, "no-rm.sh", `case $(cat) in
*'"command":"rm '*) echo "rm is not allowed here; move files to ./trash instead" >&2; exit 2 ;;
esac
`)
	h := openHooked(t, dir, nil, pre(block, 0))

	res := h.call(t, "bash", map[string]string{"command": "rm -f victim"})
	assert.True(t, res.IsError)
	assert.Equal(t, "Blocked by a PreToolUse hook: rm is not allowed here; move files to ./trash instead", text(res))
	assert.FileExists(t, victim, "nothing ran")

	res = h.call(t, "bash", map[string]string{"command": "echo fine"})
	assert.False(t, res.IsError)
	assert.Equal(t, "fine\n", text(res))
	assert.Empty(t, h.told())
}

// A hook's updatedInput is what the tool runs with, validated again.
func TestHookRewritesArguments(t *testing.T) {
	dir, hooks := t.TempDir(), t.TempDir()
	rewrite := script(t, hooks, "redirect.sh", `cat >/dev/null
printf '%s\n' '{"hookSpecificOutput":{"hookEventName":"PreToolUse","updatedInput":{"path":"elsewhere.txt","content":"rewritten\n"}}}'
`)
	h := openHooked(t, dir, nil, pre(rewrite, 0))
	res := h.call(t, "write", map[string]string{"path": "asked.txt", "content": "original\n"})
	require.False(t, res.IsError, text(res))
	assert.Empty(t, h.told())
	assert.NoFileExists(t, filepath.Join(dir, "asked.txt"))
	b, err := os.ReadFile(filepath.Join(dir, "elsewhere.txt"))
	require.NoError(t, err)
	assert.Equal(t, "rewritten\n", string(b))

	invalid := script(t, hooks, "invalid.sh", `echo '{"hookSpecificOutput":{"updatedInput":{"content":"no path"}}}'`)
	h = openHooked(t, dir, nil, pre(invalid, 0))
	res = h.call(t, "write", map[string]string{"path": "asked.txt", "content": "original\n"})
	assert.True(t, res.IsError)
	assert.Contains(t, text(res), "Invalid arguments for write (as rewritten before the call)")
	assert.NoFileExists(t, filepath.Join(dir, "asked.txt"))
}

// A hook past its timeout is killed with its whole process group; the
// call goes on, and the user and the result hear of it.
func TestHookTimeoutKillsItsGroup(t *testing.T) {
	dir, hooks := t.TempDir(), t.TempDir()
	pgidFile, sleepFile := filepath.Join(hooks, "pgid"), filepath.Join(hooks, "sleep")
	hang := script(t, hooks, "hang.sh", fmt.Sprintf(`cat >/dev/null
if [ -r /proc/$$/stat ]; then read -r _ _ _ _ pgid _ < /proc/$$/stat; else pgid=$(ps -o pgid= -p $$); fi
echo $pgid > '%s'
sleep 100 &
echo $! > '%s'
wait
`, pgidFile, sleepFile))
	h := openHooked(t, dir, nil, pre(hang, 1))

	start := time.Now()
	res := h.call(t, "bash", map[string]string{"command": "echo ran"})
	took := time.Since(start)
	assert.False(t, res.IsError)
	assert.True(t, strings.HasPrefix(text(res), "ran\n"), text(res))
	assert.Contains(t, text(res), "timed out after 1s and was killed; the call went on")
	assert.GreaterOrEqual(t, took, time.Second)
	assert.Less(t, took, 10*time.Second, "killed at about its timeout, not at the end of its sleep")
	if assert.Len(t, h.told(), 1) {
		assert.Contains(t, h.told()[0], fmt.Sprintf("PreToolUse hook %q timed out after 1s and was killed", hang))
	}

	pgid := readPid(t, pgidFile)
	sleeper := readPid(t, sleepFile)
	// The kill is asynchronous for the processes the hook's shell left
	// behind: wait (briefly) until the kernel has ended them.
	assert.Eventually(t, func() bool { return !alive(-pgid) && !alive(sleeper) }, 5*time.Second, 20*time.Millisecond, "the hook's process group is gone")
}

func readPid(t *testing.T, file string) int {
	t.Helper()
	b, err := os.ReadFile(file)
	require.NoError(t, err)
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	require.NoError(t, err)
	require.Positive(t, pid)
	return pid
}

// alive says whether process pid (a process group, when negative) has a
// process that is not a zombie (a zombie whose parent died waits for init,
// which may be slow to reap it in a container).
func alive(pid int) bool {
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return false
	}
	procs, err := os.ReadDir("/proc")
	if err != nil {
		return true // no /proc: kill's answer stands
	}
	for _, p := range procs {
		b, err := os.ReadFile(filepath.Join("/proc", p.Name(), "stat"))
		if err != nil {
			continue
		}
		s := string(b)
		i := strings.LastIndexByte(s, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(s[i+1:]) // state ppid pgrp …
		if len(f) < 3 || f[0] == "Z" {
			continue
		}
		if (pid > 0 && p.Name() == strconv.Itoa(pid)) || (pid < 0 && f[2] == strconv.Itoa(-pid)) {
			return true
		}
	}
	return false
}

// A hook that cannot be run is a clear failure naming it; the call goes
// on.
func TestHookNotExecutable(t *testing.T) {
	dir, hooks := t.TempDir(), t.TempDir()
	p := filepath.Join(hooks, "check.sh")
	require.NoError(t, os.WriteFile(p, []byte("#!/bin/sh\nexit 2\n"), 0o644))
	h := openHooked(t, dir, nil, pre(p, 0))
	res := h.call(t, "bash", map[string]string{"command": "echo ran"})
	assert.False(t, res.IsError)
	want := fmt.Sprintf("PreToolUse hook %q could not be run: not executable (exit status 126)", p)
	assert.Contains(t, text(res), want)
	if assert.Len(t, h.told(), 1) {
		assert.Contains(t, h.told()[0], want)
	}
}

// A PostToolUse hook's additionalContext ends the result; it is told the
// result, the session, the host and its working directory.
func TestPostToolUseAddsContext(t *testing.T) {
	dir, hooks := t.TempDir(), t.TempDir()
	got := filepath.Join(hooks, "got.json")
	post := script(t, hooks, "post.sh", fmt.Sprintf(`cat > '%s'
echo '{"hookSpecificOutput":{"hookEventName":"PostToolUse","additionalContext":"Run the tests before you edit again."}}'
`, got))
	h := openHooked(t, dir, nil, map[string][]agent.HookMatcher{"PostToolUse": {{Matcher: "bash", Hooks: []agent.HookCommand{{Type: "command", Command: post}}}}})
	res := h.call(t, "bash", map[string]string{"command": "echo done"})
	assert.False(t, res.IsError)
	assert.Equal(t, "done\nRun the tests before you edit again.", text(res))

	b, err := os.ReadFile(got)
	require.NoError(t, err)
	var in map[string]any
	require.NoError(t, json.Unmarshal(b, &in))
	assert.Equal(t, "PostToolUse", in["hook_event_name"])
	assert.Equal(t, "session-1", in["session_id"])
	assert.Equal(t, "local", in["host"])
	assert.Equal(t, dir, in["cwd"])
	assert.Equal(t, "bash", in["tool_name"])
	assert.Equal(t, map[string]any{"command": "echo done"}, in["tool_input"])
	assert.Equal(t, map[string]any{"content": "done\n", "isError": false}, in["tool_response"])
}

// "Bash|write" is for bash and write, not read.
func TestHookMatcherSelectsTools(t *testing.T) {
	dir, hooks := t.TempDir(), t.TempDir()
	log := filepath.Join(hooks, "log")
	logger := script(t, hooks, "log.sh", fmt.Sprintf(`sed -n 's/.*"tool_name":"\([a-z]*\)".*/\1/p' >> '%s'
`, log))
	h := openHooked(t, dir, nil, pre(logger, 0))
	require.False(t, h.call(t, "bash", map[string]string{"command": "true"}).IsError)
	require.False(t, h.call(t, "write", map[string]string{"path": "f", "content": "x"}).IsError)
	require.False(t, h.call(t, "read", map[string]string{"path": "f"}).IsError)
	b, err := os.ReadFile(log)
	require.NoError(t, err)
	assert.Equal(t, "bash\nwrite\n", string(b))
}

// With several hosts, a hook is told the host the call acts on; a
// rewrite that leaves out the "host" argument keeps the call on its host.
func TestHookHosts(t *testing.T) {
	dir, hooks := t.TempDir(), t.TempDir()
	log := filepath.Join(hooks, "hosts")
	rewrite := script(t, hooks, "rewrite.sh", `cat >/dev/null
echo '{"hookSpecificOutput":{"updatedInput":{"command":"echo rewritten"}}}'
`)
	logger := script(t, hooks, "log.sh", fmt.Sprintf(`sed -n 's/.*"host":"\([a-z]*\)".*/\1/p' >> '%s'
`, log))
	h := openHooked(t, dir, []string{"a=local", "b=local"}, map[string][]agent.HookMatcher{
		"PreToolUse":  {{Matcher: "bash", Command: rewrite}},
		"PostToolUse": {{Command: logger}},
	})
	res := h.call(t, "bash", map[string]string{"command": "echo asked", "host": "b"})
	assert.Equal(t, "rewritten\n", text(res))
	res = h.call(t, "bash", map[string]string{"command": "echo asked"})
	assert.Equal(t, "rewritten\n", text(res))
	require.NoError(t, h.w.SetDefault(t.Context(), "b"))
	h.call(t, "read", map[string]string{"path": "."})
	b, err := os.ReadFile(log)
	require.NoError(t, err)
	assert.Equal(t, "b\na\nb\n", string(b))
}
