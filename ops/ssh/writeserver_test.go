//go:build unix

// The write functions of the server program (write.sh), run directly under the local dash,
// bash and BusyBox sh, against another user who may rename entries in the
// directory written to.

package ssh

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pi-remote/pi-remote/internal/unprivileged"
	"github.com/pi-remote/pi-remote/ops/ssh/internal/hostproto"
)

// answer sends a request to a file function and splits its answer into
// the function's status line and its payload.
func (l *localServer) answer(t *testing.T, fn string, args ...string) (string, string) {
	t.Helper()
	var out bytes.Buffer
	l.do(t, &out, "call", append([]string{fn}, args...)...)
	status, payload, _ := strings.Cut(out.String(), "\n")
	return status, payload
}

func TestServerWritesAgainstSwaps(t *testing.T) {
	t.Parallel()
	for _, sh := range testShells(t) {
		t.Run(strings.Join(sh, " "), func(t *testing.T) {
			t.Parallel()
			unprivileged.RequireRoot(t, "the test makes files of another user's")
			uid, gid := unprivileged.IDs(t)
			// Another user's directory, and a file of ours elsewhere.
			dir := filepath.Join(t.TempDir(), "theirs")
			require.NoError(t, os.Mkdir(dir, 0o755))
			require.NoError(t, os.Chown(dir, uid, gid))
			require.NoError(t, os.Chmod(filepath.Dir(dir), 0o755))
			canary := filepath.Join(t.TempDir(), "canary")
			require.NoError(t, os.WriteFile(canary, []byte("ours\n"), 0o600))
			evil := filepath.Join(filepath.Dir(dir), "evil")
			require.NoError(t, os.Mkdir(evil, 0o755))
			target := filepath.Join(dir, "f.txt")

			// swap does what the other user may: the private directory
			// renamed away, and in its place a link to a directory of
			// theirs, or a directory of theirs, holding a link to the
			// canary under the temporary file's name.
			for _, swap := range []struct {
				name string
				do   func(t *testing.T, private string)
			}{
				{"a link to their directory", func(t *testing.T, private string) {
					require.NoError(t, os.Rename(private, private+".away"))
					require.NoError(t, os.Symlink(canary, filepath.Join(evil, filepath.Base(private))))
					require.NoError(t, os.Symlink(evil, private))
				}},
				{"a directory of theirs", func(t *testing.T, private string) {
					require.NoError(t, os.Rename(private, private+".away"))
					require.NoError(t, os.Mkdir(private, 0o700))
					require.NoError(t, os.Symlink(canary, filepath.Join(private, filepath.Base(private))))
					require.NoError(t, os.Chown(private, uid, gid))
				}},
			} {
				t.Run(swap.name, func(t *testing.T) {
					l := startLocal(t, sh, true)
					suffix := strconv.Itoa(len(swap.name)) + "0a"
					status, payload := l.answer(t, "create_temp", target, "666", suffix, "-")
					require.Equal(t, "OK", status)
					fields := strings.SplitN(payload, " ", 3)
					require.Len(t, fields, 3)
					inode, tmp := fields[0], fields[2]
					private := filepath.Dir(tmp)
					require.Equal(t, filepath.Base(tmp), filepath.Base(private), "a private directory: another user may rename entries in theirs")
					assert.Equal(t, "server", fields[1], "not over SFTP: another user may rename entries on the way")
					swap.do(t, private)

					var out bytes.Buffer
					require.NoError(t, l.send(hostproto.Request{Name: "call", Args: []string{"receive_temp", tmp, inode, "5"}, Data: []byte("12345")}))
					_, err := l.readUntilMarker(&out)
					require.NoError(t, err)
					assert.True(t, strings.HasPrefix(out.String(), "E EACCES "), "receive_temp: got %q", out.String())
					for _, fn := range []string{"diagnose_write", "remove_temp"} {
						l.answer(t, fn, tmp, inode)
					}
					status, _ = l.answer(t, "commit_temp", target, tmp, inode, "", "")
					assert.True(t, strings.HasPrefix(status, "E EACCES "), "commit_temp: got %q", status)

					got, err := os.ReadFile(canary)
					require.NoError(t, err)
					assert.Equal(t, "ours\n", string(got))
					fi, err := os.Stat(canary)
					require.NoError(t, err)
					assert.Equal(t, os.FileMode(0o600), fi.Mode())
					_, err = os.Lstat(target)
					assert.ErrorIs(t, err, os.ErrNotExist, "nothing was committed")
				})
			}
		})
	}
}

// A server removes, as it exits, what the writes it began left, and
// nothing else: its records name temporary files, and only one of the
// shape it makes, this user's, in a private directory (this user's, mode
// 0700) or in a directory only root and this user may change, with the
// recorded inode, not reached through a link, goes, and then its private
// directory.
func TestServerRemovesOnlyItsOwnTemporaryFiles(t *testing.T) {
	t.Parallel()
	for _, sh := range testShells(t) {
		t.Run(strings.Join(sh, " "), func(t *testing.T) {
			t.Parallel()
			unprivileged.RequireRoot(t, "the test makes files of another user's")
			uid, gid := unprivileged.IDs(t)
			dir := t.TempDir()
			shared := filepath.Join(dir, "shared")
			require.NoError(t, os.Mkdir(shared, 0o777))
			require.NoError(t, os.Chmod(shared, 0o777))
			l := startLocal(t, sh, true)
			var left []string // never committed: removed as the server exits
			for i, d := range []string{dir, shared} {
				status, payload := l.answer(t, "create_temp", filepath.Join(d, "mine.txt"), "666", fmt.Sprintf("00a%d", i), "-")
				require.Equal(t, "OK", status)
				fields := strings.SplitN(payload, " ", 3)
				require.Len(t, fields, 3)
				left = append(left, fields[2])
			}
			require.Equal(t, dir, filepath.Dir(left[0]), "straight in a directory of ours")
			require.Equal(t, shared, filepath.Dir(filepath.Dir(left[1])), "in a private directory where others may write")
			privates, err := filepath.Glob(filepath.Join(l.tmp, ".pi-remote.*"))
			require.NoError(t, err)
			require.Len(t, privates, 1)

			// record writes a record as create_temp would.
			record := func(suffix, content string) {
				require.NoError(t, os.WriteFile(filepath.Join(privates[0], "temp."+suffix), []byte(content), 0o600))
			}
			// keep makes a directory holding a file of the directory's
			// name, both expected to survive; it returns the file.
			var kept []string
			keep := func(name string, mode os.FileMode, owner int) string {
				d := filepath.Join(dir, name)
				require.NoError(t, os.Mkdir(d, mode))
				require.NoError(t, os.Chmod(d, mode))
				require.NoError(t, os.WriteFile(filepath.Join(d, name), []byte("keep"), 0o600))
				require.NoError(t, os.Chown(d, owner, owner))
				kept = append(kept, filepath.Join(d, name))
				return filepath.Join(d, name)
			}
			theirs := keep(".theirs.pi-remote-00bb", 0o700, uid)
			record("00bb", theirs+"\n"+inodeOf(t, filepath.Dir(theirs))+"\n")
			open := keep(".open.pi-remote-00cc", 0o755, 0)
			record("00cc", open+"\n"+inodeOf(t, filepath.Dir(open))+"\n")
			shape := keep("precious", 0o700, 0)
			record("00dd", shape+"\n"+inodeOf(t, filepath.Dir(shape))+"\n")
			real := keep(".real.pi-remote-00ee", 0o700, 0)
			link := filepath.Join(dir, ".link.pi-remote-00ee")
			require.NoError(t, os.Symlink(filepath.Dir(real), link))
			record("00ee", filepath.Join(link, ".link.pi-remote-00ee")+"\n"+inodeOf(t, filepath.Dir(real))+"\n")
			other := keep(".other.pi-remote-00ff", 0o700, 0)
			record("00ff", other+"\n"+inodeOf(t, filepath.Dir(theirs))+"\n")
			// Straight in a directory of ours: another user's file of the
			// shape, and one in a directory others may write.
			victim := filepath.Join(dir, ".victim.pi-remote-0011")
			require.NoError(t, os.WriteFile(victim, []byte("keep"), 0o600))
			require.NoError(t, os.Chown(victim, uid, gid))
			kept = append(kept, victim)
			record("0011", victim+"\n"+inodeOf(t, dir)+"\n")
			loose := filepath.Join(shared, ".loose.pi-remote-0022")
			require.NoError(t, os.WriteFile(loose, []byte("keep"), 0o600))
			kept = append(kept, loose)
			record("0022", loose+"\n"+inodeOf(t, shared)+"\n")
			// A record of an earlier version: the path alone.
			old := filepath.Join(dir, ".old.pi-remote-0033")
			require.NoError(t, os.WriteFile(old, []byte("keep"), 0o600))
			kept = append(kept, old)
			record("0033", old+"\n")

			l.stdin.Close()
			require.Eventually(t, func() bool {
				_, err := os.Stat(privates[0])
				return os.IsNotExist(err)
			}, 10*time.Second, 20*time.Millisecond, "the server exits and removes its private directory")
			for _, f := range left {
				_, err = os.Lstat(f)
				assert.ErrorIs(t, err, os.ErrNotExist, "the write's own leftover %s is gone", f)
			}
			_, err = os.Lstat(filepath.Dir(left[1]))
			assert.ErrorIs(t, err, os.ErrNotExist, "and its private directory")
			for _, k := range kept {
				_, err := os.Lstat(k)
				assert.NoError(t, err, "%s is left alone", k)
			}
		})
	}
}

// inodeOf is the inode number of a file, as ls -i prints it.
func inodeOf(t *testing.T, name string) string {
	t.Helper()
	fi, err := os.Stat(name)
	require.NoError(t, err)
	return strconv.FormatUint(fi.Sys().(*syscall.Stat_t).Ino, 10)
}
