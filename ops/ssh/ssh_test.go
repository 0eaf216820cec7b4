package ssh_test

import (
	"testing"

	"github.com/pi-remote/pi-remote/ops"
	"github.com/pi-remote/pi-remote/ops/opstest"
	rssh "github.com/pi-remote/pi-remote/ops/ssh"
	"github.com/pi-remote/pi-remote/ops/ssh/sshtest"
)

func harness(opts sshtest.Options, hopts rssh.HostOptions) opstest.Harness {
	return opstest.Harness{New: func(t *testing.T) (ops.Operations, string) {
		srv := sshtest.Start(t, opts)
		h := rssh.New(srv.Config(), hopts)
		t.Cleanup(func() { h.Close() })
		return h, t.TempDir()
	}}
}

func TestConformance(t *testing.T) {
	opstest.Run(t, harness(sshtest.Options{}, rssh.HostOptions{}))
}

func TestConformanceWithoutSFTP(t *testing.T) {
	opstest.Run(t, harness(sshtest.Options{NoSFTP: true}, rssh.HostOptions{NoGNUFind: true}))
}
