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
			state += ": " + s.Error
		}
		fmt.Fprintf(&b, "%s  %s\n", s.Name, state)
		if s.Where != "" {
			fmt.Fprintf(&b, "  %s, %s", s.Transport, s.Where)
			if s.Server != "" {
				fmt.Fprintf(&b, " (%s)", s.Server)
			}
			b.WriteString("\n")
		}
		if s.From != "" {
			fmt.Fprintf(&b, "  from %s\n", s.From)
		}
		if len(s.Tools) > 0 {
			fmt.Fprintf(&b, "  tools: %s\n", strings.Join(s.Tools, ", "))
		}
	}
	return termtext.String(strings.TrimSuffix(b.String(), "\n"))
}
