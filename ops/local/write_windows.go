//go:build windows

package local

import (
	"io/fs"
	"os"
	"path/filepath"
)

// tempFile is a write's temporary file, next to the target: Windows has
// no symlinks that another user may swap in for it without the privilege
// to create them, and no Unix permissions to keep.
type tempFile struct {
	f    *os.File
	name string
}

// newTemp creates the temporary file next to target. Its mode is what
// Windows gives new files.
func newTemp(target string, _ fs.FileMode) (*tempFile, error) {
	dir, base := filepath.Split(target)
	f, err := os.CreateTemp(dir, "."+base[:min(len(base), 200)]+".pi-remote-*")
	if err != nil {
		return nil, err
	}
	return &tempFile{f: f, name: f.Name()}, nil
}

// commit renames the temporary file over base in its directory.
func (t *tempFile) commit(base string) error {
	if err := t.f.Close(); err != nil {
		return err
	}
	t.f = nil
	return os.Rename(t.name, filepath.Join(filepath.Dir(t.name), base))
}

// remove removes the temporary file.
func (t *tempFile) remove() {
	if t.f != nil {
		t.f.Close()
	}
	os.Remove(t.name)
}

// followable: Windows has no sticky shared directories.
func followable(string) bool { return true }

// copyXattrs does nothing: Windows files have no extended attributes to
// keep here.
func copyXattrs(_, _ *os.File) error { return nil }

// holdTarget looks at target, the file a write will replace, without
// following a symlink (held is nil: Windows keeps no attributes here).
func holdTarget(target string) (held *os.File, _ fs.FileInfo, _ error) {
	fi, err := os.Lstat(target)
	return nil, fi, err
}
