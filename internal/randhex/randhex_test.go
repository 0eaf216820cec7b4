package randhex

import (
	"regexp"
	"testing"
)

func TestString(t *testing.T) {
	a, b := String(8), String(8)
	if !regexp.MustCompile(`^[0-9a-f]{16}$`).MatchString(a) {
		t.Fatalf("String(8) = %q, want 16 hex digits", a)
	}
	if a == b {
		t.Fatalf("two calls gave the same %q", a)
	}
}
