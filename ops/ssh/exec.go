package ssh

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"io/fs"
	"strconv"
	"strings"
	"time"

	"github.com/pi-remote/pi-remote/internal/shellquote"
	"github.com/pi-remote/pi-remote/ops"
)

func quote(s string) string { return shellquote.Quote(s) }

// Exec implements ops.ExecOperations on a command server: `sh -c` in its
// own session and process group, stdin /dev/null, no terminal, output
// merged. Cancellation kills the group on the host before Exec returns.
func (h *Host) Exec(ctx context.Context, cmd ops.Command) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	script, err := commandScript(cmd)
	if err != nil {
		return err
	}
	c, err := h.conn(ctx)
	if err != nil {
		return err
	}
	s, err := c.server(ctx)
	if err != nil {
		return err
	}
	out := cmd.Output
	if out == nil {
		out = io.Discard
	}
	s.pid.Store(0)
	status, err := c.serve(ctx, s, "x "+quote(script)+" "+quote(cmd.Dir), out, c.killCommand)
	if err != nil {
		return err
	}
	switch status {
	case "0":
		return nil
	case "!ENOENT":
		return &fs.PathError{Op: "chdir", Path: cmd.Dir, Err: fs.ErrNotExist}
	case "!ENOTDIR":
		return &fs.PathError{Op: "chdir", Path: cmd.Dir, Err: ops.ErrNotDir}
	}
	code, perr := strconv.Atoi(status)
	if perr != nil {
		return fmt.Errorf("command server: unexpected status %q", status)
	}
	return &ops.ExitError{Code: code}
}

// commandScript prefixes the script with its environment. Values go in
// through single quotes; names must be valid shell names.
func commandScript(cmd ops.Command) (string, error) {
	if strings.IndexByte(cmd.Script, 0) >= 0 {
		return "", fmt.Errorf("command contains a NUL byte")
	}
	var b strings.Builder
	for _, kv := range cmd.Env {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || !validName(k) || strings.IndexByte(v, 0) >= 0 {
			return "", fmt.Errorf("invalid environment entry %q", kv)
		}
		b.WriteString("export " + k + "=" + quote(v) + "\n")
	}
	b.WriteString(cmd.Script)
	return b.String(), nil
}

func validName(s string) bool {
	if s == "" {
		return false
	}
	for i, r := range s {
		if r != '_' && (r < 'a' || r > 'z') && (r < 'A' || r > 'Z') && (i == 0 || r < '0' || r > '9') {
			return false
		}
	}
	return true
}

// killCommand kills the process group of the command running on s, from
// a side channel (sshd refuses "signal" requests on root logins, so they
// cannot be relied on). With setsid the command has its own group and s
// lives on; without it the command shares the server's group, and the
// server goes with it.
func (c *conn) killCommand(s *server) {
	// The pid arrives on stderr just after the command starts.
	deadline := time.Now().Add(2 * time.Second)
	for s.pid.Load() == 0 && time.Now().Before(deadline) && !c.isDead() {
		time.Sleep(5 * time.Millisecond)
	}
	group := s.pid.Load()
	if !s.setsid || group == 0 {
		group = s.pgid
		defer s.close()
	}
	if group <= 1 {
		s.sess.Signal("KILL")
		return
	}
	if err := c.sideRun(fmt.Sprintf("kill -s KILL -- -%d 2>/dev/null; :", group)); err != nil {
		s.sess.Signal("KILL")
	}
}

// sideRun runs a short script outside the request flow: on an idle server
// when there is one, else on a plain session beyond the slot limit (the
// spare slots below MaxSessions are for this).
func (c *conn) sideRun(script string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if side := c.takeIdle(); side != nil {
		var buf bytes.Buffer
		if _, err := c.serve(ctx, side, "q "+quote(script), &buf, nil); err == nil {
			return nil
		}
	}
	sess, err := c.d.client.NewSession()
	if err != nil {
		return err
	}
	defer sess.Close()
	stop := context.AfterFunc(ctx, func() { sess.Close() })
	defer stop()
	return sess.Run(`/bin/sh -c ` + quote(script))
}

// takeIdle returns an idle server without waiting, or nil.
func (c *conn) takeIdle() *server {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.idle) == 0 {
		return nil
	}
	s := c.idle[len(c.idle)-1]
	c.idle = c.idle[:len(c.idle)-1]
	return s
}
