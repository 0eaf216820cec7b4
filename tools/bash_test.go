package tools_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pi-remote/pi-remote/loop"
	"github.com/pi-remote/pi-remote/tools"
)

func TestSchemasAndPromptGolden(t *testing.T) {
	f := newFixture(t)
	type listing struct {
		Name        string          `json:"name"`
		Description string          `json:"description"`
		Parameters  json.RawMessage `json:"parameters"`
	}
	var all []listing
	for _, d := range f.defs {
		all = append(all, listing{d.Name, d.Description, d.Parameters})
	}
	b, err := json.MarshalIndent(all, "", "  ")
	require.NoError(t, err)
	golden(t, "schemas.json", string(b)+"\n")

	active, err := tools.Select(f.defs, tools.DefaultActive)
	require.NoError(t, err)
	golden(t, "system_prompt.txt", tools.SystemPrompt(active))
	readOnly, err := tools.Select(f.defs, tools.ReadOnly)
	require.NoError(t, err)
	p := tools.SystemPrompt(readOnly)
	assert.NotContains(t, p, "bash:", "only active tools appear")
	assert.NotContains(t, p, "use edit for changes", "only active tools' guidelines appear")
	_, err = tools.Select(f.defs, []string{"rm"})
	assert.ErrorContains(t, err, `unknown tool "rm"`)
}

func TestWrapAndFromTool(t *testing.T) {
	f := newFixture(t)
	d := f.defs[0]
	lean := tools.Wrap(d)
	assert.Equal(t, d.Name, lean.Name)
	assert.Equal(t, d.Parameters, lean.Parameters)
	back := tools.FromTool(lean)
	assert.Equal(t, d.Name, back.Name)
	assert.Empty(t, back.PromptSnippet, "a bare tool has no prompt metadata")
	assert.Contains(t, tools.SystemPrompt([]tools.Definition{back}), "- read: Read the contents of a file.")
}

func TestRenderers(t *testing.T) {
	f := newFixture(t)
	byName := map[string]tools.Definition{}
	for _, d := range f.defs {
		byName[d.Name] = d
	}
	assert.Equal(t, "$ go test ./...", tools.RenderCall(byName["bash"], []byte(`{"command":"go test ./..."}`)))
	assert.Equal(t, "read src/a.go offset=10 limit=5", tools.RenderCall(byName["read"], []byte(`{"path":"src/a.go","offset":10,"limit":5}`)))
	assert.Equal(t, "grep pattern=TODO", tools.RenderCall(byName["grep"], []byte(`{"pattern":"TODO"}`)))

	f.write("r.txt", "one\ntwo\n")
	m := f.call("edit", edits("r.txt", "two", "2"))
	require.False(t, m.IsError)
	res := loop.Result{Content: m.Content, Details: m.Details}
	rendered := tools.RenderResult(byName["edit"], res, tools.Theme{})
	assert.Contains(t, rendered, "Successfully replaced 1 block in r.txt.")
	assert.Contains(t, rendered, "- 2 two\n+ 2 2", "the edit result shows its diff")

	bare := tools.FromTool(tools.Wrap(byName["ls"]))
	assert.Equal(t, `ls {"path":"x"}`, tools.RenderCall(bare, []byte(`{"path":"x"}`)), "generic call rendering")
	assert.Equal(t, "plain", tools.RenderResult(bare, loop.TextResult("plain"), tools.Theme{}))
}
