package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestColorOnlyOnATerminalWithoutNoColor(t *testing.T) {
	env := func(kv ...string) func(string) string {
		return func(k string) string {
			for i := 0; i+1 < len(kv); i += 2 {
				if kv[i] == k {
					return kv[i+1]
				}
			}
			return ""
		}
	}
	assert.True(t, colorFor(true, env("TERM", "xterm-256color")))
	assert.False(t, colorFor(false, env("TERM", "xterm-256color")), "piped")
	assert.False(t, colorFor(true, env("NO_COLOR", "1")), "NO_COLOR")
	assert.False(t, colorFor(true, env("TERM", "dumb")), "dumb terminal")
}
