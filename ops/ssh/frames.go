package ssh

import (
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/pi-remote/pi-remote/ops/ssh/internal/hostproto"
)

// The answers of run_jobs and attach_jobs come in frames (batches.sh,
// attach.sh): "D ID N" and N bytes of job ID's output, "X ID STATUS" once
// it has ended; then the status that ends the answer.

// readJob reads the answer to r, a request for one job (a batch of one, or
// attach_jobs of one): the job's output goes to w, and its status is that
// of its "X" frame, or the answer's own when it ends with none ("!DETACHED":
// let go of; "!EIO ...").
func readJob(s *server, r hostproto.Request, w io.Writer) (hostproto.Status, error) {
	var job hostproto.Status
	n := 0
	status, err := readFrames(s, r, func(string) io.Writer { return w }, func(_ string, st hostproto.Status) {
		job = st
		n++
	})
	switch {
	case err != nil || status.Kind != hostproto.OK:
		return status, err
	case n != 1:
		s.broken.Store(true)
		return status, fmt.Errorf("%w: %s answered for %d jobs, not its one", errProtocol, r.Name, n)
	}
	return job, nil
}

// frameError is err of readFrames for a person: what the server said on
// stderr, if anything.
func frameError(s *server, err error) error {
	return fmt.Errorf("command server: %w%s", err, s.stderr.suffix())
}

// readFrames reads the answer to req (attach_jobs or run_jobs) from s:
// the output in each "D" frame goes to out(ID), each "X" frame to end(ID,
// STATUS). It returns the final status. An error breaks s (frameError
// says it for a person).
func readFrames(s *server, req hostproto.Request, out func(id string) io.Writer, end func(id string, status hostproto.Status)) (hostproto.Status, error) {
	var none hostproto.Status
	rd := s.stdout
	for {
		line, err := rd.ReadString('\n')
		if err != nil {
			s.broken.Store(true)
			if errors.Is(err, io.EOF) {
				err = errServerExited
			}
			return none, err
		}
		line = strings.TrimSuffix(line, "\n")
		if end, ok := strings.CutPrefix(line, string(s.marker)); ok {
			status, err := req.Answer(end)
			if err != nil {
				s.broken.Store(true)
				return none, err
			}
			return status, nil
		}
		kind, rest, _ := strings.Cut(line, " ")
		id, arg, _ := strings.Cut(rest, " ")
		switch kind {
		case "D":
			n, err := strconv.ParseInt(arg, 10, 64)
			if err != nil || n < 0 {
				s.broken.Store(true)
				return none, fmt.Errorf("%w: bad frame %q", errProtocol, line)
			}
			if err := copyFrame(out(id), rd, n); err != nil {
				s.broken.Store(true)
				return none, err
			}
		case "X":
			status, err := hostproto.FrameStatus(arg)
			if err != nil {
				s.broken.Store(true)
				return none, fmt.Errorf("%w: bad frame %q", errProtocol, line)
			}
			end(id, status)
		default:
			s.broken.Store(true)
			return none, fmt.Errorf("%w: bad frame %q", errProtocol, line)
		}
	}
}

// copyFrame copies the n bytes of a frame from rd to w. After an error of
// w's, the rest of the frame is read all the same: the stream stays in
// step.
func copyFrame(w io.Writer, rd io.Reader, n int64) error {
	lr := &io.LimitedReader{R: rd, N: n}
	buf := make([]byte, 32<<10)
	var werr error
	for lr.N > 0 {
		k, err := lr.Read(buf)
		if k > 0 && werr == nil {
			_, werr = w.Write(buf[:k])
		}
		if errors.Is(err, io.EOF) && lr.N > 0 {
			return io.ErrUnexpectedEOF
		}
		if err != nil && !errors.Is(err, io.EOF) {
			return err
		}
	}
	return nil
}
