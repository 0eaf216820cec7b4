//go:build windows

package local

import "os"

// openForRead opens name for reading (Windows has no FIFOs to wait on).
func openForRead(name string) (*os.File, error) { return os.Open(name) }
