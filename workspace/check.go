package workspace

import (
	"context"
	"fmt"
	"time"

	"github.com/pi-remote/pi-remote/ops/ssh"
)

// Report is what a host offers pi-remote: how it was reached, what it
// has, its round-trip time (what `pi-remote check` shows).
type Report struct {
	Name     string   `json:"name"`
	Host     string   `json:"host"`
	Via      []string `json:"via,omitempty"`
	HostKey  string   `json:"hostKey,omitempty"`
	Auth     string   `json:"auth,omitempty"`
	SFTP     bool     `json:"sftp"`
	Setsid   bool     `json:"setsid"`
	Home     string   `json:"home,omitempty"`
	Bash     bool     `json:"bash"`
	Rg       bool     `json:"rg"`
	Fd       string   `json:"fd,omitempty"`
	Helpers  []string `json:"helpers,omitempty"`
	RTTMilli float64  `json:"rttMs"`
	Error    string   `json:"error,omitempty"` // why the host could not be reached
}

// Check connects to every host and reports it. With one host, a failure
// is the error and there is no report; with several, a host that cannot
// be reached is reported so (Report.Error) along with the others, and the
// first such failure is the error, a *ConnectionError. Any other failure
// is the error, with no reports.
func (hs Hosts) Check(ctx context.Context) ([]Report, error) {
	var reports []Report
	var unreachable error
	for _, h := range hs {
		r, err := h.check(ctx)
		if err != nil && (len(hs) == 1 || !IsConnectionFailure(err)) {
			return nil, err
		}
		if err != nil {
			r = Report{Name: h.Name, Host: h.Where(), Error: err.Error()}
			if unreachable == nil {
				unreachable = &ConnectionError{Err: fmt.Errorf("host %s: %w", h.Name, err)}
			}
		}
		reports = append(reports, r)
	}
	return reports, unreachable
}

// check reaches h and reports it.
func (h *Host) check(ctx context.Context) (Report, error) {
	r := Report{Name: h.Name, Host: "local"}
	if h.SSH != nil {
		info, err := h.SSH.Connect(ctx)
		if err != nil {
			return r, &ConnectionError{Err: err}
		}
		r = reportFrom(info)
		r.Name = h.Name
		// The best of a few round trips: the first may pay for warm-up.
		best := time.Duration(0)
		for range 5 {
			d, err := h.SSH.Ping(ctx)
			if err != nil {
				return r, &ConnectionError{Err: err}
			}
			if best == 0 || d < best {
				best = d
			}
		}
		r.RTTMilli = float64(best.Microseconds()) / 1000
	}
	caps, err := h.Env.Capabilities(ctx)
	if err != nil {
		return r, HostError(err)
	}
	r.Home, r.Bash, r.Rg, r.Fd = caps.Home, caps.Bash != "", caps.Rg != "", caps.Fd
	return r, nil
}

func reportFrom(info ssh.Info) Report {
	r := Report{
		Host:    info.Config.Alias + " (" + info.Config.User + "@" + info.Config.Addr() + ")",
		HostKey: info.HostKey, Auth: info.Auth, SFTP: info.SFTP, Setsid: info.Setsid, Helpers: info.Tools,
	}
	for _, j := range info.Config.Jump {
		r.Via = append(r.Via, j.String())
	}
	return r
}
