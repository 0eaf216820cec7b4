package agent

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"

	"github.com/pi-remote/pi-remote/mcpclient"
)

// MCPServer is one entry of the settings' "mcpServers", in the shape
// Claude Code's settings and .mcp.json use: a program ("command",
// "args", "env") or an endpoint ("url", "headers"; "type" "http" or
// "sse"). "host" starts a program on that host instead of this machine.
type MCPServer struct {
	Type    string            `json:"type,omitempty"`
	Command string            `json:"command,omitempty"`
	Args    []string          `json:"args,omitempty"`
	Env     map[string]string `json:"env,omitempty"`
	URL     string            `json:"url,omitempty"`
	Headers map[string]string `json:"headers,omitempty"`
	Host    string            `json:"host,omitempty"`
}

// config is the server named name as the MCP client takes it.
func (m MCPServer) config(name string) mcpclient.Config {
	return mcpclient.Config{Name: name, Type: m.Type, Command: m.Command, Args: m.Args, Env: m.Env, URL: m.URL, Headers: m.Headers, Host: m.Host}
}

// MCPOrigin is where a server of the settings was configured.
type MCPOrigin struct {
	File    string
	Project bool // by the project (trusted), not the user's own settings
}

// MCPServers are the MCP servers in force, in name order, each saying
// where it was configured.
func (l LoadedSettings) MCPServers() []mcpclient.Config {
	var out []mcpclient.Config
	for name, s := range l.Settings.MCPServers {
		c := s.config(name)
		o := l.MCPFrom[name]
		c.From, c.Project = o.File, o.Project
		if c.From == "" {
			c.From = "settings"
		}
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// validateMCP checks each server's shape.
func validateMCP(servers map[string]MCPServer) (string, error) {
	for name, s := range servers {
		if name == "" {
			return "mcpServers", errors.New("mcpServers: a server needs a name")
		}
		if err := s.config(name).Validate(); err != nil {
			return name, fmt.Errorf("mcpServers: %s: %v", name, err)
		}
	}
	return "", nil
}

// MCPFile is a project's .mcp.json (Claude Code's project MCP servers).
func MCPFile(dir string) string { return filepath.Join(dir, ".mcp.json") }

// readMCPFile reads a project's .mcp.json: its "mcpServers" (other keys
// are Claude Code's business and ignored). Like a project's settings
// file, it is not read when another user could have written it.
func readMCPFile(p string) (servers map[string]MCPServer, found bool, refused string, err error) {
	f, err := os.OpenFile(p, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, false, "", nil
	}
	if err != nil {
		return nil, false, "", err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, false, "", err
	}
	if refused := projectFileRefusal(f, fi); refused != "" {
		return nil, true, refused, nil
	}
	if !fi.Mode().IsRegular() {
		return nil, false, "", fmt.Errorf("%s: not a regular file", p)
	}
	data, err := io.ReadAll(io.LimitReader(f, 1<<20))
	if err != nil {
		return nil, false, "", err
	}
	var file struct {
		MCPServers map[string]MCPServer `json:"mcpServers"`
	}
	if len(bytes.TrimSpace(data)) > 0 {
		if err := json.Unmarshal(data, &file); err != nil {
			return nil, false, "", fmt.Errorf("%s:%d: %v", p, errorLine(data, err), err)
		}
	}
	if key, err := validateMCP(file.MCPServers); err != nil {
		line := 1
		if i := bytes.Index(data, []byte(jsonString(key))); i >= 0 {
			line = lineAt(data, int64(i)+1)
		}
		return nil, false, "", fmt.Errorf("%s:%d: %v", p, line, err)
	}
	return file.MCPServers, true, "", nil
}

// readMCPFile takes the servers of the project's .mcp.json when the user
// trusts the project (trusted), below the project's settings file; else
// it lists them as not started.
func (l *LoadedSettings) readMCPFile(projectDir string, trusted bool) error {
	p := MCPFile(projectDir)
	servers, found, refused, err := readMCPFile(p)
	if err != nil || !found {
		return err
	}
	l.MCPFile = p
	if refused != "" {
		l.MCPRefused = refused
		return nil
	}
	if !trusted {
		for name := range servers {
			l.mcpFileUntrusted = append(l.mcpFileUntrusted, name)
		}
		sort.Strings(l.mcpFileUntrusted)
		l.MCPUntrusted = append(l.MCPUntrusted, l.mcpFileUntrusted...)
		return nil
	}
	for name := range servers {
		l.MCPFrom[name] = MCPOrigin{File: p, Project: true}
	}
	l.mcpFile = servers
	l.Settings.MCPServers = mergeMap(l.Settings.MCPServers, servers)
	return nil
}

// mcpNotice says which of .mcp.json's servers are not started, and why.
func (l LoadedSettings) mcpNotice() string {
	switch {
	case l.MCPRefused != "":
		return fmt.Sprintf("pi-remote: not using the MCP servers in %s: %s\n", l.MCPFile, l.MCPRefused)
	case len(l.mcpFileUntrusted) > 0:
		// (Each name on the notice's line: a newline in one could
		// forge a line of pi-remote's.)
		names := make([]string, len(l.mcpFileUntrusted))
		for i, n := range l.mcpFileUntrusted {
			names[i] = strings.Join(strings.Fields(n), " ")
		}
		return fmt.Sprintf("pi-remote: not starting the MCP servers in %s (%s), as you have not trusted the project %s: MCP servers are programs that would run on your machine.\nTo start them, trust the project: add %s to \"trustedProjects\" in your settings, or pass --trust-project for one run.\n",
			l.MCPFile, strings.Join(names, ", "), l.ProjectDir, jsonString(l.ProjectDir))
	}
	return ""
}
