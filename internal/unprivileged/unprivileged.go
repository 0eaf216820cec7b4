// Package unprivileged re-runs a test of the running test binary as an
// unprivileged user. Suites that check permission errors skip those checks
// as root (permission bits do not stop root), and CI runs as root: this is
// how they run there anyway. The same user is the other user of tests
// that need one (an attacker, the owner of planted files): RequireRoot
// and IDs.
package unprivileged

import (
	"bytes"
	"io"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// User is the account the tests are re-run as.
const User = "nobody"

// Rerun runs the top-level test name of this test binary again as User and
// fails t when it fails or did not run. When the binary is not root, name
// already ran unprivileged in this very run, and Rerun skips saying so.
func Rerun(t *testing.T, name string) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skipf("not root: %s already ran unprivileged", name)
	}
	u, err := user.Lookup(User)
	if err != nil {
		t.Fatalf("looking up %s: %v", User, err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)

	// The binary and a home the user can reach: go test's own directories
	// are private to root.
	dir, err := os.MkdirTemp("", "pi-remote-unprivileged-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	home := filepath.Join(dir, "home")
	bin := filepath.Join(dir, filepath.Base(os.Args[0]))
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(home, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(home, uid, gid); err != nil {
		t.Fatal(err)
	}
	if err := copyFile(os.Args[0], bin); err != nil {
		t.Fatal(err)
	}

	var out bytes.Buffer
	for attempt := 0; ; attempt++ {
		cmd := exec.Command(bin, "-test.run=^"+name+"$", "-test.v", "-test.count=1", "-test.timeout=10m")
		cmd.Dir = home
		cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "TMPDIR=" + home, "USER=" + User, "LANG=C.UTF-8"}
		if ci := os.Getenv("CI"); ci != "" {
			cmd.Env = append(cmd.Env, "CI="+ci)
		}
		runAs(cmd, uid, gid)
		out.Reset()
		cmd.Stdout, cmd.Stderr = &out, &out
		err = cmd.Run()
		// The copy's write descriptor may live on for a moment in a child
		// another test forked meanwhile (golang.org/issue/22315): the
		// kernel then refuses to run the file.
		if !isTextBusy(err) || attempt == 20 {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err != nil || !strings.Contains(out.String(), "--- PASS: "+name+" ") {
		t.Fatalf("%s as %s: %v\n%s", name, User, err, out.String())
	}
	t.Logf("%s passed as %s (%d skipped subtests)", name, User, strings.Count(out.String(), "--- SKIP"))
}

// RequireRoot skips t when the test binary is not root, and fails it in
// CI, which runs as root; why says what needs root (making files of
// another user's, running a process as one).
func RequireRoot(t testing.TB, why string) {
	t.Helper()
	if os.Geteuid() == 0 {
		return
	}
	if os.Getenv("CI") != "" {
		t.Fatalf("must run as root in CI: %s", why)
	}
	t.Skipf("needs root: %s", why)
}

// IDs are the uid and gid of User.
func IDs(t testing.TB) (uid, gid int) {
	t.Helper()
	u, err := user.Lookup(User)
	if err != nil {
		t.Fatalf("looking up %s: %v", User, err)
	}
	if uid, err = strconv.Atoi(u.Uid); err == nil {
		gid, err = strconv.Atoi(u.Gid)
	}
	if err != nil {
		t.Fatalf("the ids of %s: %v", User, err)
	}
	return uid, gid
}

func copyFile(from, to string) error {
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o755)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
