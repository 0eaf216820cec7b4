// Package slowio has a Writer that takes its time, for tests of what a
// slow reader of a command's output gets: a client behind a slow link, or
// a front end whose reader lags.
package slowio

import (
	"bytes"
	"sync"
	"time"
)

// Writer keeps what is written to it, pausing Pause before every write,
// and SlowPause instead once SlowAfter bytes have come (SlowPause 0: never).
// It is safe for concurrent use.
type Writer struct {
	Pause     time.Duration
	SlowAfter int
	SlowPause time.Duration

	mu  sync.Mutex
	buf bytes.Buffer
}

func (w *Writer) Write(p []byte) (int, error) {
	w.mu.Lock()
	pause := w.Pause
	if w.SlowPause > 0 && w.buf.Len() >= w.SlowAfter {
		pause = w.SlowPause
	}
	w.mu.Unlock()
	time.Sleep(pause)
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.Write(p)
}

// String is all that was written.
func (w *Writer) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}
