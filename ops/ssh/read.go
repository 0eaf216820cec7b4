package ssh

import (
	"bufio"
	"context"
	"errors"
	"io"
	"io/fs"
	"strings"
)

// Open implements ops.ReadOperations with server.sh's open_file: one
// request checks the file and streams it from a single open, so a file
// replaced meanwhile is never mixed with its new version and pseudo files
// that read in short chunks come whole. The stream is flow-controlled by
// the SSH channel: only what the caller reads (plus the channel's window)
// crosses the network, and Close stops the read on the host.
func (h *Host) Open(ctx context.Context, name string) (io.ReadCloser, error) {
	c, err := h.conn(ctx)
	if err != nil {
		return nil, err
	}
	s, err := c.server(ctx)
	if err != nil {
		return nil, err
	}
	rctx, cancel := context.WithCancel(ctx)
	pr, pw := io.Pipe()
	r := &reader{ctx: ctx, cancel: cancel, name: name, pipe: pr, br: bufio.NewReaderSize(pr, 32<<10)}
	// Ends with the request: at the end of the file, or soon after Close.
	go func() {
		status, err := c.serve(rctx, s, job, pw, "open_file", name)
		if err == nil && status != "0" {
			_, _, err = checkStatus("read", name, status, nil)
		}
		pw.CloseWithError(err)
	}()
	line, err := r.br.ReadString('\n')
	if err != nil {
		r.Close()
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, err
	}
	if _, _, err := checkStatus("open", name, strings.TrimSuffix(line, "\n"), nil); err != nil {
		r.Close()
		return nil, err
	}
	return r, nil
}

type reader struct {
	ctx    context.Context
	cancel context.CancelFunc
	name   string
	pipe   *io.PipeReader
	br     *bufio.Reader
}

func (r *reader) Read(p []byte) (int, error) {
	if err := r.ctx.Err(); err != nil {
		return 0, err
	}
	n, err := r.br.Read(p)
	if err != nil && !errors.Is(err, io.EOF) {
		if cerr := r.ctx.Err(); cerr != nil {
			return n, cerr
		}
		var pe *fs.PathError
		if !errors.As(err, &pe) {
			err = &fs.PathError{Op: "read", Path: r.name, Err: err}
		}
	}
	return n, err
}

// Close stops the stream: a read still running on the host is killed and
// the rest of its output drained in the background, after which the server
// serves others.
func (r *reader) Close() error {
	r.cancel()
	r.pipe.Close()
	return nil
}
