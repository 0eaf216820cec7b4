package integration

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pi-remote/pi-remote/integration/sshd"
	"github.com/pi-remote/pi-remote/ops"
)

// A command whose answer is lost with the connection, and whose saved
// output is removed before the client is back, leaves a job the host can
// neither start again (its output is still there, a link to the file
// removed: "!ATTACH") nor attach to ("!NOJOB"). The call gives up after a
// few starts, as it did before a single command became a batch of one,
// instead of starting it again for ever.
func TestLostAnswerOfARemovedSaveEnds(t *testing.T) {
	t.Parallel()
	cache := hostCache(t)
	p, h := reattachingHostWith(t, sshd.Options{Config: []string{"SetEnv XDG_CACHE_HOME=" + cache}})
	require.NoError(t, h.Exec(t.Context(), ops.Command{Script: "true"}))
	jobs := filepath.Join(cache, "pi-remote", "jobs")
	before, _ := filepath.Glob(filepath.Join(jobs, "*.out"))
	save := filepath.Join(t.TempDir(), "saved")
	var faults sync.WaitGroup
	faults.Go(func() {
		// Once the command runs, its answer is lost: the link is a black
		// hole, then reset, and the saved output is removed meanwhile.
		if !waitFor(t.Context(), func() bool {
			outs, _ := filepath.Glob(filepath.Join(jobs, "*.out"))
			for _, out := range outs {
				if !slices.Contains(before, out) {
					return true
				}
			}
			return false
		}) {
			return
		}
		p.Refuse(true)
		p.Blackhole(true)
		waitFor(t.Context(), func() bool { _, err := os.Stat(save); return err == nil })
		os.Remove(save)
		time.Sleep(4 * time.Second) // declared dead after 3 s
		p.Reset()
		p.Blackhole(false)
		p.Refuse(false)
	})
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	err := h.Exec(ctx, ops.Command{Script: "sleep 1; echo done", SaveOutput: &ops.SaveOutput{Path: save}})
	faults.Wait()
	require.Error(t, err)
	assert.NotErrorIs(t, err, context.DeadlineExceeded, "the call ends by itself")
	assert.ErrorIs(t, err, ops.ErrConnectionLost)
}
