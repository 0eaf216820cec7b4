package main

import (
	"github.com/spf13/cobra"

	"github.com/pi-remote/pi-remote/env"
	"github.com/pi-remote/pi-remote/ops/local"
	"github.com/pi-remote/pi-remote/printer"
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
	cmd.Flags().BoolVar(&o.json, "json", false, "print a JSON array of {name, label, description, parameters, readOnly}")
	return cmd
}

func toolsRun(io iostreams, o *toolsOptions) error {
	// Listing needs no host: descriptions and schemas are static.
	defs := tools.Definitions(env.New(local.New(), env.Options{Cwd: "/", Home: "/"}), tools.Options{})
	return printer.Tools(io.out, defs, o.json)
}
