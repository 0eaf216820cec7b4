package agent

import (
	"fmt"

	"github.com/pi-remote/pi-remote/loop"
)

// Totals sums the usage of model calls and what they cost.
type Totals struct {
	loop.Usage
	// Cost is in US dollars; zero when the model's price is unknown.
	Cost float64 `json:"cost"`
	// Calls counts the model calls summed.
	Calls int `json:"calls"`
}

// Add counts one call's usage at price p.
func (t *Totals) Add(u *loop.Usage, p Price) {
	if u == nil {
		return
	}
	t.Input += u.Input
	t.Output += u.Output
	t.CacheRead += u.CacheRead
	t.CacheWrite += u.CacheWrite
	t.Cost += p.Cost(*u)
	t.Calls++
}

// String is the one-line summary printed at the end of a run.
func (t Totals) String() string {
	s := fmt.Sprintf("%s in, %s out", count(t.Input), count(t.Output))
	if t.CacheRead > 0 || t.CacheWrite > 0 {
		s += fmt.Sprintf(", cache %s read / %s written", count(t.CacheRead), count(t.CacheWrite))
	}
	return s + fmt.Sprintf(", $%.4f", t.Cost)
}

// count writes n with thousands separators.
func count(n int) string {
	s := fmt.Sprint(n)
	for i := len(s) - 3; i > 0 && s[i-1] != '-'; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
