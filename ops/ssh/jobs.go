package ssh

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/pi-remote/pi-remote/ops/ssh/internal/hostproto"
)

// Job is a command on the host that no client has collected yet: running,
// or ended with its result waiting (its client lost, crashed, or gone).
type Job struct {
	ID    string
	State string        // "running", "exited", "stopped" (see Reason), or "lost" (its waiter died without a status)
	Code  int           // exit code, once it has ended
	Why   string        // for "stopped": what stopped it (ops.ExitError.Reason)
	Age   time.Duration // since it started, by the host's clock (0: not known)
	Label string        // the command's first line
}

// Jobs lists the jobs of this user on the host.
func (h *Host) Jobs(ctx context.Context) ([]Job, error) {
	_, out, err := h.call(ctx, query, "jobs", "", hostproto.ListJobs())
	if err != nil {
		return nil, err
	}
	lines := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
	now, err := strconv.ParseInt(strings.TrimSpace(lines[0]), 10, 64)
	if err != nil {
		return nil, fmt.Errorf("jobs: unexpected answer from host: %q", lines[0])
	}
	var jobs []Job
	started := map[string]int64{}
	for _, l := range lines[1:] {
		if rest, ok := strings.CutPrefix(l, "T "); ok {
			// "T SECONDS PATH": when a job started (its JOB.server file's time).
			secs, p, _ := strings.Cut(rest, " ")
			if t, err := strconv.ParseInt(secs, 10, 64); err == nil {
				started[strings.TrimSuffix(path.Base(p), ".server")] = t
			}
			continue
		}
		f := strings.SplitN(l, "\t", 3)
		if len(f) != 3 {
			continue
		}
		j := Job{ID: f[0], Label: f[2]}
		switch f[1] {
		case "running", "lost":
			j.State = f[1]
		default:
			js, err := hostproto.ParseJobStatus(f[1])
			if err != nil {
				continue
			}
			j.State, j.Code = "exited", js.Code
			if js.Stopped != "" {
				j.State, j.Why = "stopped", stopReason(js, h.opts.OutputCap, 0)
			}
		}
		jobs = append(jobs, j)
	}
	for i, j := range jobs {
		if t, ok := started[j.ID]; ok && t <= now {
			jobs[i].Age = time.Duration(now-t) * time.Second
		}
	}
	return jobs, nil
}

// ErrNoJob is wrapped when a job named by its ID is not on the host.
var ErrNoJob = errors.New("no such job")

func checkJobID(id string) error {
	if len(id) == 0 || len(id) > 64 || strings.Trim(id, "0123456789abcdef") != "" {
		return fmt.Errorf("%w: %q is not a job ID", ErrNoJob, id)
	}
	return nil
}

// AttachJob copies the output of job id to out, from its start, following
// it until the job ends, and returns as Exec would: nil, or an
// *ops.ExitError. The job stays on the host (its own client may still
// collect it; StopJob forgets it), and runs on when ctx ends. A dropped
// connection is waited for as Exec waits.
func (h *Host) AttachJob(ctx context.Context, id string, out io.Writer) error {
	if err := checkJobID(id); err != nil {
		return err
	}
	ttl := h.leaseTTL()
	sent := &countingWriter{w: out}
	var status hostproto.Status
	err := h.again(ctx, func() error {
		c, err := h.ready(ctx)
		if err != nil {
			return err
		}
		s, err := c.server(ctx, true)
		if err != nil {
			return err
		}
		// A person watching the job is its client: the lease holds.
		defer renewLease(s, ttl)()
		status, err = c.serve(ctx, s, query, sent, hostproto.AttachJobs(ttl, hostproto.Follow{ID: id, Offset: sent.n}))
		return err
	})
	if err != nil {
		return err
	}
	switch status.Kind {
	case hostproto.NoJob:
		return fmt.Errorf("job %s: %w (it ended and was collected, or never ran here)", id, ErrNoJob)
	case hostproto.EIO:
		return fmt.Errorf("job %s: %s", id, status.Arg)
	case hostproto.Gone:
		return h.goneError(id, status.Arg, 0)
	case hostproto.Ended:
		return exitError(status.Job, h.opts.OutputCap, 0)
	}
	// !DETACHED (no one asks attach_jobs to let go) and the directory's
	// statuses (attach_jobs starts nothing) do not come.
	return fmt.Errorf("command server: %w: unexpected status %q", errProtocol, status.Text)
}

// StopJob kills job id when it runs, or removes its record when it has
// ended; it says which ("killed" or "removed").
func (h *Host) StopJob(ctx context.Context, id string) (string, error) {
	if err := checkJobID(id); err != nil {
		return "", err
	}
	what, _, err := h.call(ctx, change, "kill", id, hostproto.StopJob(id))
	if errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("job %s: %w", id, ErrNoJob)
	}
	return what, err
}
