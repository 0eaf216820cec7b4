//go:build linux

package integration

import (
	"testing"

	"github.com/pi-remote/pi-remote/integration/sshd"
	"github.com/pi-remote/pi-remote/internal/swaptest"
	rssh "github.com/pi-remote/pi-remote/ops/ssh"
)

// Root writing in a directory another user owns, while that user swaps
// every new entry there for a link to a file of root's: the file never
// changes (issue 29, item 2: it became the attacker's, 0644, with the
// written content appended, or was overwritten over SFTP).
func TestWriteSurvivesSwaps(t *testing.T) {
	t.Parallel()
	sshd.RequireRoot(t, "the attacker runs as another user")
	srv := sshd.Start(t, sshd.Options{})
	swaptest.Run(t, host(t, srv, rssh.HostOptions{}))
}

// An edit by root in a directory another user owns, while that user
// exchanges the file again and again with a link to a file of its own
// that everyone may read: the secret content never lands in a file with
// that file's mode (it did 1 in 7 edits over sshd: GNU cp copied the
// attributes through the link).
func TestEditKeepsAttributesOfTheFileItReplaces(t *testing.T) {
	t.Parallel()
	sshd.RequireRoot(t, "the attacker runs as another user")
	srv := sshd.Start(t, sshd.Options{})
	swaptest.RunExchange(t, host(t, srv, rssh.HostOptions{}))
}
