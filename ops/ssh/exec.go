package ssh

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"strconv"
	"strings"

	"github.com/pi-remote/pi-remote/internal/shellquote"
	"github.com/pi-remote/pi-remote/ops"
)

// Exec implements ops.ExecOperations with server.sh's run_command: `sh -c`
// in its own session and process group, stdin /dev/null, no terminal,
// output merged and delivered completely however slowly it is read.
// Cancellation kills the group on the host, through the command's own
// server, before Exec returns.
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
	var save, overBytes, overLines string
	if so := cmd.SaveOutput; so != nil {
		so.Saved = false
		save, overBytes, overLines = so.Path, strconv.FormatInt(so.OverBytes, 10), strconv.FormatInt(so.OverLines, 10)
	}
	status, err := c.serve(ctx, s, job, out, call("run_command", script, cmd.Dir, save, overBytes, overLines))
	if err != nil {
		return err
	}
	switch status {
	case "!ENOENT":
		return &fs.PathError{Op: "chdir", Path: cmd.Dir, Err: fs.ErrNotExist}
	case "!ENOTDIR":
		return &fs.PathError{Op: "chdir", Path: cmd.Dir, Err: ops.ErrNotDir}
	case "!EACCES":
		return &fs.PathError{Op: "chdir", Path: cmd.Dir, Err: fs.ErrPermission}
	}
	if msg, ok := strings.CutPrefix(status, "!EIO "); ok {
		return fmt.Errorf("command server: %s", msg)
	}
	code, saved, _ := strings.Cut(status, " ")
	n, perr := strconv.Atoi(code)
	if perr != nil {
		return fmt.Errorf("command server: unexpected status %q", status)
	}
	if cmd.SaveOutput != nil {
		cmd.SaveOutput.Saved = saved == "saved"
	}
	if n != 0 {
		return &ops.ExitError{Code: n}
	}
	return nil
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
		b.WriteString("export " + k + "=" + shellquote.Quote(v) + "\n")
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
