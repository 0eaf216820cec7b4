package printer

import (
	"fmt"
	"strings"

	"github.com/pi-remote/pi-remote/internal/termtext"
	"github.com/pi-remote/pi-remote/mcpclient"
)

// MCPServers describes MCP servers for check and /mcp: one paragraph
// each (name, state, where it runs, what configured it, its tools), with
// controls in what servers and settings said shown as text. "" when
// there are none.
func MCPServers(st []mcpclient.Status) string {
	var b strings.Builder
	for i, s := range st {
		if i > 0 {
			b.WriteString("\n")
		}
		state := s.State
		if s.Error != "" {
			// (An error's own lines, a server's stderr, indented under it.)
			state += ": " + strings.ReplaceAll(strings.TrimRight(s.Error, "\n"), "\n", "\n    ")
		}
		fmt.Fprintf(&b, "%s  %s\n", oneLine(s.Name), state)
		if s.Where != "" {
			fmt.Fprintf(&b, "  %s, %s", s.Transport, oneLine(s.Where))
			if s.Server != "" {
				fmt.Fprintf(&b, " (%s)", oneLine(s.Server))
			}
			b.WriteString("\n")
		}
		if s.From != "" {
			fmt.Fprintf(&b, "  from %s\n", oneLine(s.From))
		}
		if len(s.Tools) > 0 {
			fmt.Fprintf(&b, "  tools: %s\n", strings.Join(s.Tools, ", "))
		}
	}
	return termtext.String(strings.TrimSuffix(b.String(), "\n"))
}

// oneLine is s with each run of white space (newlines too) one space:
// a name or a path from settings or a server stays on its line.
func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
