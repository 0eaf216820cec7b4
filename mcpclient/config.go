// Package mcpclient gives the agent the tools of Model Context Protocol
// servers that settings name, in the shape Claude Code's settings use:
// a program started on this machine and spoken to over its stdin and
// stdout ("command", "args", "env"), or a streamable HTTP or SSE
// endpoint ("url", "headers").
//
// A Manager starts the servers, all at once, and keeps them: a server
// that fails to start is reported once (Manager.Failures) and the
// session goes on without it; one that dies during a call fails that call
// with a clear error and is started again at its next call, the result
// then telling the model that the server's state may be lost. Close stops
// them all; a local server's whole process group is killed.
//
// Each tool of a server becomes a tools.Definition named
// mcp__SERVER__TOOL (Claude Code's naming; Name says how names are made
// to fit what model providers accept), whose arguments are checked
// against the server's input schema as the built-in tools' are, whose
// progress notifications stream as partial results, and whose call is
// cancelled (notifications/cancelled) when the call's context ends.
//
// How a server is reached is the Manager's Connect function: Local for
// this machine. A server whose Config.Host names a host is started there
// by a Connect that knows the hosts; Local refuses it.
package mcpclient

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"
)

// Transports a server may use.
const (
	Stdio = "stdio" // a program, spoken to over its stdin and stdout
	HTTP  = "http"  // streamable HTTP
	SSE   = "sse"   // HTTP with server-sent events (the older transport)
)

// Config is one MCP server as settings describe it.
type Config struct {
	// Name is the server's name in the settings (the key of
	// "mcpServers").
	Name string
	// Type is Stdio, HTTP or SSE; "" is Stdio with a Command, HTTP with a
	// URL.
	Type string
	// Command, Args and Env start a stdio server: Env is added to
	// pi-remote's own environment.
	Command string
	Args    []string
	Env     map[string]string
	// URL and Headers reach an HTTP or SSE server.
	URL     string
	Headers map[string]string
	// Host, for a stdio server, is the name of the host it runs on ("":
	// this machine).
	Host string
	// From says where the server was configured (a settings file), for
	// the person.
	From string
	// Project says that a project configured the server (its .mcp.json
	// or .pi-remote/settings.json), not the user's own settings: what
	// the server claims of its tools (read-only hints) is then not taken
	// as the user's word.
	Project bool
}

// Transport is the transport the config uses: Stdio, HTTP or SSE.
func (c Config) Transport() string {
	switch {
	case c.Type == "streamable-http" || c.Type == "streamableHttp":
		return HTTP
	case c.Type != "":
		return c.Type
	case c.URL != "":
		return HTTP
	}
	return Stdio
}

// Validate says what is wrong with c, if anything.
func (c Config) Validate() error {
	switch t := c.Transport(); t {
	case Stdio:
		if c.Command == "" {
			return errors.New(`a stdio server needs "command"`)
		}
		if c.URL != "" || len(c.Headers) > 0 {
			return errors.New(`"url" and "headers" are for http and sse servers, not a "command"`)
		}
	case HTTP, SSE:
		if c.URL == "" {
			return fmt.Errorf(`an %s server needs "url"`, t)
		}
		if !strings.HasPrefix(c.URL, "http://") && !strings.HasPrefix(c.URL, "https://") && !strings.HasPrefix(c.URL, "${") {
			return fmt.Errorf("url %q: want http:// or https://", c.URL)
		}
		if c.Command != "" || len(c.Args) > 0 || len(c.Env) > 0 {
			return fmt.Errorf(`"command", "args" and "env" are for stdio servers, not an %s one`, t)
		}
		if c.Host != "" {
			return fmt.Errorf(`"host" is for stdio servers: an %s server is reached at its URL`, t)
		}
	default:
		return fmt.Errorf("type %q: want stdio, http or sse", c.Type)
	}
	return nil
}

var variable = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)(:-([^}]*))?\}`)

// Expand is c with ${VAR} and ${VAR:-default} replaced by lookup's values
// in the command, the args, the env and header values and the url, as
// Claude Code expands them in .mcp.json; missing are the variables
// without a value or a default.
func (c Config) Expand(lookup func(string) (string, bool)) (out Config, missing []string) {
	expand := func(s string) string {
		return variable.ReplaceAllStringFunc(s, func(m string) string {
			sub := variable.FindStringSubmatch(m)
			if v, ok := lookup(sub[1]); ok && v != "" {
				return v
			}
			if sub[2] != "" {
				return sub[3]
			}
			if !slices.Contains(missing, sub[1]) {
				missing = append(missing, sub[1])
			}
			return ""
		})
	}
	out = c
	out.Command, out.URL = expand(c.Command), expand(c.URL)
	out.Args = nil
	for _, a := range c.Args {
		out.Args = append(out.Args, expand(a))
	}
	each := func(m map[string]string) map[string]string {
		if m == nil {
			return nil
		}
		r := map[string]string{}
		for k, v := range m {
			r[k] = expand(v)
		}
		return r
	}
	out.Env, out.Headers = each(c.Env), each(c.Headers)
	return out, missing
}

// Where says where the server runs or is reached, for the person.
func (c Config) Where() string {
	switch {
	case c.Transport() != Stdio:
		return c.URL
	case c.Host != "":
		return "host " + c.Host
	}
	return "this machine"
}

// MaxNameLength is the longest tool name the model providers take
// (OpenAI's 64; Anthropic's is longer).
const MaxNameLength = 64

var unfit = regexp.MustCompile(`[^A-Za-z0-9_-]`)

// Name is the tool name the model sees for a server's tool:
// mcp__SERVER__TOOL, where every character of SERVER and TOOL that is not
// an ASCII letter, digit, "_" or "-" becomes "_" (what OpenAI and
// Anthropic accept), and a name longer than MaxNameLength keeps its
// first 55 characters, then "_" and 8 hex digits of the SHA-256 of the
// whole name, so that two long names stay apart.
func Name(server, tool string) string {
	n := "mcp__" + unfit.ReplaceAllString(server, "_") + "__" + unfit.ReplaceAllString(tool, "_")
	if len(n) <= MaxNameLength {
		return n
	}
	sum := sha256.Sum256([]byte(n))
	return n[:MaxNameLength-9] + "_" + hex.EncodeToString(sum[:4])
}

// ServerPrefix is the start of every tool name of server: a rule or a
// tool selection naming it names all of them.
func ServerPrefix(server string) string {
	return "mcp__" + unfit.ReplaceAllString(server, "_") + "__"
}

// sorted are the configs in name order.
func sorted(cfgs []Config) []Config {
	out := append([]Config(nil), cfgs...)
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}
