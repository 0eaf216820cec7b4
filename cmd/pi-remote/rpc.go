package main

import (
	"github.com/spf13/cobra"

	"github.com/pi-remote/pi-remote/loop"
	"github.com/pi-remote/pi-remote/rpc"
)

func newRPCCmd(ios iostreams, g *globalOptions) *cobra.Command {
	o := &runOptions{}
	cmd := &cobra.Command{
		Use:   "rpc",
		Short: "Serve JSONL commands on stdin; responses and events on stdout",
		Long: `Serve the agent and its tools over JSON lines: one command object per line on
stdin, one response or event object per line on stdout. See docs/rpc.md.

Commands: prompt, steer, follow_up, abort, get_state, get_messages, set_model,
compact, tool (run one tool directly, no model), approve, and get_commands. Several
tool commands may be in flight at once; mutations of one file still apply in
arrival order. A message "/NAME ARGS" sends the prompt template NAME, and
"/skill:NAME ARGS" the skill NAME, with ARGS; an unknown /NAME is refused.

A call that needs a person's decision (--permissions ask, an ask rule) waits: an
approval_request event names it, and an approve command (once, session or deny)
answers it; abort abandons it.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			// The server exists once the workspace does; the model's
			// retries made before then (none: it is idle) are dropped.
			news := &relay{}
			o.toolsGiven = cmd.Flags().Changed("tools")
			w, err := openWorkspace(cmd.Context(), g, o, false, nil, news.onRetry)
			if err != nil {
				return err
			}
			defer w.Close()
			s := rpc.New(w, ios.out, rpc.Options{
				Model: o.model, Models: g.settings.ModelTable(), Compaction: g.settings.compaction(), MaxArgumentBytes: maxArgsInput,
				NewModel: func(spec string) (loop.Model, error) { return newModel(spec, o.thinking, "set_model", o, news.onRetry) },
			})
			news.set(nil, s.Retry)
			return s.Serve(cmd.Context(), ios.in)
		},
	}
	f := cmd.Flags()
	registerAgentFlags(f, o)
	return cmd
}
