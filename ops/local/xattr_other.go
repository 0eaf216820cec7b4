//go:build unix && !linux

package local

import "os"

// copyXattrs does nothing outside Linux: extended attributes and ACLs of
// a replaced file are not kept there (see docs/tools.md).
func copyXattrs(*os.File, string) error { return nil }
