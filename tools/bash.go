package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"path"
	"sync"
	"time"

	"github.com/pi-remote/pi-remote/env"
	"github.com/pi-remote/pi-remote/internal/randhex"
	"github.com/pi-remote/pi-remote/internal/shellquote"
	"github.com/pi-remote/pi-remote/loop"
	"github.com/pi-remote/pi-remote/ops"
)

type bashInput struct {
	Command string   `json:"command" jsonschema_description:"Shell command to run"`
	Timeout *float64 `json:"timeout,omitempty" jsonschema:"exclusiveMinimum=0" jsonschema_description:"Timeout in seconds (default 120)"`
}

// BashDetails are the bash tool's details.
type BashDetails struct {
	Command        string      `json:"command"`
	ExitCode       *int        `json:"exitCode,omitempty"`
	TimedOut       bool        `json:"timedOut,omitempty"`
	Aborted        bool        `json:"aborted,omitempty"`
	Truncation     *truncation `json:"truncation,omitempty"`
	FullOutputPath string      `json:"fullOutputPath,omitempty"`
}

// updateInterval throttles streamed progress.
const updateInterval = 250 * time.Millisecond

func bashTool(e *env.ExecutionEnv, opts Options) Definition {
	return Define(Definition{
		Name: "bash",
		Description: fmt.Sprintf("Run a shell command in the working directory (bash when the host has it, otherwise sh). "+
			"stdin is closed and there is no terminal, so interactive programs fail instead of waiting. stdout and stderr are merged. "+
			"Returns the last %d lines or %dKB of output; when more was produced, the full output is saved to a file on the same host and its path is given. "+
			"Default timeout %s, at most %s. Background jobs started with & keep running after the command returns."+batchOrder,
			MaxLines, MaxBytes/1024, opts.BashTimeout, opts.MaxBashTimeout),
		PromptSnippet: "Execute shell commands (ls, grep, git, build and test tools, ...)",
		Admit:         admitAfterAll(e),
		PromptGuidelines: []string{
			"Use bash for running programs, builds, tests and git; do not use it to read or edit files when read, edit or write can.",
		},
		RenderCall: func(args json.RawMessage) string {
			var in bashInput
			if err := json.Unmarshal(args, &in); err != nil {
				return "bash"
			}
			return "$ " + in.Command
		},
		RenderResult: func(res loop.Result, th Theme) string {
			return FoldTail(res.Content.Text(), FoldLines, th)
		},
	}, func(ctx context.Context, in bashInput, onUpdate func(loop.Result)) (loop.Result, error) {
		return runBash(ctx, e, opts, in, onUpdate)
	})
}

func runBash(ctx context.Context, e *env.ExecutionEnv, opts Options, in bashInput, onUpdate func(loop.Result)) (loop.Result, error) {
	timeout := opts.BashTimeout
	if in.Timeout != nil {
		t := *in.Timeout
		if math.IsNaN(t) || t <= 0 || t > opts.MaxBashTimeout.Seconds() {
			return errorResult("Invalid timeout %v: give seconds between 0 and %d.", t, int(opts.MaxBashTimeout.Seconds()))
		}
		timeout = time.Duration(t * float64(time.Second))
	}
	if in.Command == "" {
		return errorResult("The command is empty.")
	}
	caps, err := e.Capabilities(ctx)
	if err != nil {
		return fileError("", err)
	}
	script := in.Command
	if caps.Bash != "" {
		// After "--", a command such as "-x" is the command, not an
		// option of bash.
		script = "exec " + shellquote.Quote(caps.Bash) + " -c -- " + shellquote.Quote(in.Command)
	}
	spill := path.Join(caps.TmpDir, "pi-remote-bash-"+randhex.String(8)+".log")

	runCtx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	sink := &bashSink{onUpdate: onUpdate}
	// The host keeps the complete output when it is longer than the
	// result can show: no second transfer, no extra channel.
	save := &ops.SaveOutput{Path: spill, OverBytes: MaxBytes, OverLines: MaxLines}
	execErr := e.Exec(runCtx, ops.Command{Script: script, Output: sink, SaveOutput: save, Label: in.Command})

	details := BashDetails{Command: in.Command}
	var trailer string
	isError := false
	var exit *ops.ExitError
	switch {
	case ctx.Err() != nil:
		details.Aborted, isError = true, true
		trailer = "Command aborted."
	case errors.Is(runCtx.Err(), context.DeadlineExceeded):
		details.TimedOut, isError = true, true
		trailer = fmt.Sprintf("Command timed out after %s.", timeout)
	case errors.As(execErr, &exit):
		details.ExitCode, isError = &exit.Code, true
		trailer = fmt.Sprintf("Command exited with code %d.", exit.Code)
		if exit.Reason != "" {
			trailer = fmt.Sprintf("Command stopped: %s (exit code %d).", exit.Reason, exit.Code)
		}
	case errors.Is(execErr, ops.ErrConnectionLost):
		isError = true
		trailer = fmt.Sprintf("Connection to the host was lost and did not come back in time (%v). The next call reconnects.", execErr)
	case execErr != nil:
		return fileError(in.Command, execErr)
	default:
		zero := 0
		details.ExitCode = &zero
	}

	t := sink.result()
	text := t.Content
	if t.TotalBytes == 0 {
		text = "(no output)"
	}
	var notices []string
	if t.Truncated {
		details.Truncation = &t
		first := t.TotalLines - t.OutputLines + 1
		shown := fmt.Sprintf("Showing lines %d-%d of %d", first, t.TotalLines, t.TotalLines)
		if t.PartialLine {
			shown = fmt.Sprintf("Showing the last %s of line %d (the line is longer than %s)", formatSize(int64(t.OutputBytes)), t.TotalLines, formatSize(MaxBytes))
		}
		if save.Saved {
			details.FullOutputPath = spill
			notices = append(notices, fmt.Sprintf("%s. Full output (%s): %s; page through it with read offset/limit.", shown, formatSize(int64(t.TotalBytes)), spill))
		} else {
			notices = append(notices, fmt.Sprintf("%s. The full output could not be saved on the host.", shown))
		}
	}
	notices = append(notices, trailer)
	return loop.Result{
		Content: loop.ContentList{&loop.Text{Text: withNotice(text, notices...)}},
		Details: details,
		IsError: isError,
	}, nil
}

// bashSink collects a command's output: it counts it and keeps a tail
// window for the result and for progress updates. It never blocks on
// anything but the update callback.
type bashSink struct {
	onUpdate func(loop.Result)

	mu         sync.Mutex
	tail       []byte // the last tailWindow bytes
	total      int
	lines      int
	lastNL     bool
	lastUpdate time.Time
}

const tailWindow = 2 * MaxBytes

func (s *bashSink) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.total += len(p)
	s.lines += bytes.Count(p, []byte{'\n'})
	s.lastNL = len(p) > 0 && p[len(p)-1] == '\n'
	s.tail = append(s.tail, p...)
	if len(s.tail) > tailWindow {
		s.tail = append(s.tail[:0], s.tail[len(s.tail)-tailWindow:]...)
	}
	if now := time.Now(); now.Sub(s.lastUpdate) >= updateInterval {
		s.lastUpdate = now
		t := truncateTail(string(s.tail), MaxLines, MaxBytes)
		s.onUpdate(loop.Result{Content: loop.ContentList{&loop.Text{Text: t.Content}}})
	}
	return len(p), nil
}

func (s *bashSink) result() truncation {
	s.mu.Lock()
	defer s.mu.Unlock()
	t := truncateTail(string(s.tail), MaxLines, MaxBytes)
	t.TotalBytes = s.total
	t.TotalLines = s.lines
	if !s.lastNL && s.total > 0 {
		t.TotalLines++
	}
	// What is kept is a suffix of the whole output.
	t.Truncated = t.OutputBytes < s.total
	t.Content = string(bytes.ToValidUTF8([]byte(t.Content), []byte("\uFFFD")))
	return t
}
