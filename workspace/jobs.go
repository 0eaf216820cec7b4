package workspace

import (
	"context"
	"fmt"
	"io"

	"github.com/pi-remote/pi-remote/ops/ssh"
)

// Job is a job left on one of the hosts (ssh.Job), with the host's name.
type Job struct {
	Host string
	ssh.Job
}

// Jobs lists the jobs on the remote hosts, host by host.
func (hs Hosts) Jobs(ctx context.Context) ([]Job, error) {
	var all []Job
	for _, h := range hs {
		if h.SSH == nil {
			continue
		}
		jobs, err := h.SSH.Jobs(ctx)
		if err != nil {
			return nil, HostError(err)
		}
		for _, j := range jobs {
			all = append(all, Job{Host: h.Name, Job: j})
		}
	}
	return all, nil
}

// JobHost finds the remote host that has job id: the one remote host
// without asking it; of several, the one that lists it (ssh.ErrNoJob when
// none does).
func (hs Hosts) JobHost(ctx context.Context, id string) (*Host, error) {
	var remote []*Host
	for _, h := range hs {
		if h.SSH != nil {
			remote = append(remote, h)
		}
	}
	if len(remote) == 1 {
		return remote[0], nil
	}
	for _, h := range remote {
		jobs, err := h.SSH.Jobs(ctx)
		if err != nil {
			return nil, HostError(err)
		}
		for _, j := range jobs {
			if j.ID == id {
				return h, nil
			}
		}
	}
	return nil, fmt.Errorf("job %s: %w on any of the hosts", id, ssh.ErrNoJob)
}

// StopJob kills job id on the host that has it (its whole process group),
// or forgets it when it has ended; it says which it did (ssh.Host.StopJob).
func (hs Hosts) StopJob(ctx context.Context, id string) (string, error) {
	h, err := hs.JobHost(ctx, id)
	if err != nil {
		return "", err
	}
	what, err := h.SSH.StopJob(ctx, id)
	return what, HostError(err)
}

// AttachJob writes job id's output to out from its start, following it to
// its end (ssh.Host.AttachJob: an *ops.ExitError when it failed).
func (hs Hosts) AttachJob(ctx context.Context, id string, out io.Writer) error {
	h, err := hs.JobHost(ctx, id)
	if err != nil {
		return err
	}
	return HostError(h.SSH.AttachJob(ctx, id, out))
}
