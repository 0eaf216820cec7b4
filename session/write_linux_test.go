package session

import (
	"os"
	"os/signal"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pi-remote/pi-remote/loop"
)

// A line whose write fails part way (here: the file size limit, as a full
// disk would) leaves nothing of itself in the file: the next entry is
// written on a line of its own, and the file reads back with every
// message but the lost one.
func TestFailedWriteLeavesNoPart(t *testing.T) {
	path, s, _ := twoTurns(t)
	st, err := os.Stat(path)
	require.NoError(t, err)

	signal.Ignore(syscall.SIGXFSZ)
	defer signal.Reset(syscall.SIGXFSZ)
	var old syscall.Rlimit
	require.NoError(t, syscall.Getrlimit(syscall.RLIMIT_FSIZE, &old))
	limit := old
	limit.Cur = uint64(st.Size() + 40)
	require.NoError(t, syscall.Setrlimit(syscall.RLIMIT_FSIZE, &limit))
	_, appendErr := s.Append(answer(strings.Repeat("lost ", 40)))
	require.NoError(t, syscall.Setrlimit(syscall.RLIMIT_FSIZE, &old))
	require.Error(t, appendErr, "the write went over the limit")
	after, err := os.Stat(path)
	require.NoError(t, err)
	assert.Equal(t, st.Size(), after.Size(), "the part written is cut off")

	must(s.Append(loop.NewUserText("three")))
	_, err = s.MoveLeaf("")
	require.NoError(t, err)
	require.NoError(t, s.Close())
	_, all, _, err := Tree(path)
	require.NoError(t, err)
	assert.Len(t, all, 5, "every entry but the lost one")
}
