package tools

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// A replacement's texts, diffed: the lines both keep, those that go,
// those that come.
func TestTextDiff(t *testing.T) {
	for _, tc := range []struct{ old, new, want string }{
		{"a\nb\nc\n", "a\nB\nc\n", "  a\n- b\n+ B\n  c"},
		{"x", "x\ny", "  x\n+ y"},
		{"one\r\ntwo\r\n", "two\n", "- one\n  two"},
		{"gone", "", "- gone"},
		{"", "new\n", "+ new"},
	} {
		assert.Equal(t, tc.want, TextDiff(tc.old, tc.new), "%q → %q", tc.old, tc.new)
	}
}
