package printer

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pi-remote/pi-remote/tools"
)

// The listing shows what each definition says, a program's own tool like
// the built-in ones; a person's columns show controls as text.
func TestTools(t *testing.T) {
	defs := []tools.Definition{
		{Name: "read", Label: "read", Description: "Read a file.", PromptSnippet: "Read file contents", Parameters: json.RawMessage(`{"type":"object"}`), ReadOnly: true},
		{Name: "stamp", Label: "Stamp", Description: "Stamp a file.", PromptSnippet: "Stamp \x1b[2Ja file", Parameters: json.RawMessage(`{"type":"object"}`)},
	}
	var b bytes.Buffer
	require.NoError(t, Tools(&b, defs, false))
	assert.Equal(t, "read   Read file contents\nstamp  Stamp ^[[2Ja file\n", b.String())

	b.Reset()
	require.NoError(t, Tools(&b, defs, true))
	var list []ToolListing
	require.NoError(t, json.Unmarshal(b.Bytes(), &list))
	require.Len(t, list, 2)
	for i, d := range defs {
		assert.Equal(t, d.Name, list[i].Name)
		assert.Equal(t, d.Label, list[i].Label)
		assert.Equal(t, d.Description, list[i].Description)
		assert.JSONEq(t, string(d.Parameters), string(list[i].Parameters))
		assert.Equal(t, d.ReadOnly, list[i].ReadOnly, d.Name)
	}
}
