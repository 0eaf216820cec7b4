//go:build unix

package local

import (
	"os"
	"syscall"
)

// openForRead opens name for reading without waiting: a FIFO with no
// writer would block open(2) itself, before Open could see what it is.
// O_NONBLOCK changes nothing for the regular files Open keeps.
func openForRead(name string) (*os.File, error) {
	return os.OpenFile(name, os.O_RDONLY|syscall.O_NONBLOCK, 0)
}
