package tools_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pi-remote/pi-remote/tools"
)

func TestEditDiffGolden(t *testing.T) {
	f := newFixture(t)
	var body strings.Builder
	for i := 1; i <= 30; i++ {
		fmt.Fprintf(&body, "line %d\n", i)
	}
	f.write("code.txt", body.String())
	m := f.call("edit", edits("code.txt", "line 5\nline 6\n", "line five\n", "line 20\n", "line 20\nline 20.5\n"))
	require.False(t, m.IsError, text(m))
	d, ok := m.Details.(tools.EditDetails)
	require.True(t, ok)
	assert.Equal(t, 5, d.FirstChangedLine)
	assert.Equal(t, 2, d.Replacements)
	golden(t, "edit_diff.txt", d.Diff+"\n")
}
