package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/pi-remote/pi-remote/loop"
	"github.com/pi-remote/pi-remote/tools"
	"github.com/pi-remote/pi-remote/workspace"
)

// maxArgsInput bounds the arguments read from stdin or the command line.
const maxArgsInput = 64 << 20

type toolOptions struct {
	name string
	args string // JSON, "-" for stdin, "" for {}
	json bool
}

func newToolCmd(io iostreams, g *globalOptions) *cobra.Command {
	o := &toolOptions{}
	cmd := &cobra.Command{
		Use:   "tool NAME [ARGS_JSON|-]",
		Short: "Run one tool on the host, without a model",
		Long: `Run one tool on the chosen host and print what the model would see.

ARGS_JSON is the tool's arguments as a JSON object; "-" reads them from
stdin; omitted means {}. The arguments go through the same preparation and
validation as in an agent run. On a terminal, control characters in the
output are shown as text (ESC as ^[); into a file or a pipe it is byte for
byte. --json escapes them in JSON strings.

Exit status: 0 success, 1 the tool returned an error result, 2 usage error,
3 connection or authentication failure.`,
		Example: `  pi-remote tool read '{"path":"go.mod"}'
  pi-remote tool bash '{"command":"go test ./...","timeout":300}' --json
  echo '{"pattern":"TODO","path":"src"}' | pi-remote tool grep -`,
		Args: cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.name = args[0]
			if len(args) == 2 {
				o.args = args[1]
			}
			return toolRun(cmd.Context(), io, g, o)
		},
	}
	cmd.Flags().BoolVar(&o.json, "json", false, `print {"content":[...],"details":{...},"isError":bool}`)
	return cmd
}

func toolRun(ctx context.Context, ios iostreams, g *globalOptions, o *toolOptions) error {
	hs, err := workspace.OpenHosts(ctx, g.host, workspace.OneShot, nil, g.warn)
	if err != nil {
		return err
	}
	defer hs.Close()
	// (The person's own call: no permission policy.)
	defs, err := hs.Definitions(nil)
	if err != nil {
		return usageErrorf("%v", err)
	}
	if _, err := tools.Select(defs, []string{o.name}); err != nil {
		return usageErrorf("%v", err)
	}
	raw := o.args
	if raw == "-" {
		b, err := io.ReadAll(io.LimitReader(ios.in, maxArgsInput+1))
		if err != nil {
			return usageErrorf("read arguments from stdin: %v", err)
		}
		raw = string(b)
	}
	msg := tools.Call(ctx, loop.Config{Tools: tools.WrapAll(defs), MaxArgumentBytes: maxArgsInput}, o.name, json.RawMessage(raw), nil)
	if o.json {
		out := struct {
			Content loop.ContentList `json:"content"`
			Details any              `json:"details,omitempty"`
			IsError bool             `json:"isError"`
		}{msg.Content, msg.Details, msg.IsError}
		if err := encodeJSON(ios.out, out, ""); err != nil {
			return err
		}
	} else {
		// Byte for byte into a file or a pipe; on a terminal with its
		// controls shown as text.
		w, done := shownOn(ios.out)
		fmt.Fprintln(w, strings.TrimRight(msg.Content.Text(), "\n"))
		if err := done(); err != nil {
			return err
		}
	}
	if msg.IsError {
		if hs.Lost(ctx) {
			return &workspace.ConnectionError{Err: fmt.Errorf("%s failed: the connection to the host was lost", o.name)}
		}
		return &failure{err: fmt.Errorf("%s failed", o.name)}
	}
	return nil
}
