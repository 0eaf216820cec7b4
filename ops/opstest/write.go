package opstest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pi-remote/pi-remote/canonpath"
	"github.com/pi-remote/pi-remote/ops"
)

// failingReader yields n bytes, then fails.
type failingReader struct{ n int }

var errBoom = errors.New("boom")

func (f *failingReader) Read(p []byte) (int, error) {
	if f.n <= 0 {
		return 0, errBoom
	}
	k := min(len(p), f.n)
	for i := range p[:k] {
		p[i] = 'N'
	}
	f.n -= k
	return k, nil
}

// cancelReader cancels its context after n bytes and then blocks until the
// context is done, so the write is interrupted mid-way.
type cancelReader struct {
	ctx    context.Context
	cancel context.CancelFunc
	n      int
}

func (c *cancelReader) Read(p []byte) (int, error) {
	if c.n <= 0 {
		c.cancel()
		<-c.ctx.Done()
		return 0, c.ctx.Err()
	}
	k := min(len(p), c.n)
	for i := range p[:k] {
		p[i] = 'C'
	}
	c.n -= k
	return k, nil
}

// hookReader yields n bytes, calls hook once, then yields n more.
type hookReader struct {
	n, left int
	hook    func()
}

func (h *hookReader) Read(p []byte) (int, error) {
	if h.left == 0 && h.hook != nil {
		h.hook()
		h.hook = nil
		h.left = h.n
	}
	if h.left == 0 {
		return 0, io.EOF
	}
	k := min(len(p), h.left)
	for i := range p[:k] {
		p[i] = 'h'
	}
	h.left -= k
	return k, nil
}

func listNames(t *testing.T, o ops.Operations, dir string) []string {
	t.Helper()
	entries, err := o.ReadDir(t.Context(), dir)
	require.NoError(t, err)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name)
	}
	slices.Sort(names)
	return names
}

func mode(t *testing.T, o ops.Operations, name string) fs.FileMode {
	t.Helper()
	fi, err := o.Stat(t.Context(), name)
	require.NoError(t, err)
	return fi.Mode().Perm()
}

func testWrite(t *testing.T, h Harness) {
	o, root := h.New(t)
	ctx := t.Context()

	umask := hostUmask(t, o)
	t.Run("create and overwrite", func(t *testing.T) {
		name := path.Join(root, "a.txt")
		write(t, o, name, "one")
		assert.Equal(t, "one", read(t, o, name))
		assert.Equal(t, ops.DefaultPerm&^umask, mode(t, o, name))
		write(t, o, name, "two, longer")
		assert.Equal(t, "two, longer", read(t, o, name))
		write(t, o, name, "")
		assert.Equal(t, "", read(t, o, name))
	})
	t.Run("mode of existing file kept", func(t *testing.T) {
		name := path.Join(root, "script.sh")
		write(t, o, name, "#!/bin/sh\n")
		run(t, o, fmt.Sprintf("chmod 0751 '%s'", name))
		write(t, o, name, "#!/bin/sh\necho hi\n")
		assert.Equal(t, fs.FileMode(0o751), mode(t, o, name))
	})
	t.Run("new file perm", func(t *testing.T) {
		name := path.Join(root, "private")
		require.NoError(t, o.WriteFile(ctx, name, strings.NewReader("s"), ops.WriteOptions{Perm: 0o600}))
		assert.Equal(t, fs.FileMode(0o600), mode(t, o, name))
	})
	t.Run("a new file gets the mode the host's umask gives", func(t *testing.T) {
		// As a file a command makes there (issue 29, item 7: 0644 under
		// umask 077).
		dir := path.Join(root, "umask")
		require.NoError(t, o.MkdirAll(ctx, dir))
		run(t, o, "cd "+q(dir)+" && : >by-shell")
		byShell := mode(t, o, path.Join(dir, "by-shell"))
		require.Equal(t, 0o666&^umask, byShell, "the shell's file, umask %04o", umask)
		for _, size := range []int{10, 200 << 10} { // inline and bulk paths of remote backends
			name := path.Join(dir, fmt.Sprintf("new%d", size))
			require.NoError(t, o.WriteFile(ctx, name, strings.NewReader(strings.Repeat("u", size)), ops.WriteOptions{}))
			assert.Equal(t, byShell, mode(t, o, name), "%d bytes, umask %04o", size, umask)
			// Perm is what the file asks for; the umask still applies.
			name = path.Join(dir, fmt.Sprintf("exec%d", size))
			require.NoError(t, o.WriteFile(ctx, name, strings.NewReader(strings.Repeat("x", size)), ops.WriteOptions{Perm: 0o750}))
			assert.Equal(t, 0o750&^umask, mode(t, o, name), "%d bytes, Perm 0750, umask %04o", size, umask)
		}
	})
	t.Run("missing parent", func(t *testing.T) {
		err := o.WriteFile(ctx, path.Join(root, "no", "such", "f"), strings.NewReader("x"), ops.WriteOptions{})
		requirePathError(t, err, fs.ErrNotExist)
	})
	t.Run("create parents", func(t *testing.T) {
		for _, size := range []int{10, 200 << 10} { // inline and bulk paths of remote backends
			name := path.Join(root, fmt.Sprintf("made%d", size), "x", "f")
			content := strings.Repeat("p", size)
			require.NoError(t, o.WriteFile(ctx, name, strings.NewReader(content), ops.WriteOptions{CreateParents: true}))
			assert.Equal(t, content, read(t, o, name))
		}
		write(t, o, path.Join(root, "afile"), "x")
		err := o.WriteFile(ctx, path.Join(root, "afile", "sub", "f"), strings.NewReader("x"), ops.WriteOptions{CreateParents: true})
		require.Error(t, err)
		assert.ErrorIs(t, err, ops.ErrNotDir)
	})
	t.Run("mkdirall", func(t *testing.T) {
		dir := path.Join(root, "p", "q", "r")
		require.NoError(t, o.MkdirAll(ctx, dir))
		require.NoError(t, o.MkdirAll(ctx, dir), "existing directory is fine")
		write(t, o, path.Join(dir, "f"), "deep")
		assert.Equal(t, "deep", read(t, o, path.Join(dir, "f")))
		write(t, o, path.Join(root, "plain"), "x")
		err := o.MkdirAll(ctx, path.Join(root, "plain", "sub"))
		require.Error(t, err)
		assert.ErrorIs(t, err, ops.ErrNotDir)
	})
	t.Run("directory target", func(t *testing.T) {
		require.NoError(t, o.MkdirAll(ctx, path.Join(root, "isdir")))
		err := o.WriteFile(ctx, path.Join(root, "isdir"), strings.NewReader("x"), ops.WriteOptions{})
		requirePathError(t, err, ops.ErrIsDir)
	})
	t.Run("non-UTF-8 bytes", func(t *testing.T) {
		name := path.Join(root, "latin1")
		content := "caf\xe9 \xff\xfe\x00\x01 end"
		write(t, o, name, content)
		assert.Equal(t, content, read(t, o, name))
	})
	t.Run("failed write keeps old file", func(t *testing.T) {
		dir := path.Join(root, "fail")
		require.NoError(t, o.MkdirAll(ctx, dir))
		name := path.Join(dir, "keep.txt")
		write(t, o, name, "original")
		run(t, o, fmt.Sprintf("chmod 0640 '%s'", name))
		err := o.WriteFile(ctx, name, &failingReader{n: 100 << 10}, ops.WriteOptions{})
		require.ErrorIs(t, err, errBoom)
		assert.Equal(t, "original", read(t, o, name))
		assert.Equal(t, fs.FileMode(0o640), mode(t, o, name))
		assert.Equal(t, []string{"keep.txt"}, listNames(t, o, dir), "no temporary file left behind")
	})
	t.Run("cancelled write keeps old file", func(t *testing.T) {
		dir := path.Join(root, "cancel")
		require.NoError(t, o.MkdirAll(ctx, dir))
		name := path.Join(dir, "keep.txt")
		write(t, o, name, "original")
		cctx, cancel := context.WithCancel(ctx)
		defer cancel()
		err := o.WriteFile(cctx, name, &cancelReader{ctx: cctx, cancel: cancel, n: 256 << 10}, ops.WriteOptions{})
		require.ErrorIs(t, err, context.Canceled)
		assert.Equal(t, "original", read(t, o, name))
		assert.Equal(t, []string{"keep.txt"}, listNames(t, o, dir), "no temporary file left behind")
	})
	t.Run("Guard refuses a changed file", func(t *testing.T) {
		dir := path.Join(root, "guard")
		require.NoError(t, o.MkdirAll(ctx, dir))
		name := path.Join(dir, "g.txt")
		write(t, o, name, "theirs")
		for _, size := range []int{10, 200 << 10} { // inline and bulk paths of remote backends
			write(t, o, name, "theirs")
			mine := strings.Repeat("m", size)
			err := o.WriteFile(ctx, name, strings.NewReader(mine), ops.WriteOptions{Guard: &ops.Guard{Content: []byte("what I read")}})
			requirePathError(t, err, ops.ErrModified)
			assert.Equal(t, "theirs", read(t, o, name))
			assert.Equal(t, []string{"g.txt"}, listNames(t, o, dir), "no temporary file left behind")
			err = o.WriteFile(ctx, name, strings.NewReader(mine), ops.WriteOptions{Guard: &ops.Guard{Content: []byte("theirs")}})
			require.NoError(t, err)
			assert.Equal(t, mine, read(t, o, name))
		}
	})
	t.Run("Canonical: only the expected file is written", func(t *testing.T) {
		dir := path.Join(root, "canon")
		require.NoError(t, o.MkdirAll(ctx, path.Join(dir, "real")))
		require.NoError(t, o.MkdirAll(ctx, path.Join(dir, "other")))
		run(t, o, fmt.Sprintf("cd '%s' && ln -s real via && ln -s real/f alias", dir))
		key := func(name string) string {
			k, err := canonpath.Of(ctx, "conformance", ops.ResolverOf(o), name)
			require.NoError(t, err)
			return k.Path()
		}
		for _, size := range []int{10, 200 << 10} { // inline and bulk paths of remote backends
			content := strings.Repeat("c", size)
			write(t, o, path.Join(dir, "real", "f"), "old")
			write(t, o, path.Join(dir, "other", "f"), "other")
			viaF := path.Join(dir, "via", "f")
			realF := key(viaF)

			// The key held for the path: written, through either link.
			require.NoError(t, o.WriteFile(ctx, viaF, strings.NewReader(content), ops.WriteOptions{Canonical: realF}))
			assert.Equal(t, content, read(t, o, path.Join(dir, "real", "f")))
			require.NoError(t, o.WriteFile(ctx, path.Join(dir, "alias"), strings.NewReader("by alias"), ops.WriteOptions{Canonical: realF}))
			assert.Equal(t, "by alias", read(t, o, path.Join(dir, "real", "f")))

			// A new file, and one in directories the write makes.
			fresh := path.Join(dir, "via", fmt.Sprintf("new%d", size))
			require.NoError(t, o.WriteFile(ctx, fresh, strings.NewReader(content), ops.WriteOptions{Canonical: key(fresh)}))
			assert.Equal(t, content, read(t, o, fresh))
			deep := path.Join(dir, "via", fmt.Sprintf("sub%d", size), "f")
			require.NoError(t, o.WriteFile(ctx, deep, strings.NewReader(content), ops.WriteOptions{Canonical: key(deep), CreateParents: true}))
			assert.Equal(t, content, read(t, o, deep))

			// The link now leads elsewhere: nothing written, nothing left.
			run(t, o, fmt.Sprintf("cd '%s' && rm via && ln -s other via", dir))
			err := o.WriteFile(ctx, viaF, strings.NewReader(content), ops.WriteOptions{Canonical: realF})
			requirePathError(t, err, ops.ErrMoved)
			assert.Equal(t, "other", read(t, o, path.Join(dir, "other", "f")))
			assert.Equal(t, "by alias", read(t, o, path.Join(dir, "real", "f")))
			assert.Equal(t, []string{"f"}, listNames(t, o, path.Join(dir, "other")), "no temporary file left behind")
			err = o.WriteFile(ctx, viaF, strings.NewReader(content), ops.WriteOptions{Canonical: realF, Guard: &ops.Guard{Content: []byte("other")}})
			requirePathError(t, err, ops.ErrMoved)
			assert.Equal(t, "other", read(t, o, path.Join(dir, "other", "f")))
			run(t, o, fmt.Sprintf("cd '%s' && rm via && ln -s real via", dir))
		}
	})
	t.Run("write through symlink keeps link", func(t *testing.T) {
		dir := path.Join(root, "link")
		require.NoError(t, o.MkdirAll(ctx, dir))
		write(t, o, path.Join(dir, "target.txt"), "old")
		run(t, o, fmt.Sprintf("cd '%s' && ln -s target.txt alias.txt", dir))
		write(t, o, path.Join(dir, "alias.txt"), "new")
		assert.Equal(t, "new", read(t, o, path.Join(dir, "target.txt")))
		entries, err := o.ReadDir(ctx, dir)
		require.NoError(t, err)
		for _, e := range entries {
			if e.Name == "alias.txt" {
				assert.True(t, e.IsSymlink, "alias.txt is still a symlink")
			}
		}
	})
	t.Run("many short lines", func(t *testing.T) {
		// The worst case of a line-by-line parser on the host: it took
		// 68 s to take this 60 KB in.
		name := path.Join(root, "quotes")
		content := strings.Repeat("'\n", 30000)
		start := time.Now()
		write(t, o, name, content)
		assert.Equal(t, content, read(t, o, name))
		assert.Less(t, time.Since(start), 3*time.Second, "linear parsing takes ~0.1 s")
	})
	t.Run("a directory that may not be written is a permission error", func(t *testing.T) {
		dir := path.Join(root, "readonly")
		if hostIsRoot(t, o) {
			// Not even root may create files in /sys.
			if run(t, o, "[ -d /sys/kernel ] && echo yes || echo no") != "yes\n" {
				t.Skip("the host has no /sys")
			}
			dir = "/sys"
		} else {
			require.NoError(t, o.MkdirAll(ctx, dir))
			restrict(t, o, dir, "0555")
		}
		for _, size := range []int{10, 200 << 10} {
			err := o.WriteFile(ctx, path.Join(dir, "pi-remote-test"), strings.NewReader(strings.Repeat("SECRET", size/6+1)), ops.WriteOptions{})
			requirePathError(t, err, fs.ErrPermission)
			assert.NotContains(t, err.Error(), "SECRET", "errors never carry content")
		}
	})
	t.Run("a name of 240 bytes", func(t *testing.T) {
		for _, size := range []int{10, 200 << 10} {
			name := path.Join(root, strings.Repeat("n", 239)+fmt.Sprint(size%10))
			content := strings.Repeat("l", size)
			write(t, o, name, content)
			assert.Equal(t, content, read(t, o, name))
		}
	})
	t.Run("Guard on a file deleted meanwhile", func(t *testing.T) {
		dir := path.Join(root, "deleted")
		require.NoError(t, o.MkdirAll(ctx, dir))
		name := path.Join(dir, "gone.txt")
		for _, size := range []int{10, 200 << 10} {
			write(t, o, name, "read once")
			run(t, o, "rm "+q(name))
			err := o.WriteFile(ctx, name, strings.NewReader(strings.Repeat("m", size)), ops.WriteOptions{Guard: &ops.Guard{Content: []byte("read once")}})
			requirePathError(t, err, ops.ErrModified)
			assert.Empty(t, listNames(t, o, dir), "no file and no temporary file")
		}
	})
	t.Run("no space left", func(t *testing.T) {
		needRoot(t, o)
		dir := path.Join(root, "full")
		require.NoError(t, o.MkdirAll(ctx, dir))
		run(t, o, "mount -t tmpfs -o size=16k pi-remote-test "+q(dir))
		t.Cleanup(func() { o.Exec(context.WithoutCancel(ctx), ops.Command{Script: "umount " + q(dir)}) })
		name := path.Join(dir, "f")
		write(t, o, name, "small")
		for _, size := range []int{40 << 10, 200 << 10} {
			err := o.WriteFile(ctx, name, strings.NewReader(strings.Repeat("s", size)), ops.WriteOptions{})
			require.Error(t, err)
			assert.ErrorIs(t, err, syscall.ENOSPC, "%v", err)
			assert.Equal(t, "small", read(t, o, name))
			assert.Equal(t, []string{"f"}, listNames(t, o, dir), "no temporary file left behind")
		}
	})
	t.Run("write through a dangling symlink creates its target", func(t *testing.T) {
		dir := path.Join(root, "dangling")
		require.NoError(t, o.MkdirAll(ctx, dir))
		run(t, o, "cd "+q(dir)+" && ln -s target.txt link.txt")
		write(t, o, path.Join(dir, "link.txt"), "through")
		assert.Equal(t, "through", read(t, o, path.Join(dir, "target.txt")))
		entries, err := o.ReadDir(ctx, dir)
		require.NoError(t, err)
		for _, e := range entries {
			if e.Name == "link.txt" {
				assert.True(t, e.IsSymlink, "link.txt is still a symlink")
			}
		}
	})
	t.Run("setuid and setgid bits and the owner are kept", func(t *testing.T) {
		needRoot(t, o)
		name := path.Join(root, "suid")
		write(t, o, name, "one")
		run(t, o, "chmod 4755 "+q(name))
		write(t, o, name, "two")
		fi, err := o.Stat(ctx, name)
		require.NoError(t, err)
		assert.Equal(t, fs.ModeSetuid|0o755, fi.Mode()&(fs.ModePerm|fs.ModeSetuid|fs.ModeSetgid))

		theirs := path.Join(root, "theirs")
		write(t, o, theirs, "one")
		run(t, o, "chown 65534:65534 "+q(theirs)+" && chmod 6751 "+q(theirs))
		write(t, o, theirs, "two")
		fi, err = o.Stat(ctx, theirs)
		require.NoError(t, err)
		assert.Equal(t, fs.ModeSetuid|fs.ModeSetgid|0o751, fi.Mode()&(fs.ModePerm|fs.ModeSetuid|fs.ModeSetgid))
		assert.Equal(t, "65534 65534", strings.TrimSpace(run(t, o, "ls -ln "+q(theirs)+" | awk '{print $3, $4}'")))
	})
	t.Run("a target that became a directory is not written into", func(t *testing.T) {
		dir := path.Join(root, "becomes")
		require.NoError(t, o.MkdirAll(ctx, dir))
		name := path.Join(dir, "x")
		write(t, o, name, "file")
		// A content too large for one request, and the swap in the middle.
		r := &hookReader{n: 100 << 10, left: 100 << 10, hook: func() { run(t, o, "rm "+q(name)+" && mkdir "+q(name)) }}
		err := o.WriteFile(ctx, name, r, ops.WriteOptions{})
		requirePathError(t, err, ops.ErrIsDir)
		assert.Empty(t, listNames(t, o, name), "nothing was moved into the directory")
		assert.Equal(t, []string{"x"}, listNames(t, o, dir))
	})
	t.Run("another user's symlink in a sticky shared directory is not followed", func(t *testing.T) {
		// As the kernel's fs.protected_symlinks would not (issue 29,
		// item 8: /tmp/report.txt -> ~victim/x was written through).
		needRoot(t, o)
		dir := path.Join(root, "protected")
		require.NoError(t, o.MkdirAll(ctx, dir))
		victim := path.Join(root, "victim.txt")
		write(t, o, victim, "mine")
		for _, tc := range []struct {
			name, dirMode, dirOwner, linkOwner string
			followed                           bool
		}{
			{"another user's link in a sticky world-writable directory", "1777", "0", "65534", false},
			{"this user's own link there", "1777", "0", "0", true},
			{"the link of the directory's owner", "1777", "65534", "65534", true},
			{"another user's link in a directory without the sticky bit", "0777", "0", "65534", true},
			{"another user's link in a sticky directory others may not write", "1755", "0", "65534", true},
		} {
			t.Run(tc.name, func(t *testing.T) {
				// The link is the file's name, a directory on the way to it
				// (as the kernel checks every link it follows), or reached
				// from a link of the user's own elsewhere: to the file, or
				// (relative) to the directory.
				report, reports := path.Join(dir, "report.txt"), path.Join(dir, "reports")
				own, ownDir := path.Join(root, "own-link"), path.Join(root, "own-dir-link")
				run(t, o, "chown "+tc.dirOwner+" "+q(dir)+" && chmod "+tc.dirMode+" "+q(dir)+
					" && rm -f "+q(report)+" "+q(reports)+" "+q(own)+" "+q(ownDir)+
					" && ln -s "+q(victim)+" "+q(report)+" && chown -h "+tc.linkOwner+" "+q(report)+
					" && ln -s "+q(root)+" "+q(reports)+" && chown -h "+tc.linkOwner+" "+q(reports)+
					" && ln -s "+q(path.Join(reports, "victim.txt"))+" "+q(own)+
					" && ln -s protected/reports "+q(ownDir))
				for _, name := range []string{report, path.Join(reports, "victim.txt"), own, path.Join(ownDir, "victim.txt")} {
					for _, size := range []int{10, 200 << 10} { // inline and bulk paths of remote backends
						write(t, o, victim, "mine")
						content := strings.Repeat("w", size)
						err := o.WriteFile(ctx, name, strings.NewReader(content), ops.WriteOptions{})
						if tc.followed {
							require.NoError(t, err, name)
							assert.Equal(t, content, read(t, o, victim), name)
							continue
						}
						requirePathError(t, err, fs.ErrPermission)
						assert.Equal(t, "mine", read(t, o, victim), "%s, %d bytes", name, size)
						assert.Equal(t, []string{"report.txt", "reports"}, listNames(t, o, dir), "no temporary file left behind")
					}
				}
				run(t, o, "rm -f "+q(own)+" "+q(ownDir))
			})
		}
		run(t, o, "chmod 0755 "+q(dir))
	})
	t.Run("devices and FIFOs are not replaced", func(t *testing.T) {
		// Issue 29, item 11: as root, write /dev/null made it a regular
		// file.
		dir := path.Join(root, "special")
		require.NoError(t, o.MkdirAll(ctx, dir))
		fifo := path.Join(dir, "fifo")
		run(t, o, "mkfifo "+q(fifo)+" && ln -s fifo "+q(path.Join(dir, "to-fifo")))
		targets := []string{fifo, path.Join(dir, "to-fifo"), "/dev/null"}
		kinds := map[string]fs.FileMode{fifo: fs.ModeNamedPipe, "/dev/null": fs.ModeDevice | fs.ModeCharDevice}
		for _, name := range targets {
			for _, size := range []int{10, 200 << 10} { // inline and bulk paths of remote backends
				for _, guard := range []*ops.Guard{nil, {Content: nil}} { // write, and edit's write
					err := o.WriteFile(ctx, name, strings.NewReader(strings.Repeat("d", size)), ops.WriteOptions{Guard: guard})
					requirePathError(t, err, ops.ErrNotRegular)
				}
			}
		}
		for name, kind := range kinds {
			fi, err := o.Stat(ctx, name)
			require.NoError(t, err)
			assert.Equal(t, kind, fi.Mode().Type(), "%s is still what it was", name)
		}
		assert.Equal(t, []string{"fifo", "to-fifo"}, listNames(t, o, dir), "no temporary file left behind")
	})
	t.Run("the ACL and extended attributes of a replaced file are kept", func(t *testing.T) {
		// Issue 29, item 10: a file whose ACL denied a user became
		// readable by that user after one edit.
		dir := path.Join(root, "acl")
		require.NoError(t, o.MkdirAll(ctx, dir))
		name := path.Join(dir, "f.txt")
		write(t, o, name, "one")
		if h.NoAttributeTools {
			t.Skip("the harness says the host has no setfacl, getfacl, setfattr and getfattr")
		}
		if out := run(t, o, "for c in setfacl getfacl setfattr getfattr; do command -v $c; done | wc -l"); strings.TrimSpace(out) != "4" {
			skipOrFail(t, "the host has no setfacl, getfacl, setfattr and getfattr to set an ACL and an extended attribute with (packages acl and attr)")
		}
		var set strings.Builder
		err := o.Exec(ctx, ops.Command{Script: "setfacl -m u:65534:--- " + q(name) + " && setfattr -n user.pi-remote -v kept " + q(name), Output: &set})
		if err != nil {
			skipOrFail(t, "the host's file system takes no ACL or user extended attribute here: "+set.String())
		}
		attributes := func() string {
			return run(t, o, "getfacl -cn "+q(name)+" && getfattr --only-values -n user.pi-remote "+q(name))
		}
		want := attributes()
		require.Contains(t, want, "user:65534:---")
		for _, size := range []int{10, 200 << 10} { // inline and bulk paths of remote backends
			content := strings.Repeat("a", size)
			write(t, o, name, content)
			assert.Equal(t, want, attributes(), "after a write of %d bytes", size)
			require.NoError(t, o.WriteFile(ctx, name, strings.NewReader("edited"), ops.WriteOptions{Guard: &ops.Guard{Content: []byte(content)}}))
			assert.Equal(t, want, attributes(), "after an edit")
		}
		assert.Equal(t, []string{"f.txt"}, listNames(t, o, dir), "no temporary file left behind")
	})
	t.Run("a directory others may write", func(t *testing.T) {
		// Where others may rename entries, a write works from a private
		// directory of its own: the same results, nothing left behind.
		dir := path.Join(root, "shared")
		require.NoError(t, o.MkdirAll(ctx, dir))
		restrict(t, o, dir, "0777")
		name := path.Join(dir, "f.txt")
		for _, size := range []int{10, 200 << 10} { // inline and bulk paths of remote backends
			content := strings.Repeat("s", size)
			write(t, o, name, "first")
			run(t, o, "chmod 0640 "+q(name))
			write(t, o, name, content)
			assert.Equal(t, content, read(t, o, name))
			assert.Equal(t, fs.FileMode(0o640), mode(t, o, name))
			err := o.WriteFile(ctx, name, strings.NewReader("mine"), ops.WriteOptions{Guard: &ops.Guard{Content: []byte("what I read")}})
			requirePathError(t, err, ops.ErrModified)
			assert.Equal(t, content, read(t, o, name))
			require.NoError(t, o.WriteFile(ctx, name, strings.NewReader("mine"), ops.WriteOptions{Guard: &ops.Guard{Content: []byte(content)}}))
			assert.Equal(t, "mine", read(t, o, name))
			assert.Equal(t, []string{"f.txt"}, listNames(t, o, dir), "no temporary file left behind")
			run(t, o, "rm "+q(name))
		}
	})
	t.Run("concurrent writers never tear", func(t *testing.T) {
		name := path.Join(root, "race.txt")
		a, b := strings.Repeat("a", 1<<20), strings.Repeat("b", 1<<20)
		errs := make(chan error, 2)
		go func() { errs <- o.WriteFile(ctx, name, strings.NewReader(a), ops.WriteOptions{}) }()
		go func() { errs <- o.WriteFile(ctx, name, strings.NewReader(b), ops.WriteOptions{}) }()
		require.NoError(t, <-errs)
		require.NoError(t, <-errs)
		got := read(t, o, name)
		assert.True(t, got == a || got == b, "file is one of the two writes, never a mix")
	})
}
