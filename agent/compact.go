package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/pi-remote/pi-remote/loop"
)

// CompactionSettings say when the context is compacted and what is kept.
type CompactionSettings struct {
	// Off turns automatic compaction off (compact on demand still works;
	// a context-length error then ends the run).
	Off bool `json:"off"`
	// ReserveTokens is the room kept free in the window for the next
	// answer and the summary request: the context is compacted once it
	// passes the window minus this (default 16,384).
	ReserveTokens int `json:"reserveTokens"`
	// KeepRecentTokens is about how much of the latest conversation stays
	// word for word after a compaction (default 20,000).
	KeepRecentTokens int `json:"keepRecentTokens"`
}

const (
	defaultReserveTokens    = 16_384
	defaultKeepRecentTokens = 20_000
)

func (c CompactionSettings) withDefaults() CompactionSettings {
	if c.ReserveTokens <= 0 {
		c.ReserveTokens = defaultReserveTokens
	}
	if c.KeepRecentTokens <= 0 {
		c.KeepRecentTokens = defaultKeepRecentTokens
	}
	return c
}

// threshold is the context size past which a compaction is due in window:
// the window less the reserve, but never less than half the window (a
// reserve larger than a small window would compact on every turn).
func (c CompactionSettings) threshold(window int) int {
	return max(window-c.ReserveTokens, window/2)
}

// keep is how much recent conversation a compaction keeps in window: the
// setting, but at most half the threshold (a small window must have room
// left after a compaction).
func (c CompactionSettings) keep(window int) int {
	return min(c.KeepRecentTokens, c.threshold(window)/2)
}

// estimate is a message's size in tokens, guessed as characters / 4 (an
// overestimate for English and code, which is the safe side).
func estimate(m loop.Message) int {
	chars := 0
	content := func(l loop.ContentList) {
		for _, c := range l {
			switch c := c.(type) {
			case *loop.Text:
				chars += len(c.Text)
			case *loop.Thinking:
				chars += len(c.Thinking)
			case *loop.ToolCall:
				chars += len(c.Name) + len(c.Arguments)
			case *loop.Image:
				chars += 4800 // providers count an image as about 1,200 tokens
			}
		}
	}
	switch m := m.(type) {
	case *loop.UserMessage:
		content(m.Content)
	case *loop.AssistantMessage:
		content(m.Content)
	case *loop.ToolResultMessage:
		content(m.Content)
	}
	return (chars + 3) / 4
}

// contextTokens is the size of msgs as the model would see it: the usage
// the last answered model call reported (its prompt and its answer are the
// context up to it), plus estimates for the messages after it. Only
// messages from index fresh on are answers to this context (those before
// were made before a compaction replaced part of what they saw); without
// one, every message is estimated.
func contextTokens(msgs []loop.Message, fresh int) int {
	total := 0
	for i := len(msgs) - 1; i >= 0; i-- {
		if a, ok := msgs[i].(*loop.AssistantMessage); ok && i >= fresh && a.Usage != nil && a.StopReason != loop.StopError && a.StopReason != loop.StopAborted {
			u := a.Usage
			return total + u.Input + u.CacheRead + u.CacheWrite + u.Output
		}
		total += estimate(msgs[i])
	}
	return total
}

// ErrNothingToCompact is returned when the context holds nothing that a
// summary could replace (it is all recent).
var ErrNothingToCompact = errors.New("nothing to compact: the whole context is recent conversation")

// cutPoint is where the kept part of msgs begins: the first message of
// msgs[from:] that starts a user turn or an assistant message (never a
// tool result: a result stays with its call) such that what follows is
// at most keep tokens; when no such point exists, the last valid one
// before. A cut inside a long turn splits it: the summary covers its
// early part. Returns from when nothing before could be summarized.
func cutPoint(msgs []loop.Message, from, keep int) int {
	valid := func(i int) bool {
		switch msgs[i].(type) {
		case *loop.UserMessage, *loop.AssistantMessage:
			return true
		}
		return false
	}
	// The earliest index whose tail fits in keep.
	start, tail := len(msgs), 0
	for start > from {
		t := estimate(msgs[start-1])
		if tail+t > keep {
			break
		}
		tail += t
		start--
	}
	for i := start; i < len(msgs); i++ {
		if i > from && valid(i) {
			return i
		}
	}
	for i := min(start, len(msgs)) - 1; i > from; i-- {
		if valid(i) {
			return i
		}
	}
	return from
}

// overflowWordings are how providers say a request did not fit the
// window: OpenAI ("context_length_exceeded", "maximum context length"),
// Anthropic ("prompt is too long"), vLLM and SGLang ("longer than the
// model's context length", "maximum context length"), llama.cpp ("exceeds
// the available context size"), Ollama and others ("context window",
// "too many tokens", "input is too long").
var overflowWordings = regexp.MustCompile(`(?i)context[_ ]length[_ ]exceeded|maximum context length|prompt is too long|longer than the model's context length|exceeds? the (available )?context (size|window|length)|context window|too many (input )?tokens|input is too long|reduce the length of the (messages|prompt)`)

// statedLimits find the window in a refusal that states it, the number
// in the first group: OpenAI, vLLM, Groq and OpenRouter ("maximum context
// length is 8192 tokens"), Mistral ("too large for model with 32768
// maximum context length"), Anthropic ("210000 tokens > 200000
// maximum"), SGLang and llama.cpp ("the model's context length (4096
// tokens)", "the available context size (4096 tokens)"), and the
// general "context window of 128000 tokens".
var statedLimits = []*regexp.Regexp{
	regexp.MustCompile(`(?i)maximum context length is (\d[\d,]*)`),
	regexp.MustCompile(`(?i)(\d[\d,]*)[ -](?:tokens? )?maximum context length`),
	regexp.MustCompile(`(?i)tokens? > (\d[\d,]*)(?: tokens)? maximum`),
	regexp.MustCompile(`(?i)context (?:length|size|window) \((\d[\d,]*)(?: tokens)?\)`),
	regexp.MustCompile(`(?i)context (?:length|size|window) (?:is |of )(\d[\d,]*)`),
}

// statedWindow is the context window a provider's refusal states, in
// tokens, or 0 when it names none.
func statedWindow(refusal string) int {
	for _, re := range statedLimits {
		if m := re.FindStringSubmatch(refusal); m != nil {
			if n, err := strconv.Atoi(strings.ReplaceAll(m[1], ",", "")); err == nil && n > 0 {
				return n
			}
		}
	}
	return 0
}

// IsOverflowRefusal says whether msg is a provider's refusal of a context
// that did not fit its window. A Session answers it itself (it compacts
// and tries once more, or ends the run with ErrOverflow, whose text
// repeats the refusal), so a front end shows it as a note, not as the
// run's error.
func IsOverflowRefusal(msg *loop.AssistantMessage) bool {
	return msg != nil && msg.StopReason == loop.StopError && overflowWordings.MatchString(msg.ErrorMessage)
}

// IsContextOverflow says whether a model call that ended with msg failed
// because the context did not fit window: the provider's error says so,
// or the usage it reported is beyond the window.
func IsContextOverflow(msg *loop.AssistantMessage, window int) bool {
	if msg == nil {
		return false
	}
	if IsOverflowRefusal(msg) {
		return true
	}
	if u := msg.Usage; u != nil && window > 0 && msg.StopReason != loop.StopAborted {
		return u.Input+u.CacheRead+u.CacheWrite > window
	}
	return false
}

// summaryInstructions tell the model how to write a compaction summary.
const summaryInstructions = `You write the working memory of a coding agent whose conversation grew too long for its context window. The messages you are given will be replaced by your summary; the agent continues from the summary and the most recent messages only, so keep everything it needs to go on without asking again, and drop what it does not.

Answer with the summary only, in this Markdown structure (omit a section that would be empty):

## Goal
What the user wants, in their terms.
## Constraints and preferences
Requirements, conventions and choices the user stated.
## Progress
### Done
### In progress
### Blocked
## Key decisions
Each with its reason.
## Next steps
Ordered.
## Critical context
Exact names, paths (with their host), commands, error messages, values and snippets the next steps need.`

// serializeLimit bounds how much of one message goes into the summary
// request: long tool output is cut in the middle.
const serializeLimit = 4000

// serialize writes msgs as plain text for the summarizer: each message
// with its role, tool calls with their arguments, tool results cut to
// serializeLimit.
func serialize(msgs []loop.Message) string {
	var b strings.Builder
	clip := func(s string) string {
		if len(s) <= serializeLimit {
			return s
		}
		return s[:serializeLimit/2] + fmt.Sprintf("\n[... %d characters left out ...]\n", len(s)-serializeLimit) + s[len(s)-serializeLimit/2:]
	}
	for _, m := range msgs {
		switch m := m.(type) {
		case *loop.UserMessage:
			fmt.Fprintf(&b, "[user]\n%s\n\n", clip(m.Content.Text()))
		case *loop.AssistantMessage:
			for _, c := range m.Content {
				switch c := c.(type) {
				case *loop.Text:
					fmt.Fprintf(&b, "[assistant]\n%s\n\n", clip(c.Text))
				case *loop.ToolCall:
					fmt.Fprintf(&b, "[assistant calls %s]\n%s\n\n", c.Name, clip(string(c.Arguments)))
				}
			}
			if m.StopReason == loop.StopError && m.ErrorMessage != "" {
				fmt.Fprintf(&b, "[model error]\n%s\n\n", m.ErrorMessage)
			}
		case *loop.ToolResultMessage:
			status := "result"
			if m.IsError {
				status = "error"
			}
			fmt.Fprintf(&b, "[%s %s]\n%s\n\n", m.ToolName, status, clip(m.Content.Text()))
		}
	}
	return b.String()
}

// summaryRequest is the model call that summarizes msgs, updating
// previous (the last compaction's summary, if any), with an optional
// focus from the user.
func summaryRequest(previous string, msgs []loop.Message, focus string) loop.Request {
	var b strings.Builder
	if previous != "" {
		fmt.Fprintf(&b, "The summary so far, of the conversation before these messages:\n\n<previous-summary>\n%s\n</previous-summary>\n\n", previous)
		b.WriteString("Update it with the messages below: keep what still holds, change what they changed, add what is new.\n\n")
	} else {
		b.WriteString("Summarize the conversation below.\n\n")
	}
	fmt.Fprintf(&b, "<conversation>\n%s</conversation>\n", serialize(msgs))
	if focus = strings.TrimSpace(focus); focus != "" {
		fmt.Fprintf(&b, "\nThe user asks the summary to focus on: %s\n", focus)
	}
	return loop.Request{SystemPrompt: summaryInstructions, Messages: []loop.Message{loop.NewUserText(b.String())}}
}

// fileLists adds to summary the files the summarized messages read and
// changed, with their host, as the tool calls say (exact, whatever the
// model wrote): merged with the lists of the previous summary.
func fileLists(summary, previous string, msgs []loop.Message, defaultHost string) string {
	read, changed := parseFileLists(previous)
	for _, m := range msgs {
		a, ok := m.(*loop.AssistantMessage)
		if !ok {
			continue
		}
		for _, c := range a.ToolCalls() {
			var args struct {
				Path string `json:"path"`
				Host string `json:"host"`
			}
			if json.Unmarshal(c.Arguments, &args) != nil || args.Path == "" {
				continue
			}
			host := args.Host
			if host == "" {
				host = defaultHost
			}
			f := host + ":" + args.Path
			switch c.Name {
			case "read":
				if !slices.Contains(read, f) {
					read = append(read, f)
				}
			case "write", "edit":
				if !slices.Contains(changed, f) {
					changed = append(changed, f)
				}
			}
		}
	}
	summary = strings.TrimSpace(stripFileLists(summary))
	if len(read) > 0 {
		summary += "\n\n<files-read>\n" + strings.Join(read, "\n") + "\n</files-read>"
	}
	if len(changed) > 0 {
		summary += "\n\n<files-modified>\n" + strings.Join(changed, "\n") + "\n</files-modified>"
	}
	return summary
}

var fileListBlock = regexp.MustCompile(`(?s)\s*<files-(read|modified)>\n(.*?)\n?</files-(read|modified)>`)

func parseFileLists(summary string) (read, changed []string) {
	for _, m := range fileListBlock.FindAllStringSubmatch(summary, -1) {
		lines := strings.Split(strings.TrimSpace(m[2]), "\n")
		if m[1] == "read" {
			read = append(read, lines...)
		} else {
			changed = append(changed, lines...)
		}
	}
	return read, changed
}

func stripFileLists(summary string) string {
	return fileListBlock.ReplaceAllString(summary, "")
}

// summarize asks model for the summary of msgs.
func summarize(ctx context.Context, model loop.Model, previous string, msgs []loop.Message, focus, defaultHost string) (string, *loop.Usage, error) {
	answer := loop.Complete(ctx, model, summaryRequest(previous, msgs, focus))
	switch answer.StopReason {
	case loop.StopAborted:
		return "", answer.Usage, context.Canceled
	case loop.StopError:
		return "", answer.Usage, fmt.Errorf("the summary request failed: %s", answer.ErrorMessage)
	}
	text := strings.TrimSpace(answer.Text())
	if text == "" {
		return "", answer.Usage, errors.New("the summary request returned no text")
	}
	return fileLists(text, previous, msgs, defaultHost), answer.Usage, nil
}
