package ssh

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// OnLinkState hears one "reconnecting" however many calls wait, "back" once
// the first of them reaches the host, and "gave up" only when the last
// gives up without it.
func TestLinkStateTransitions(t *testing.T) {
	var heard []LinkState
	h := New(Config{}, HostOptions{OnLinkState: func(s LinkState, _ time.Duration, _ error) { heard = append(heard, s) }})
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
