package printer

import (
	"encoding/json"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/pi-remote/pi-remote/internal/termtext"
	"github.com/pi-remote/pi-remote/tools"
)

// ToolListing is one tool as Tools lists it in JSON.
type ToolListing struct {
	Name        string          `json:"name"`
	Label       string          `json:"label"`
	Description string          `json:"description"`
	Parameters  json.RawMessage `json:"parameters"`
	// ReadOnly is the definition's: the tool changes nothing on its host.
	ReadOnly bool `json:"readOnly"`
}

// Tools lists tool definitions, as the tools command does: for a person,
// each tool's name and prompt snippet in two columns (controls shown as
// text); asJSON, one indented JSON array of ToolListing.
func Tools(out io.Writer, defs []tools.Definition, asJSON bool) error {
	if asJSON {
		list := make([]ToolListing, len(defs))
		for i, d := range defs {
			list[i] = ToolListing{d.Name, d.Label, d.Description, d.Parameters, d.ReadOnly}
		}
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		enc.SetEscapeHTML(false)
		return enc.Encode(list)
	}
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	for _, d := range defs {
		fmt.Fprintf(w, "%s\t%s\n", termtext.String(d.Name), termtext.String(d.PromptSnippet))
	}
	return w.Flush()
}
