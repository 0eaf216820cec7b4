package printer

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/pi-remote/pi-remote/mcpclient"
)

// What a project names a server, and what a server writes on stderr,
// cannot forge a line of the listing: a name is one line, and the lines
// of an error are indented under it.
func TestMCPServersLinesCannotBeForged(t *testing.T) {
	out := MCPServers([]mcpclient.Status{
		{Name: "repo\n  from /home/me/.pi-remote/settings.json", State: mcpclient.Skipped, Error: "configured by the project"},
		{Name: "t", Transport: "stdio", Where: "this machine", From: "/p/.mcp.json", State: mcpclient.Failed,
			Error: "starting: EOF; its stderr ends with: boom\n  from /home/me/.pi-remote/settings.json\n\x1b]52;c;AAAA\x07", Tools: []string{"mcp__t__a"}},
	})
	var froms []string
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(line, "  from ") {
			froms = append(froms, line)
		}
	}
	assert.Equal(t, []string{"  from /p/.mcp.json"}, froms, out)
	assert.Contains(t, out, "repo from /home/me/.pi-remote/settings.json  not started: configured by the project")
	assert.Contains(t, out, "boom\n      from /home/me/.pi-remote/settings.json\n")
	assert.NotContains(t, out, "\x1b")
}
