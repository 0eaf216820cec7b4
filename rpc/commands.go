package rpc

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/pi-remote/pi-remote/workspace"
)

// commandWord is a message's first word when the message is a slash
// command: a slash, then a name with no other slash (a path such as
// /etc/hosts is not one).
var commandWord = regexp.MustCompile(`^/([^/\s]+)(?:\s|$)`)

// expand is the message sent for message: the message a prompt template
// or a skill stands for when it is /NAME [ARGS] (/skill:NAME [ARGS]),
// else message itself. An unknown /NAME is an error, and nothing is
// sent: it is more likely a mistyped command than words for the model.
func (s *Server) expand(message string) (string, error) {
	m := commandWord.FindStringSubmatch(message)
	if m == nil {
		return message, nil
	}
	name, args := m[1], strings.TrimSpace(message[len(m[0]):])
	if text, ok := s.ws.Expand(name, args); ok {
		return text, nil
	}
	return "", fmt.Errorf("unknown command /%s: nothing was sent (get_commands lists the prompt templates and skills; a message that begins with // is sent as it is)", name)
}

// commandInfo is one command of get_commands.
type commandInfo struct {
	Name        string `json:"name"` // with its slash
	Description string `json:"description"`
	Source      string `json:"source"` // "template" or "skill"
	Path        string `json:"path"`
	Host        string `json:"host,omitempty"`
}

func commandList(cs []workspace.Command) []commandInfo {
	out := []commandInfo{}
	for _, c := range cs {
		source := "template"
		if c.Skill {
			source = "skill"
		}
		out = append(out, commandInfo{Name: "/" + c.Name, Description: c.Description, Source: source, Path: c.Path, Host: c.Host})
	}
	return out
}
