//go:build unix && !linux

package local

import (
	"io/fs"
	"os"
)

// copyXattrs does nothing outside Linux: extended attributes and ACLs of
// a replaced file are not kept there (see docs/tools.md).
func copyXattrs(_, _ *os.File) error { return nil }

// holdTarget looks at target, the file a write will replace, without
// following a symlink; outside Linux there is no descriptor to hold it
// by (held is nil), and only its owner and mode are kept.
func holdTarget(target string) (held *os.File, _ fs.FileInfo, _ error) {
	fi, err := os.Lstat(target)
	return nil, fi, err
}
