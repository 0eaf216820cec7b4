//go:build linux

package integration

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pi-remote/pi-remote/integration/sshd"
	"github.com/pi-remote/pi-remote/ops"
	rssh "github.com/pi-remote/pi-remote/ops/ssh"
)

// scopeUser is the account whose systemd user manager the scope tests
// start.
const scopeUser = "pi-scope"

// userManager runs a systemd user manager for scopeUser, as a host with
// systemd runs one for a user who lingers, and returns the cgroup
// directories (one per hierarchy) the user's logins belong in: only from
// inside the manager's delegated cgroup may its systemd-run move a
// process into a scope (on a real host, a process outside it is moved
// by the system manager on the user manager's behalf; this machine has
// none). The linger file is made too (see start.sh's user_scope).
func userManager(t *testing.T) (uid int, runtime string, logins []string, stop func()) {
	t.Helper()
	sshd.RequireRoot(t, "starting another user's systemd manager")
	// One run at a time on a machine: the user, its runtime directory
	// and its linger file are shared.
	lock, err := os.OpenFile("/run/lock/pi-remote-scope-test", os.O_CREATE|os.O_RDWR, 0o600)
	require.NoError(t, err)
	require.NoError(t, syscall.Flock(int(lock.Fd()), syscall.LOCK_EX))
	t.Cleanup(func() { lock.Close() })
	manager := ""
	for _, p := range []string{"/usr/lib/systemd/systemd", "/lib/systemd/systemd"} {
		if _, err := os.Stat(p); err == nil {
			manager = p
			break
		}
	}
	if manager == "" || exec.Command("sh", "-c", "command -v systemd-run && command -v setpriv").Run() != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("systemd or setpriv is not installed; .ci/run installs systemd and util-linux")
		}
		t.Skip("systemd is not installed")
	}
	home := ensureUser(t, scopeUser, "/bin/sh")
	u, err := user.Lookup(scopeUser)
	require.NoError(t, err)
	uid, _ = strconv.Atoi(u.Uid)

	// The hierarchies a manager tracks its units in: cgroup v2 alone, or
	// v1's named one and the unified one beside it.
	var roots []string
	if _, err := os.Stat("/sys/fs/cgroup/cgroup.controllers"); err == nil {
		roots = []string{"/sys/fs/cgroup"}
	} else {
		for _, r := range []string{"/sys/fs/cgroup/systemd", "/sys/fs/cgroup/unified"} {
			if _, err := os.Stat(filepath.Join(r, "cgroup.procs")); err == nil {
				roots = append(roots, r)
			}
		}
	}
	require.NotEmpty(t, roots, "no cgroup hierarchy systemd could use")
	service := fmt.Sprintf("user.slice/user-%d.slice/user@%d.service", uid, uid)
	var procs []string
	for _, r := range roots {
		dir := filepath.Join(r, service)
		require.NoError(t, os.MkdirAll(filepath.Join(dir, "login.scope"), 0o755))
		require.NoError(t, filepath.Walk(dir, func(p string, _ os.FileInfo, err error) error {
			if err != nil {
				return err
			}
			return os.Lchown(p, uid, uid)
		}))
		procs = append(procs, filepath.Join(dir, "cgroup.procs"))
		logins = append(logins, filepath.Join(dir, "login.scope", "cgroup.procs"))
	}

	// A manager starts only where the system was booted with systemd.
	if _, err := os.Stat("/run/systemd/system"); os.IsNotExist(err) {
		require.NoError(t, os.MkdirAll("/run/systemd/system", 0o755))
		t.Cleanup(func() { os.Remove("/run/systemd/system") })
	}
	require.NoError(t, os.MkdirAll("/var/lib/systemd/linger", 0o755))
	linger := filepath.Join("/var/lib/systemd/linger", scopeUser)
	require.NoError(t, os.WriteFile(linger, nil, 0o644))
	t.Cleanup(func() { os.Remove(linger) })
	runtime = fmt.Sprintf("/run/user/%d", uid)
	require.NoError(t, os.RemoveAll(runtime))
	require.NoError(t, os.MkdirAll(runtime, 0o700))
	require.NoError(t, os.Chown(runtime, uid, uid))
	t.Cleanup(func() { os.RemoveAll(runtime) })

	cmd := exec.Command("sh", "-c", `for f; do echo "$$" >"$f" || exit 1; done
exec setpriv --reuid="$UID_" --regid="$UID_" --init-groups env -i HOME="$HOME_" USER="$USER_" LOGNAME="$USER_" XDG_RUNTIME_DIR="$RUNTIME" PATH=/usr/bin:/bin "$MANAGER" --user`, "sh")
	cmd.Args = append(cmd.Args, procs...)
	cmd.Env = append(os.Environ(), "UID_="+u.Uid, "HOME_="+home, "USER_="+scopeUser, "RUNTIME="+runtime, "MANAGER="+manager)
	var log strings.Builder
	cmd.Stdout, cmd.Stderr = &log, &log
	require.NoError(t, cmd.Start())
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	// (Killed, a manager leaves its socket behind.)
	stop = func() {
		cmd.Process.Signal(os.Kill)
		<-done
	}
	t.Cleanup(func() {
		stop()
		if t.Failed() {
			t.Logf("the user manager's log:\n%s", log.String())
		}
	})
	require.Eventually(t, func() bool {
		fi, err := os.Stat(filepath.Join(runtime, "systemd", "private"))
		return err == nil && fi.Mode()&os.ModeSocket != 0
	}, 20*time.Second, 50*time.Millisecond, "the user manager did not start:\n%s", &log)
	return uid, runtime, logins, stop
}

// cgroupOf is the cgroup line of process pid (of the first hierarchy).
func cgroupOf(pid string) string {
	b, _ := os.ReadFile("/proc/" + pid + "/cgroup")
	line, _, _ := strings.Cut(string(b), "\n")
	return line
}

// Where the user's systemd manager runs and lingers, every job runs in a
// scope of its own, and a kill reaches every process it started: a
// double fork too, which a walk of the process tree cannot find. Where
// the user does not linger, jobs stay in the login's cgroup (its manager
// would stop, and take the scopes with it, soon after the last login
// ends).
func TestJobsInTheUsersSystemdScope(t *testing.T) {
	t.Parallel()
	uid, runtime, logins, stopManager := userManager(t)
	linger := filepath.Join("/var/lib/systemd/linger", scopeUser)
	cache := hostCache(t)
	require.NoError(t, os.Chown(cache, uid, uid))
	srv := sshd.Start(t, sshd.Options{
		User:   scopeUser,
		Config: []string{"SetEnv XDG_CACHE_HOME=" + cache + " XDG_RUNTIME_DIR=" + runtime},
		// The daemon, and so every login, in the user's delegated cgroup.
		Wrap: append([]string{"sh", "-c", `for f; do echo "$$" >"$f" || exit 1; done; exec $SSHD`, "sh"}, logins...),
	})
	marker := fmt.Sprintf("%d", 4000+time.Now().UnixNano()%100000)
	escapee, main := "30001."+marker, "30002."+marker
	t.Cleanup(func() { exec.Command("pkill", "-f", "sleep [0-9]*\\."+marker).Run() })
	script := fmt.Sprintf("(setsid sleep %s &); sleep %s", escapee, main)
	soleSleeper := func(arg string) string {
		var pid string
		require.EventuallyWithT(t, func(c *assert.CollectT) {
			found := sleepers(t, arg)
			if assert.Len(c, found, 1) {
				pid, _, _ = strings.Cut(found[0], " ")
			}
		}, 15*time.Second, 50*time.Millisecond)
		return pid
	}

	t.Run("a double fork dies with an aborted job", func(t *testing.T) {
		h := rssh.New(srv.Config(), rssh.HostOptions{})
		t.Cleanup(func() { h.Close() })
		ctx, cancel := context.WithCancel(t.Context())
		ended := make(chan error, 1)
		go func() { ended <- h.Exec(ctx, ops.Command{Script: script}) }()
		pid := soleSleeper(escapee)
		soleSleeper(main)
		assert.Regexp(t, `/pi-remote-[0-9a-f]+\.scope$`, cgroupOf(pid), "the job has a scope of its own")
		cancel()
		require.Error(t, <-ended)
		require.EventuallyWithT(t, func(c *assert.CollectT) {
			assert.Empty(c, sleepers(t, escapee), "the double fork is killed with its job")
			assert.Empty(c, sleepers(t, main))
		}, 10*time.Second, 50*time.Millisecond)
	})

	t.Run("a double fork dies with a job its lease killed", func(t *testing.T) {
		args := append(srv.Flags(), "--lease-ttl", "5s", "--reattach-timeout", "5s", "tool", "bash",
			fmt.Sprintf(`{"command":%q}`, script))
		client := exec.Command(binary, args...)
		require.NoError(t, client.Start())
		soleSleeper(escapee)
		soleSleeper(main)
		// The client goes without a word: nobody renews the lease.
		require.NoError(t, client.Process.Kill())
		client.Wait()
		require.EventuallyWithT(t, func(c *assert.CollectT) {
			assert.Empty(c, sleepers(t, escapee), "the double fork is killed by the lease")
			assert.Empty(c, sleepers(t, main))
		}, 20*time.Second, 100*time.Millisecond)
	})

	t.Run("output, errors and status come through a scope", func(t *testing.T) {
		h := rssh.New(srv.Config(), rssh.HostOptions{})
		t.Cleanup(func() { h.Close() })
		var out strings.Builder
		err := h.Exec(t.Context(), ops.Command{Output: &out,
			Script: `echo "out ${INVOCATION_ID-none}"; echo err >&2; grep -q /pi-remote- /proc/self/cgroup && echo scoped; exit 3`})
		var ee *ops.ExitError
		require.ErrorAs(t, err, &ee)
		assert.Equal(t, 3, ee.Code)
		assert.Equal(t, "out none\nerr\nscoped\n", out.String(), "in a scope, in the environment it has elsewhere")
	})

	t.Run("a job is killed with its scope by a server whose user does not linger", func(t *testing.T) {
		args := append(srv.Flags(), "tool", "bash", fmt.Sprintf(`{"command":%q}`, script))
		client := exec.Command(binary, args...)
		require.NoError(t, client.Start())
		pid := soleSleeper(escapee)
		soleSleeper(main)
		require.NoError(t, client.Process.Kill())
		client.Wait()
		unit := cgroupOf(pid)
		id := strings.TrimSuffix(unit[strings.LastIndex(unit, "/pi-remote-")+len("/pi-remote-"):], ".scope")
		require.Regexp(t, `^[0-9a-f]{16}$`, id, unit)
		require.NoError(t, os.Remove(linger))
		code, out, stderr := cli(t, "", append(srv.Flags(), "jobs", "kill", id)...)
		require.Equal(t, 0, code, stderr)
		assert.Contains(t, out, "killed")
		require.EventuallyWithT(t, func(c *assert.CollectT) {
			assert.Empty(c, sleepers(t, escapee), "the double fork is killed with its scope")
			assert.Empty(c, sleepers(t, main))
		}, 10*time.Second, 50*time.Millisecond)
	})

	t.Run("without linger, no scope", func(t *testing.T) {
		_, err := os.Stat(linger)
		require.True(t, os.IsNotExist(err))
		h := rssh.New(srv.Config(), rssh.HostOptions{})
		t.Cleanup(func() { h.Close() })
		var out strings.Builder
		require.NoError(t, h.Exec(t.Context(), ops.Command{Script: "cat /proc/self/cgroup", Output: &out}))
		line, _, _ := strings.Cut(out.String(), "\n")
		assert.Contains(t, line, "/login.scope", "the job stays in its login's cgroup")
		assert.NotContains(t, out.String(), "pi-remote-")
	})

	// The host's directory says scopes work; the manager is gone, its
	// socket left behind: each command runs once, without a scope.
	t.Run("a manager gone, commands run all the same", func(t *testing.T) {
		require.NoError(t, os.WriteFile(linger, nil, 0o644))
		stopManager()
		ran := filepath.Join(cache, "ran")
		h := rssh.New(srv.Config(), rssh.HostOptions{})
		t.Cleanup(func() { h.Close() })
		for range 2 {
			var out strings.Builder
			require.NoError(t, h.Exec(t.Context(), ops.Command{Output: &out,
				Script: "echo ran >>" + ran + "; echo said; cat /proc/self/cgroup"}))
			line, _, _ := strings.Cut(strings.TrimPrefix(out.String(), "said\n"), "\n")
			assert.True(t, strings.HasPrefix(out.String(), "said\n"), "nothing but the command's output: %q", out.String())
			assert.Contains(t, line, "/login.scope")
		}
		b, err := os.ReadFile(ran)
		require.NoError(t, err)
		assert.Equal(t, "ran\nran\n", string(b), "each ran once")
	})
}
