package main

import (
	"context"
	"io"
	"os"
	"os/signal"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/pi-remote/pi-remote/internal/termtext"
	"github.com/pi-remote/pi-remote/ops/ssh"
	"github.com/pi-remote/pi-remote/workspace"
)

// iostreams are a command's standard streams.
type iostreams struct {
	in       io.Reader
	out, err io.Writer
}

// globalOptions are the flags every command shares.
type globalOptions struct {
	host     workspace.HostOptions // --host, --cwd and how to reach the hosts
	settings settings
	// trustProject trusts the project's settings file for this run
	// (--trust-project).
	trustProject bool
	perm         permissionOptions // --permissions, --host-permissions
	// modelSource says where --model's value came from when not from
	// the command line (the settings file, PI_REMOTE_MODEL).
	modelSource string
	warn        io.Writer // stderr: notices that do not stop a command
	// fromSettings are the flags the settings gave their values (the
	// command line did not set them).
	fromSettings []string
}

func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	io := iostreams{in: stdin, out: stdout, err: stderr}
	root := newRootCmd(io)
	root.SetArgs(args)
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	err := root.ExecuteContext(ctx)
	return exit(stderr, err)
}

func newRootCmd(io iostreams) *cobra.Command {
	// Notices may carry a host's text (its error): controls shown as
	// text. (Each notice is a whole line, so the writer holds nothing
	// back between them.)
	g := &globalOptions{warn: termtext.NewWriter(io.err)}
	cmd := &cobra.Command{
		Use:   "pi-remote",
		Short: "Agent tools that run where the work is",
		Long: `pi-remote gives an LLM agent seven tools — read, write, edit, bash, grep, find
and ls — that act on an execution environment: this machine, or remote hosts
(--host) over one persistent SSH connection each, with nothing installed
there but sshd and a POSIX sh. Mutations of one file are serialized by a
per-environment queue keyed on the canonical path, so parallel edits never
lose each other.`,
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error {
			if !usesSettings(cmd) {
				return nil
			}
			s, err := loadSettings(g.trustProject, g.warn)
			if err != nil {
				return usageErrorf("settings: %v", err)
			}
			g.settings = s
			return s.apply(cmd, g)
		},
	}
	cmd.PersistentFlags().StringVar(&g.host.Cwd, "cwd", "", "working directory on the host (default: the current directory locally, the home directory on a remote host)")
	cmd.PersistentFlags().BoolVar(&g.trustProject, "trust-project", false, "trust the current directory's .pi-remote/settings.json for this run: it may then set every key, baseUrl and hosts too (to trust it for good, add the directory to trustedProjects in ~/.pi-remote/settings.json)")
	registerHostFlags(cmd.PersistentFlags(), &g.host)
	registerPermissionFlags(cmd.PersistentFlags(), &g.perm)
	cmd.AddCommand(newToolCmd(io, g), newToolsCmd(io), newCheckCmd(io, g), newRunCmd(io, g), newRPCCmd(io, g), newMCPCmd(io, g), newACPCmd(io, g), newJobsCmd(io, g), newSessionsCmd(io, g), newExportCmd(io), newVersionCmd(io))
	return cmd
}

// registerHostFlags are the flags that choose the hosts and say how to
// reach them; every command has them.
func registerHostFlags(fs *pflag.FlagSet, h *workspace.HostOptions) {
	fs.StringArrayVar(&h.Hosts, "host", nil, "host to act on: [user@]host[:port] or an ssh_config alias (default: this machine); repeat as NAME=SPEC for several, the first is the default")
	fs.StringArrayVar(&h.Identities, "identity", nil, "private key file to log in with (repeatable; tried before ssh_config's)")
	fs.StringVar(&h.KnownHosts, "known-hosts", "", "known_hosts file (default: ssh_config's UserKnownHostsFile or ~/.ssh/known_hosts)")
	fs.BoolVar(&h.AcceptNew, "accept-new-host-key", false, "record the key of a host seen for the first time (a changed key is always refused)")
	fs.StringVar(&h.SSHConfig, "ssh-config", "", `ssh_config file (default ~/.ssh/config; "none" reads none)`)
	fs.StringVar(&h.Jump, "jump", "", "jump host(s), comma-separated, like ssh -J (overrides ProxyJump)")
	fs.DurationVar(&h.ConnectTimeout, "connect-timeout", 0, "bound on connecting and logging in (default 15s)")
	fs.DurationVar(&h.Reattach, "reattach-timeout", ssh.DefaultReattachTimeout, "how long a remote command whose connection dropped waits for the host to come back (0: fail at once; the command then runs on until its lease runs out)")
	fs.DurationVar(&h.LeaseTTL, "lease-ttl", ssh.DefaultLeaseTTL, "how long a remote command runs on once no client renews its lease (a client that crashed or never came back)")
	fs.Int64Var(&h.OutputCapMiB, "output-cap-mib", ssh.DefaultOutputCap>>20, "most output (MiB) a remote command may write on its host before it is stopped (0: no cap)")
}
