// Package randhex makes random names: temporary files, job ids, markers.
package randhex

import (
	"crypto/rand"
	"encoding/hex"
)

// String is n random bytes in lowercase hex (2n characters).
func String(n int) string {
	b := make([]byte, n)
	rand.Read(b) // never fails on supported platforms (crypto/rand)
	return hex.EncodeToString(b)
}
