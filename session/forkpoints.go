package session

import "github.com/pi-remote/pi-remote/loop"

// ForkPoint is where a session can be forked to ask one of its prompts
// again: Entry is the entry just before the prompt (a fork from it keeps
// everything that came before), Prompt the prompt's text.
type ForkPoint struct {
	Entry  string
	Prompt string
}

// ForkPoints are the fork points of a branch (Branch's entries), the
// latest prompt first. A prompt that opens the branch has none: nothing
// comes before it.
func ForkPoints(entries []Entry) []ForkPoint {
	var out []ForkPoint
	for i := len(entries) - 1; i > 0; i-- {
		if u, ok := entries[i].Message.(*loop.UserMessage); ok {
			out = append(out, ForkPoint{Entry: entries[i-1].ID, Prompt: u.Content.Text()})
		}
	}
	return out
}

// OfHost are the sessions among all (List's) that were on host, but not
// the one at except: the ones a running session may switch to. (Another
// host's session would send its tool calls here.)
func OfHost(all []Info, host, except string) []Info {
	var out []Info
	for _, s := range all {
		if s.Path != except && s.Host == host {
			out = append(out, s)
		}
	}
	return out
}
