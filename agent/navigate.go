package agent

import (
	"errors"
	"slices"
)

// ErrBusy is Navigate's answer while a run or a compaction is under way.
var ErrBusy = errors.New("the session is busy: wait until the run ends (or abort it)")

// Navigate goes back (or across) in the session's file to the entry id
// ("": before the first entry): the context becomes that branch's, its
// compactions honoured, and the next message is appended as the entry's
// child; the branch left stays in the file. It is refused during a run
// or a compaction (ErrBusy) and without a session file.
func (s *Session) Navigate(id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.closed:
		return ErrClosed
	case s.calls > 0:
		return ErrBusy
	case s.opts.File == nil:
		return errors.New("the session has no file to go back in")
	}
	c, err := s.opts.File.MoveLeaf(id)
	if err != nil {
		return err
	}
	s.msgs, s.ids, s.summary, s.fresh = slices.Clone(c.Messages), slices.Clone(c.IDs), c.Summary, c.Fresh
	return nil
}
