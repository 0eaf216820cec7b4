package ssh

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/pi-remote/pi-remote/ops/ssh/reach"
)

// OnLinkState hears one "reconnecting" however many calls wait, "back" once
// the first of them reaches the host, and "gave up" only when the last
// gives up without it.
func TestLinkStateTransitions(t *testing.T) {
	var heard []LinkState
	h := New(reach.Config{}, HostOptions{OnLinkState: func(s LinkState, _ time.Duration, _ error) { heard = append(heard, s) }})
	lost := errors.New("refused")
	h.linkWait(1, nil)
	h.linkWait(1, nil)
	h.linkWait(-1, nil)
	h.linkWait(-1, nil)
	assert.Equal(t, []LinkState{LinkReconnecting, LinkBack}, heard)
	heard = nil
	h.linkWait(1, nil)
	h.linkWait(1, nil)
	h.linkWait(-1, lost)
	assert.Equal(t, []LinkState{LinkReconnecting}, heard, "another call still waits")
	h.linkWait(-1, lost)
	assert.Equal(t, []LinkState{LinkReconnecting, LinkGaveUp}, heard)
}

// The files of a collected job go with one request, not with every request
// of a batch; those of a request that failed go with a later one.
func TestForgetListsAreShared(t *testing.T) {
	h := New(reach.Config{}, HostOptions{})
	for _, id := range []string{"a1", "b2", "c3"} {
		h.gotResult(id)
	}
	first := h.toForget()
	assert.Equal(t, []string{"a1", "b2", "c3"}, first)
	assert.Empty(t, h.toForget(), "a request in flight carries them")
	h.gotResult("d4")
	second := h.toForget()
	assert.Equal(t, []string{"d4"}, second)
	h.forgetDone(first, false)
	h.forgetDone(second, true)
	assert.Equal(t, []string{"a1", "b2", "c3"}, h.toForget(), "the failed request's ids, again")
	assert.Empty(t, h.toForget())
}

// A request takes at most 64 ids: a long list would make its line long.
func TestForgetListIsBounded(t *testing.T) {
	h := New(reach.Config{}, HostOptions{})
	for i := range 70 {
		h.gotResult(fmt.Sprintf("%02x", i))
	}
	assert.Len(t, h.toForget(), 64)
	assert.Len(t, h.toForget(), 6)
}
