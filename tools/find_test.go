package tools

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestExpandBraces(t *testing.T) {
	for pattern, want := range map[string][]string{
		"*.go":               {"*.go"},
		"*.{go,md}":          {"*.go", "*.md"},
		"{a,b}/{c,d}":        {"a/c", "b/c", "a/d", "b/d"},
		"x{a,{b,c}d}":        {"xa", "xbd", "xcd"},
		"{,x}y":              {"y", "xy"},
		"unclosed{a,b":       {"unclosed{a,b"},
		"{single}":           {"single"},
		"cmd/**/{main,x}.go": {"cmd/**/main.go", "cmd/**/x.go"},
	} {
		assert.ElementsMatch(t, want, expandBraces(pattern), pattern)
	}
	assert.True(t, globMatch("*.{go,md}", "a/b/readme.md"))
	assert.False(t, globMatch("*.{go,md}", "a/b/readme.txt"))
}
