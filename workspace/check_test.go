package workspace

import (
	"io"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pi-remote/pi-remote/ops/ssh"
)

// A host that cannot be reached, one of several, is reported with the
// others, and its failure is Check's.
func TestCheck(t *testing.T) {
	dir := t.TempDir()
	o := HostOptions{Cwd: dir, Hosts: []string{"here=local", "gone=nobody@127.0.0.1:1"}, SSHConfig: "none", ConnectTimeout: 2 * time.Second, KnownHosts: filepath.Join(dir, "known_hosts")}
	hs, err := OpenHosts(t.Context(), o, OneShot, nil, nil)
	require.NoError(t, err)
	defer hs.Close()
	reports, err := hs.Check(t.Context())
	var ce *ConnectionError
	require.ErrorAs(t, err, &ce)
	assert.Contains(t, err.Error(), "host gone: ")
	require.Len(t, reports, 2)
	assert.Equal(t, "here", reports[0].Name)
	assert.Equal(t, "local", reports[0].Host)
	assert.NotEmpty(t, reports[0].Home)
	assert.Empty(t, reports[0].Error)
	assert.Equal(t, "gone", reports[1].Name)
	assert.NotEmpty(t, reports[1].Error)

	local, err := OpenHosts(t.Context(), HostOptions{Cwd: dir}, OneShot, nil, nil)
	require.NoError(t, err)
	defer local.Close()
	reports, err = local.Check(t.Context())
	require.NoError(t, err)
	require.Len(t, reports, 1)
}

// Jobs are on remote hosts only: this machine has none to list or find.
func TestJobsOnLocalHosts(t *testing.T) {
	hs, err := OpenHosts(t.Context(), HostOptions{Cwd: t.TempDir(), Hosts: []string{"a=local", "b=local"}}, OneShot, nil, nil)
	require.NoError(t, err)
	defer hs.Close()
	jobs, err := hs.Jobs(t.Context())
	require.NoError(t, err)
	assert.Empty(t, jobs)
	_, err = hs.JobHost(t.Context(), "0123")
	assert.ErrorIs(t, err, ssh.ErrNoJob)
	_, err = hs.StopJob(t.Context(), "0123")
	assert.ErrorIs(t, err, ssh.ErrNoJob)
	assert.ErrorIs(t, hs.AttachJob(t.Context(), "0123", io.Discard), ssh.ErrNoJob)
}
