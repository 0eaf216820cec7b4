package ssh

import (
	"crypto/md5"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash"
)

// digestMethods are the host tools a guarded write can check the file
// with, best first; "bytes" (cmp against an uploaded copy) is the last
// resort.
var digestMethods = []string{"sha256sum", "shasum", "openssl", "md5sum", "cksum"}

// contentDigest is what the server's file_digest (attrs.sh) prints for content with
// method (one of digestMethods).
func contentDigest(content []byte, method string) string {
	d := newDigester(method)
	d.Write(content)
	return d.sum()
}

var cksumTable = func() (t [256]uint32) {
	for i := range t {
		c := uint32(i) << 24
		for range 8 {
			if c&0x80000000 != 0 {
				c = c<<1 ^ 0x04c11db7
			} else {
				c <<= 1
			}
		}
		t[i] = c
	}
	return t
}()

// digester computes, as the content streams through it, what
// contentDigest prints for it with one method. cksum is POSIX cksum(1)'s
// CRC: CRC-32 (not reflected) over the data and then its length.
type digester struct {
	method string
	h      hash.Hash // SHA-256 or MD5
	crc    uint32    // cksum: the CRC so far (not yet finished)
	n      int
}

// newDigester returns nil for a method that is not a digest (bytes, or
// none).
func newDigester(method string) *digester {
	switch method {
	case "sha256sum", "shasum", "openssl":
		return &digester{method: method, h: sha256.New()}
	case "md5sum":
		return &digester{method: method, h: md5.New()}
	case "cksum":
		return &digester{method: method}
	}
	return nil
}

func (d *digester) Write(p []byte) (int, error) {
	if d.h != nil {
		return d.h.Write(p)
	}
	for _, c := range p {
		d.crc = d.crc<<8 ^ cksumTable[byte(d.crc>>24)^c]
	}
	d.n += len(p)
	return len(p), nil
}

func (d *digester) sum() string {
	if d.h != nil {
		return d.method + ":" + hex.EncodeToString(d.h.Sum(nil))
	}
	crc := d.crc
	for n := d.n; n > 0; n >>= 8 {
		crc = crc<<8 ^ cksumTable[byte(crc>>24)^byte(n)]
	}
	return fmt.Sprintf("cksum:%d:%d", ^crc, d.n)
}
