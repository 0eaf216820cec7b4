package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/pem"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/crypto/ssh/knownhosts"

	"github.com/pi-remote/pi-remote/env"
	"github.com/pi-remote/pi-remote/integration/netfault"
	"github.com/pi-remote/pi-remote/integration/sshd"
	"github.com/pi-remote/pi-remote/loop"
	"github.com/pi-remote/pi-remote/ops"
	"github.com/pi-remote/pi-remote/ops/ssh/reach"
	"github.com/pi-remote/pi-remote/tools"
)

// viaProxy is srv's client configuration, dialing the proxy instead, with
// a known_hosts entry for the proxy's address.
func viaProxy(t testing.TB, srv *sshd.Server, p *netfault.Proxy) reach.Config {
	t.Helper()
	cfg := srv.Config()
	kh := filepath.Join(t.TempDir(), "known_hosts")
	line := knownhosts.Line([]string{knownhosts.Normalize(p.Addr)}, srv.HostKeys[0]) + "\n"
	require.NoError(t, os.WriteFile(kh, []byte(line), 0o600))
	cfg.KnownHostsFiles = []string{kh}
	host, port := splitAddr(t, p.Addr)
	cfg.HostName, cfg.Port = host, port
	return cfg
}

// toolEnv is an environment on h rooted at dir, with its tools.
type toolEnv struct {
	t    testing.TB
	env  *env.ExecutionEnv
	defs []tools.Definition
}

func newToolEnv(t testing.TB, o ops.Operations, name, dir string) *toolEnv {
	e := env.New(o, env.Options{Name: name, Cwd: dir, Home: dir})
	return &toolEnv{t: t, env: e, defs: tools.Definitions(e, tools.Options{})}
}

func (te *toolEnv) call(name string, args any) *loop.ToolResultMessage {
	te.t.Helper()
	return te.callCtx(te.t.Context(), name, args)
}

func (te *toolEnv) callCtx(ctx context.Context, name string, args any) *loop.ToolResultMessage {
	raw, err := json.Marshal(args)
	if err != nil {
		panic(err) // tests pass plain maps
	}
	return loop.ExecuteTool(ctx, loop.Config{Tools: tools.WrapAll(te.defs)}, &loop.ToolCall{ID: "t", Name: name, Arguments: raw}, nil)
}

func (te *toolEnv) ok(name string, args any) string {
	te.t.Helper()
	m := te.call(name, args)
	require.False(te.t, m.IsError, "%s failed: %s", name, m.Content.Text())
	return m.Content.Text()
}

func splitAddr(t testing.TB, addr string) (string, int) {
	t.Helper()
	cfg, err := reach.Resolve(addr, reach.Options{SSHConfigFile: "none"})
	require.NoError(t, err)
	return cfg.HostName, cfg.Port
}

func pemEncode(b *pem.Block) []byte { return pem.EncodeToMemory(b) }

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return b
}

// lockedBuffer is a bytes.Buffer written by one goroutine and read by
// another.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// hostCache is a directory for a test host's XDG_CACHE_HOME (its jobs).
// The host's job processes remove their files in the background after
// the connection closes, so removing the directory at the end is tried
// again until they are done (t.TempDir's one try can find it refilled).
func hostCache(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "pi-remote-cache-")
	require.NoError(t, err)
	t.Cleanup(func() {
		deadline := time.Now().Add(10 * time.Second)
		for {
			err := os.RemoveAll(dir)
			if err == nil {
				return
			}
			if time.Now().After(deadline) {
				t.Errorf("the host's jobs directory is still being written 10 s after the end: %v", err)
				return
			}
			time.Sleep(50 * time.Millisecond)
		}
	})
	return dir
}
