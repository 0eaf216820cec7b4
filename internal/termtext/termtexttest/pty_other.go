//go:build !linux

package termtexttest

import (
	"os"
	"testing"
)

// PTY skips the test: the pseudo-terminal helper is Linux-only.
func PTY(t *testing.T) (*os.File, func() string) {
	t.Skip("the pseudo-terminal helper is Linux-only")
	return nil, nil
}
