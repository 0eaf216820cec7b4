package tools_test

import (
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Tools act only through env: they never import os, os/exec or a backend.
// The shared behaviour suite (toolstest) holds itself to the same rule: it
// reaches the host through the backend under test.
func TestToolsDoNotImportTheHost(t *testing.T) {
	files, err := filepath.Glob("*.go")
	require.NoError(t, err)
	suite, err := filepath.Glob("toolstest/*.go")
	require.NoError(t, err)
	files = append(files, suite...)
	checked := 0
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), name, nil, parser.ImportsOnly)
		require.NoError(t, err)
		for _, imp := range f.Imports {
			p, err := strconv.Unquote(imp.Path.Value)
			require.NoError(t, err)
			assert.NotContains(t, []string{"os", "os/exec", "syscall"}, p, "%s imports %s", name, p)
			assert.False(t, strings.HasPrefix(p, "github.com/pi-remote/pi-remote/ops/"), "%s imports backend %s", name, p)
		}
		checked++
	}
	assert.Greater(t, checked, 5)
}
