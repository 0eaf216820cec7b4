package main

import (
	"encoding/json"
	"fmt"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/pi-remote/pi-remote/env"
	"github.com/pi-remote/pi-remote/ops/local"
	"github.com/pi-remote/pi-remote/tools"
)

type toolsOptions struct {
	json bool
}

func newToolsCmd(io iostreams) *cobra.Command {
	o := &toolsOptions{}
	cmd := &cobra.Command{
		Use:   "tools",
		Short: "List the tools and their JSON schemas",
		Long: `List the seven tools. Default active set for agent runs: read, bash, edit,
write; grep, find and ls are enabled with --tools.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error { return toolsRun(io, o) },
	}
	cmd.Flags().BoolVar(&o.json, "json", false, "print a JSON array of {name, label, description, parameters}")
	return cmd
}

type toolListing struct {
	Name        string          `json:"name"`
	Label       string          `json:"label"`
	Description string          `json:"description"`
	Parameters  json.RawMessage `json:"parameters"`
}

func toolsRun(io iostreams, o *toolsOptions) error {
	// Listing needs no host: descriptions and schemas are static.
	defs := tools.Definitions(env.New(local.New(), env.Options{Cwd: "/", Home: "/"}), tools.Options{})
	if o.json {
		list := make([]toolListing, len(defs))
		for i, d := range defs {
			list[i] = toolListing{d.Name, d.Label, d.Description, d.Parameters}
		}
		enc := json.NewEncoder(io.out)
		enc.SetIndent("", "  ")
		enc.SetEscapeHTML(false)
		return enc.Encode(list)
	}
	w := tabwriter.NewWriter(io.out, 0, 4, 2, ' ', 0)
	for _, d := range defs {
		fmt.Fprintf(w, "%s\t%s\n", d.Name, d.PromptSnippet)
	}
	return w.Flush()
}
