// Command customtool is pi-remote's agent with one tool of its own,
// changelog, which adds an entry to a changelog file on the selected host.
// It shows what embedding pi-remote in a Go program takes: a
// tools.Definition made with tools.Define, given to the workspace
// (workspace.Options.Tools), whose loop configuration an agent.Session
// runs. Nothing else changes: the system prompt lists the tool, the
// printer renders its calls with its renderer, the permission gate and
// the mutation queue apply to it, and with several hosts it takes the
// "host" argument.
//
//	customtool [--host SPEC]... [--cwd DIR] [--model PROVIDER/ID] [--tools LIST] [--permissions MODE] PROMPT...
//	customtool tools [--json]
//
// The first form runs the agent on PROMPT and prints its answer (tool
// activity on stderr); the second lists the tools, changelog among them.
// Models are named as by pi-remote run (openai/ID, anthropic/ID,
// scripted/FILE).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"

	"github.com/pi-remote/pi-remote/agent"
	"github.com/pi-remote/pi-remote/agent/permission"
	"github.com/pi-remote/pi-remote/llm"
	"github.com/pi-remote/pi-remote/loop"
	"github.com/pi-remote/pi-remote/ops/ssh"
	"github.com/pi-remote/pi-remote/printer"
	"github.com/pi-remote/pi-remote/workspace"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// hostFlags is --host, repeatable.
type hostFlags []string

func (h *hostFlags) String() string     { return strings.Join(*h, ",") }
func (h *hostFlags) Set(v string) error { *h = append(*h, v); return nil }

// run runs the command and returns its exit status: 0 success, 1 a failed
// run, 2 a usage error, 3 a host that cannot be reached.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	listing := len(args) > 0 && args[0] == "tools"
	if listing {
		args = args[1:]
	}
	fs := flag.NewFlagSet("customtool", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var hosts hostFlags
	fs.Var(&hosts, "host", "host to act on: [user@]host[:port], an ssh_config alias, or NAME=SPEC (repeatable; default this machine)")
	cwd := fs.String("cwd", "", "working directory on the host")
	model := fs.String("model", os.Getenv("PI_REMOTE_MODEL"), "model: openai/ID, anthropic/ID or scripted/FILE")
	active := fs.String("tools", "read,bash,edit,write,changelog", "active tools, comma-separated")
	mode := fs.String("permissions", "auto", "permission mode: auto, ask or read-only")
	asJSON := fs.Bool("json", false, "with tools: print JSON")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	err := agentRun(ctx, options{
		hosts: workspace.HostOptions{
			Hosts: hosts, Cwd: *cwd,
			// pi-remote's defaults (HostOptions' zero values differ): a
			// command outlives a dropped link and re-attaches; a remote
			// command's output is capped.
			Reattach: ssh.DefaultReattachTimeout, OutputCapMiB: ssh.DefaultOutputCap >> 20,
		},
		model: *model, active: strings.Split(*active, ","), mode: *mode,
		listing: listing, json: *asJSON, prompt: strings.Join(fs.Args(), " "),
	}, stdout, stderr)
	var usage *workspace.UsageError
	var conn *workspace.ConnectionError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &usage):
		fmt.Fprintln(stderr, "customtool:", err)
		return 2
	case errors.As(err, &conn):
		fmt.Fprintln(stderr, "customtool:", err)
		return 3
	default:
		fmt.Fprintln(stderr, "customtool:", err)
		return 1
	}
}

type options struct {
	hosts   workspace.HostOptions
	model   string
	active  []string
	mode    string
	listing bool
	json    bool
	prompt  string
}

func agentRun(ctx context.Context, o options, stdout, stderr io.Writer) error {
	if !o.listing && (o.prompt == "" || o.model == "") {
		return &workspace.UsageError{Err: errors.New("give a prompt and --model")}
	}
	mode, err := permission.ParseMode(o.mode)
	if err != nil {
		return &workspace.UsageError{Err: err}
	}
	var m loop.Model
	if !o.listing {
		if m, err = llm.New(o.model, llm.Options{}); err != nil {
			return &workspace.UsageError{Err: err}
		}
	}

	// The hosts, and the workspace over them: the built-in tools and the
	// program's own on every host, the system prompt, the permission gate.
	hosts, err := workspace.OpenHosts(ctx, o.hosts, workspace.Session, nil, stderr)
	if err != nil {
		return err
	}
	w, err := workspace.Open(ctx, hosts, workspace.Options{
		Model:  m,
		Active: o.active,
		Gate:   permission.NewGate(permission.Policy{Mode: mode}),
		Tools:  changelogTools,
		Warn:   stderr,
	})
	if err != nil {
		return err
	}
	defer w.Close()
	if o.listing {
		return printer.Tools(stdout, w.Defs, o.json)
	}

	// One agent session over the workspace, printed as pi-remote run's
	// print mode prints it.
	out := printer.New(stdout, stderr, w.ByName, false, false)
	s := agent.New(agent.Options{
		Config:      w.Config,
		Model:       agent.BuiltinModels().Lookup(o.model),
		DefaultHost: w.DefaultHost(),
		Emit:        out.Emit,
	})
	defer s.Close()
	_, err = s.Prompt(ctx, loop.NewUserText(o.prompt))
	out.Finish()
	return err
}
