package rpc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"github.com/pi-remote/pi-remote/agent/permission"
)

// errInputEnded is what a call that waits for a decision hears once the
// client's input has ended: nobody is left to answer, so it is refused
// (the gate says asking failed) instead of waiting for ever.
var errInputEnded = errors.New("the rpc client's input has ended, so nobody can answer")

// approvals are the calls waiting for the client's decision, by the id of
// their approval_request event. Safe for concurrent use: calls of a
// prompt's batch and tool commands may wait at once.
type approvals struct {
	mu      sync.Mutex
	waiting map[string]chan verdict
	// settled says what became of the requests that no longer wait
	// ("answered" or "abandoned"), so a late approve is told why it
	// missed.
	settled map[string]string
	ended   bool // the input has ended: no answer can come
}

// verdict is how a wait ends: the client's answer, or why none came.
type verdict struct {
	answer permission.Answer
	err    error
}

func newApprovals() *approvals {
	return &approvals{waiting: map[string]chan verdict{}, settled: map[string]string{}}
}

// ask is the gate's Asker: it tells the client of r in an
// approval_request event and waits for its approve command, or for ctx's
// end (abort), whichever comes first. A request abandoned by abort is
// forgotten (an approval_canceled event says so); answering it later is
// an error.
func (s *Server) ask(ctx context.Context, r permission.Request) (permission.Answer, error) {
	a := s.approvals
	ch := make(chan verdict, 1)
	a.mu.Lock()
	if a.ended {
		a.mu.Unlock()
		return permission.Answer{}, errInputEnded
	}
	a.waiting[r.ID] = ch
	a.mu.Unlock()
	// Registered before it is told, so an answer sent at once finds it.
	s.write(approvalRequest(r))
	select {
	case v := <-ch:
		return v.answer, v.err
	case <-ctx.Done():
	}
	a.mu.Lock()
	_, still := a.waiting[r.ID]
	if still {
		delete(a.waiting, r.ID)
		a.settled[r.ID] = "abandoned"
	}
	a.mu.Unlock()
	if still {
		s.write(map[string]string{"type": "approval_canceled", "id": r.ID})
	}
	// An answer that crossed the abort changes nothing: the call is
	// aborted either way.
	return permission.Answer{}, ctx.Err()
}

// approvalRequest is the event that asks the client about r.
func approvalRequest(r permission.Request) any {
	args := r.Args
	if len(args) == 0 {
		args = json.RawMessage("{}")
	}
	return struct {
		Type       string          `json:"type"`
		ID         string          `json:"id"`
		ToolCallID string          `json:"toolCallId,omitempty"`
		Host       string          `json:"host"`
		Tool       string          `json:"tool"`
		Arguments  json.RawMessage `json:"arguments"`
		Reason     string          `json:"reason"`
		Command    string          `json:"command,omitempty"`
		Path       string          `json:"path,omitempty"`
	}{"approval_request", r.ID, r.CallID, r.Host, r.Tool, args, r.Reason, r.Command, r.Path}
}

// approve hands the client's decision to the call waiting under c's id.
// An unknown id, a request already answered or abandoned, or a decision
// that is none of once, session and deny is an error, and changes
// nothing.
func (s *Server) approve(c command) error {
	var id string
	if err := json.Unmarshal(c.ID, &id); err != nil || id == "" {
		return errors.New(`approve needs the "id" of an approval_request (a string)`)
	}
	decision, err := permission.ParseDecision(c.Decision)
	if err != nil {
		return err
	}
	a := s.approvals
	a.mu.Lock()
	defer a.mu.Unlock()
	ch, ok := a.waiting[id]
	if !ok {
		if how, ok := a.settled[id]; ok {
			return fmt.Errorf("approval request %q was already %s", id, how)
		}
		return fmt.Errorf("no approval request %q", id)
	}
	delete(a.waiting, id)
	a.settled[id] = "answered"
	ans := permission.Answer{Decision: decision}
	if decision == permission.Deny {
		ans.Reason = c.Reason
	}
	ch <- verdict{answer: ans} // buffered: never blocks
	return nil
}

// endInput refuses the calls that wait for a decision, and those that
// would ask later: once the input has ended no approve can come.
func (a *approvals) endInput() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.ended = true
	for id, ch := range a.waiting {
		delete(a.waiting, id)
		a.settled[id] = "abandoned"
		ch <- verdict{err: errInputEnded}
	}
}
