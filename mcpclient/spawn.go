package mcpclient

import (
	"context"
	"io"
	"slices"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/pi-remote/pi-remote/ops"
)

// SpawnTransport runs a stdio MCP server with a host's ops.Spawner: on a
// remote host, the program runs over pi-remote's connection to it (a
// session channel of its own, see ops/ssh), in its own process group
// there, newline-delimited JSON-RPC on its stdin and stdout. The context
// Connect gets bounds the program's life: when it ends (the session
// ends), the program's group is killed on the host. Closing the
// connection closes the program's stdin (MCP's stdio shutdown); the host
// gives it StopGrace to exit, then ends its group, and Close waits for
// that. A dropped connection ends the MCP session (the program is ended
// on the host when it sees its stdin close); the Manager starts the
// server again at the next call, over the new connection, and tells the
// model that its state was lost.
type SpawnTransport struct {
	// Spawn starts a process on the host (its ops.Spawner).
	Spawn func(ctx context.Context, cmd ops.SpawnCommand) (ops.Process, error)
	// Dir is the working directory on the host ("": the host's default).
	Dir     string
	Command string
	Args    []string
	Env     map[string]string // added to the host's environment
	// StopGrace is how long the program has to exit after its stdin
	// closes (0: 2 s, as for a local program).
	StopGrace time.Duration

	stderr tail
}

var _ mcp.Transport = (*SpawnTransport)(nil)

// Connect starts the program on the host.
func (t *SpawnTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	grace := t.StopGrace
	if grace <= 0 {
		grace = 2 * time.Second
	}
	var env []string
	for k, v := range t.Env {
		env = append(env, k+"="+v)
	}
	slices.Sort(env)
	p, err := t.Spawn(ctx, ops.SpawnCommand{
		Args: append([]string{t.Command}, t.Args...), Dir: t.Dir, Env: env,
		Stderr: &t.stderr, StopGrace: grace,
	})
	if err != nil {
		return nil, err
	}
	return (&mcp.IOTransport{Reader: io.NopCloser(p.Stdout()), Writer: &spawned{p: p}}).Connect(ctx)
}

// Stderr is the end of what the program wrote on its stderr (the last
// few lines), for error messages.
func (t *SpawnTransport) Stderr() string { return t.stderr.String() }

// spawned is a started program's stdin, and its end.
type spawned struct {
	p         ops.Process
	closeOnce sync.Once
}

func (s *spawned) Write(b []byte) (int, error) { return s.p.Stdin().Write(b) }

// Close closes the program's stdin and waits for it to be gone: the host
// ends it within twice its StopGrace (see ops.Spawner), or at once when
// the connection is lost.
func (s *spawned) Close() error {
	s.closeOnce.Do(func() {
		s.p.Stdin().Close()
		s.p.Wait()
	})
	return nil
}
