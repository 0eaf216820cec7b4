package frontmatter_test

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pi-remote/pi-remote/internal/frontmatter"
)

func TestSplit(t *testing.T) {
	fields, body, err := frontmatter.Split([]byte("---\nname: pdf\ndescription: >\n  Reads PDFs.\n---\n# Body\n"))
	require.NoError(t, err)
	name, err := fields.String("name")
	require.NoError(t, err)
	assert.Equal(t, "pdf", name)
	desc, err := fields.String("description")
	require.NoError(t, err)
	assert.Equal(t, "Reads PDFs.", desc)
	assert.Equal(t, 3, fields.Line("description"), "the file's own line")
	assert.Equal(t, 1, fields.Line("missing"))
	assert.Equal(t, "# Body\n", body)

	// CRLF line ends and a byte order mark.
	fields, body, err = frontmatter.Split([]byte("\ufeff---\r\ndescription: x\r\n---\r\nbody\r\n"))
	require.NoError(t, err)
	desc, _ = fields.String("description")
	assert.Equal(t, "x", desc)
	assert.Equal(t, "body\r\n", body)

	fields, _, err = frontmatter.Split([]byte("---\n---\nbody"))
	require.NoError(t, err)
	assert.Empty(t, fields)
}

func TestSplitErrorsSayTheLine(t *testing.T) {
	for _, c := range []struct {
		name, text string
		line       int
	}{
		{"no closing line", "---\nname: x\n", 1},
		{"not a mapping", "---\n- a\n- b\n---\n", 2},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, _, err := frontmatter.Split([]byte(c.text))
			var fe *frontmatter.Error
			require.ErrorAs(t, err, &fe)
			assert.Equal(t, c.line, fe.Line)
		})
	}
	// The parser's own message, with the file's line.
	_, _, err := frontmatter.Split([]byte("---\nname: x\n  bad: y\n---\n"))
	assert.EqualError(t, err, "yaml: line 3: mapping values are not allowed in this context")
	_, body, err := frontmatter.Split([]byte("# just Markdown\n"))
	assert.True(t, errors.Is(err, frontmatter.ErrNone))
	assert.Equal(t, "# just Markdown\n", body)

	fields, _, err := frontmatter.Split([]byte("---\nname: x\ndescription:\n  - a\n---\n"))
	require.NoError(t, err)
	_, err = fields.String("description")
	var fe *frontmatter.Error
	require.ErrorAs(t, err, &fe)
	assert.Equal(t, 4, fe.Line)
}
