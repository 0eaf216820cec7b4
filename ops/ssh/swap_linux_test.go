package ssh_test

import (
	"testing"

	"github.com/pi-remote/pi-remote/internal/swaptest"
	rssh "github.com/pi-remote/pi-remote/ops/ssh"
	"github.com/pi-remote/pi-remote/ops/ssh/sshtest"
)

// Another user who may rename entries in the directory written to cannot
// turn a write against a file of root's: inline, over SFTP, and an edit.
func TestWriteSurvivesSwaps(t *testing.T) {
	t.Parallel()
	swaptest.RequireRoot(t)
	srv := sshtest.Start(t, sshtest.Options{})
	h := rssh.New(srv.Config(), rssh.HostOptions{})
	t.Cleanup(func() { h.Close() })
	swaptest.Run(t, h)
}

// An edit in a directory another user may rename entries in gives the new
// file the attributes of the file it replaces, never those of a file the
// other user exchanged in meanwhile.
func TestEditKeepsAttributesOfTheFileItReplaces(t *testing.T) {
	t.Parallel()
	swaptest.RequireRoot(t)
	srv := sshtest.Start(t, sshtest.Options{})
	h := rssh.New(srv.Config(), rssh.HostOptions{})
	t.Cleanup(func() { h.Close() })
	swaptest.RunExchange(t, h)
}
