package workspace

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pi-remote/pi-remote/agent/permission"
)

// A symlink on the way to a write's file, swapped while the call waits
// for the person's answer (by another user of the host, or by a command
// of the same batch), does not carry the write to a file a deny rule
// protects: the write checks, as it commits, that its path still leads
// to the file the gate decided on.
//
// (It once did: a key the host gave at admission was not checked at the
// commit, and a remembered one that no longer held was replaced by the
// new one and the write done there. The guard now pins the reservation
// it decided on: env.Reservation.Pin.)
func TestGateSymlinkSwappedWhileAsking(t *testing.T) {
	for _, remembered := range []bool{false, true} {
		t.Run(map[bool]string{false: "a key from the host", true: "a remembered key"}[remembered], func(t *testing.T) {
			symlinkSwappedWhileAsking(t, remembered)
		})
	}
}

func symlinkSwappedWhileAsking(t *testing.T, remembered bool) {
	dir, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	for _, d := range []string{"ok", "secret"} {
		require.NoError(t, os.MkdirAll(filepath.Join(dir, d), 0o755))
	}
	link := filepath.Join(dir, "link")
	require.NoError(t, os.Symlink(filepath.Join(dir, "ok"), link))
	deny, err := permission.ParseRule("write(secret/**)")
	require.NoError(t, err)
	gate := permission.NewGate(permission.Policy{Mode: permission.Ask, Deny: []permission.Rule{deny}})
	var asked permission.Request
	swap := !remembered
	gate.SetAsker(func(_ context.Context, r permission.Request) (permission.Answer, error) {
		asked = r
		if !swap {
			swap = true // the first write, to remember the key
			return permission.Answer{Decision: permission.Once}, nil
		}
		require.NoError(t, os.Remove(link))
		require.NoError(t, os.Symlink(filepath.Join(dir, "secret"), link))
		return permission.Answer{Decision: permission.Once}, nil
	})
	call := gated(t, dir, gate)
	if remembered {
		res := call("write", `{"path":"link/key","content":"x\n"}`)
		require.False(t, res.IsError, text(res))
	}
	res := call("write", `{"path":"link/key","content":"x\n"}`)
	assert.Equal(t, filepath.ToSlash(filepath.Join(dir, "ok", "key")), asked.Path, "the gate decided on ok/key")
	assert.True(t, res.IsError, text(res))
	_, err = os.Stat(filepath.Join(dir, "secret", "key"))
	assert.ErrorIs(t, err, os.ErrNotExist, "nothing was written under secret/")
}

// The host a call runs on is the host the gate decides for, however the
// model writes "host": twice (the last one counts everywhere), in another
// case (no host of that name), or not at all (the default host, here the
// read-only one).
func TestGateHostArgumentSpellings(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "f.txt"), []byte("one\n"), 0o644))
	call := gated(t, dir, permission.NewGate(permission.Policy{Hosts: map[string]permission.Mode{"a": permission.ReadOnly}}))
	for _, args := range []string{
		`{"path":"f.txt","host":"b","host":"a","edits":[{"oldText":"one","newText":"two"}]}`,
		`{"path":"f.txt","Host":"b","edits":[{"oldText":"one","newText":"two"}]}`,
		`{"path":"f.txt","host":"B","edits":[{"oldText":"one","newText":"two"}]}`,
		`{"path":"f.txt","edits":[{"oldText":"one","newText":"two"}]}`,
		`{"path":"f.txt","host":"b","path":"f.txt","host":"a","edits":[{"oldText":"one","newText":"two"}]}`,
	} {
		res := call("edit", args)
		assert.True(t, res.IsError, "%s: %s", args, text(res))
		assert.Equal(t, "one\n", readFile(t, filepath.Join(dir, "f.txt")), args)
	}
	res := call("bash", `{"command":"echo x > g.txt","host":"b","host":"a"}`)
	assert.True(t, res.IsError, text(res))
	assert.NoFileExists(t, filepath.Join(dir, "g.txt"))
}

// The command the gate decides on is the one that runs, however the model
// repeats "command" or changes its case.
func TestGateCommandArgumentSpellings(t *testing.T) {
	dir := t.TempDir()
	allow, err := permission.ParseRule("bash(ls*)")
	require.NoError(t, err)
	call := gated(t, dir, permission.NewGate(permission.Policy{Mode: permission.ReadOnly, Allow: []permission.Rule{allow}}))
	for _, args := range []string{
		`{"command":"ls","command":"touch pwned"}`,
		`{"command":"ls","Command":"touch pwned"}`,
		`{"Command":"touch pwned","command":"ls"}`,
		`{"COMMAND":"touch pwned"}`,
	} {
		call("bash", args)
		assert.NoFileExists(t, filepath.Join(dir, "pwned"), args)
	}
}

// An allow rule for a directory does not let a write or edit through a
// symlink in it reach a file outside: the rule sees the file the link
// leads to.
func TestGateAllowRuleAndALinkOut(t *testing.T) {
	dir, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "src"), 0o755))
	outside := filepath.Join(dir, "outside.txt")
	require.NoError(t, os.WriteFile(outside, []byte("one\n"), 0o644))
	require.NoError(t, os.Symlink(outside, filepath.Join(dir, "src", "evil")))
	require.NoError(t, os.Symlink("../outside.txt", filepath.Join(dir, "src", "rel")))
	var allow []permission.Rule
	for _, r := range []string{"write(src/**)", "edit(src/**)"} {
		rule, err := permission.ParseRule(r)
		require.NoError(t, err)
		allow = append(allow, rule)
	}
	call := gated(t, dir, permission.NewGate(permission.Policy{Mode: permission.Ask, Allow: allow}))
	for _, p := range []string{"src/evil", "src/rel", "src/./rel", "src//evil"} {
		res := call("write", `{"path":"`+p+`","content":"two\n"}`)
		assert.True(t, res.IsError, "%s: %s", p, text(res))
		res = call("edit", `{"path":"`+p+`","edits":[{"oldText":"one","newText":"two"}]}`)
		assert.True(t, res.IsError, "%s: %s", p, text(res))
		assert.Equal(t, "one\n", readFile(t, outside), p)
	}
	res := call("write", `{"path":"src/new.txt","content":"fine\n"}`)
	assert.False(t, res.IsError, text(res))
	// A hard link is the file's own name in src: the write replaces that
	// name (a rename), and the file outside keeps its content.
	if err := os.Link(outside, filepath.Join(dir, "src", "hard")); err != nil {
		t.Skip("no hard links here")
	}
	res = call("edit", `{"path":"src/hard","edits":[{"oldText":"one","newText":"two"}]}`)
	assert.False(t, res.IsError, text(res))
	assert.Equal(t, "one\n", readFile(t, outside))
}
