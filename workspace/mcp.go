package workspace

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/pi-remote/pi-remote/agent/permission"
	"github.com/pi-remote/pi-remote/loop"
	"github.com/pi-remote/pi-remote/mcpclient"
	"github.com/pi-remote/pi-remote/ops"
	"github.com/pi-remote/pi-remote/tools"
)

// StartMCP starts the MCP servers cfgs name for a session over hosts
// (all at once; see mcpclient.Start): a server of this machine locally,
// one with a "host" on that host of the session. A server that cannot
// start is in the Manager's Failures, to be told once; the caller owns
// the Manager (Options.MCP hands it to the workspace, whose Close stops
// it).
func StartMCP(ctx context.Context, hosts Hosts, cfgs []mcpclient.Config) *mcpclient.Manager {
	return mcpclient.Start(ctx, cfgs, mcpclient.Options{Connect: hosts.mcpConnect})
}

// mcpConnect reaches a server: a program with a host is started on that
// host of the session, over its connection (mcpclient.SpawnTransport, in
// the host's working directory), any other server is mcpclient.Local's.
func (hs Hosts) mcpConnect(ctx context.Context, c mcpclient.Config) (mcp.Transport, error) {
	if c.Host == "" {
		return mcpclient.Local(ctx, c)
	}
	i := slices.IndexFunc(hs, func(h *Host) bool { return h.Name == c.Host })
	if i < 0 {
		return nil, fmt.Errorf("host %q is not one of this session's hosts (%s)", c.Host, strings.Join(hs.Names(), ", "))
	}
	if err := c.Validate(); err != nil {
		return nil, err
	}
	if c.Transport() != mcpclient.Stdio {
		return nil, fmt.Errorf("host %s: only a program (command) can run on a host", c.Host)
	}
	h := hs[i]
	sp, ok := h.Env.Ops().(ops.Spawner)
	if !ok {
		return nil, fmt.Errorf("host %s cannot run a program: %w", c.Host, errors.ErrUnsupported)
	}
	cwd, err := h.Env.Cwd(ctx)
	if err != nil {
		return nil, fmt.Errorf("host %s: %w", c.Host, err)
	}
	return &mcpclient.SpawnTransport{Spawn: sp.Spawn, Dir: cwd, Command: c.Command, Args: c.Args, Env: c.Env}, nil
}

// mcpDefinitions are the MCP tools as the agent's, each behind gate: a
// server's tool is decided by its name, on the server's host ("": this
// machine, under the session's mode). What a server says of a tool
// (readOnlyHint: ask and read-only modes then run it as they run read) is
// taken only from a server in the user's own settings: a project's
// server, and its hints, are the project's word.
func mcpDefinitions(ts []mcpclient.Tool, gate *permission.Gate) []tools.Definition {
	out := make([]tools.Definition, len(ts))
	for i, t := range ts {
		d := t.Def
		readOnly := t.ReadOnlyHint && !t.Server.Project
		d.ReadOnly = readOnly
		if gate != nil {
			d.Admit = func(ctx context.Context, args json.RawMessage) (any, func(), error) {
				c := permission.Call{Host: t.Server.Host, Tool: d.Name, ReadOnly: readOnly, CallID: loop.CallIDFrom(ctx)}
				return nil, nil, gate.Check(ctx, c, args)
			}
		}
		out[i] = d
	}
	return out
}

// MCPStatus is every MCP server's state and tools (none without
// servers).
func (w *Workspace) MCPStatus() []mcpclient.Status {
	if w.mcp == nil {
		return nil
	}
	return w.mcp.Status()
}

// expandActive turns the names of the active tools into tool names:
// "mcp__SERVER" and globs ("mcp__SERVER__*", "mcp__*") name every MCP tool
// they match, in the order of defs. An MCP name that matches no tool (its
// server did not start) is told on warn and left out; any other name is
// kept for tools.Select to judge.
func expandActive(names []string, defs []tools.Definition, warn io.Writer) []string {
	var out []string
	add := func(n string) {
		if !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	for _, n := range names {
		if !strings.HasPrefix(n, "mcp__") {
			add(n)
			continue
		}
		found := false
		for _, d := range defs {
			ok := d.Name == n || strings.HasPrefix(d.Name, n+"__")
			if strings.Contains(n, "*") {
				ok, _ = path.Match(n, d.Name)
			}
			if ok && strings.HasPrefix(d.Name, "mcp__") {
				add(d.Name)
				found = true
			}
		}
		if !found && n != "mcp__*" && warn != nil {
			fmt.Fprintf(warn, "pi-remote: --tools: no MCP tool %s (is its server configured, and did it start?); going on without it\n", n)
		}
	}
	return out
}
