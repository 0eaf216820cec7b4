package ssh

import (
	"testing"
	"time"
)

type tsw struct {
	t     *testing.T
	start time.Time
	n     int
}

func (w *tsw) Write(p []byte) (int, error) {
	if w.n < 3 {
		w.t.Logf("%v: %q", time.Since(w.start), string(p[:min(len(p), 20)]))
	}
	w.n++
	return len(p), nil
}

func TestZZFirstBytes(t *testing.T) {
	for _, sh := range testShells(t) {
		l := startLocal(t, sh, true)
		for range 2 {
			job := newJob("i=0; while [ $i -lt 150 ]; do echo $i; i=$((i+1)); sleep 0.01; done")
			job[8] = "1000000"
			w := &tsw{t: t, start: time.Now()}
			l.do(t, w, "run_job", job...)
		}
	}
}
