package agent

import (
	"errors"
	"os"

	"github.com/pi-remote/pi-remote/session"
)

// Where says which session file a front end works in: a new one in the
// directory of Host and Cwd by default.
type Where struct {
	// Host and Cwd are what the tools act on ("alice@devbox:22", the
	// working directory there): they name the sessions' directory.
	Host, Cwd string
	// Path is a file to continue, or to create.
	Path string
	// Continue takes the latest session of Host and Cwd.
	Continue bool
	// Resume takes the session with this ID (or file name) prefix, from
	// any directory.
	Resume string
	// Fork starts a new file from the entry with this id prefix: in the
	// session Path, Continue or Resume names, or in whichever has it.
	Fork string
}

// Opened is a session file ready for New.
type Opened struct {
	File    *session.Session
	Context session.Context
	// Prior is the usage already in the file, priced by the model table.
	Prior Totals
}

// Open opens or creates the session file w names.
func Open(w Where, models Models) (Opened, error) {
	chosen := 0
	for _, set := range []bool{w.Path != "", w.Continue, w.Resume != ""} {
		if set {
			chosen++
		}
	}
	if chosen > 1 {
		return Opened{}, errors.New("name one session: a file, the latest, or an ID")
	}
	dir, err := session.Dir(w.Host, w.Cwd)
	if err != nil {
		return Opened{}, err
	}
	path := w.Path
	switch {
	case w.Continue:
		if path, err = session.Latest(dir); err != nil {
			return Opened{}, err
		}
	case w.Resume != "":
		root, err := session.Root()
		if err != nil {
			return Opened{}, err
		}
		if path, err = session.Find(root, w.Resume); err != nil {
			return Opened{}, err
		}
	}
	if w.Fork != "" {
		src := path
		if src == "" {
			root, err := session.Root()
			if err != nil {
				return Opened{}, err
			}
			if src, err = session.FindEntry(root, w.Fork); err != nil {
				return Opened{}, err
			}
		}
		if path, err = session.Fork(src, w.Fork, dir); err != nil {
			return Opened{}, err
		}
	}
	if path == "" {
		path = session.NewPath(dir)
	}
	if _, err := os.Stat(path); err != nil {
		f, err := session.Create(path, session.Header{Host: w.Host, Cwd: w.Cwd})
		return Opened{File: f}, err
	}
	f, c, err := session.Open(path)
	if err != nil {
		return Opened{}, err
	}
	o := Opened{File: f, Context: c}
	if info, err := session.Describe(path); err == nil {
		o.Prior = SessionTotals(models, info)
	}
	return o, nil
}

// SessionTotals sums a session's usage, priced by the model that answered
// (named without its provider, it is looked up under each).
func SessionTotals(models Models, s session.Info) Totals {
	var t Totals
	for model, u := range s.Usage {
		var price Price
		for _, provider := range []string{"", "openai/", "anthropic/"} {
			if info := models.Lookup(provider + model); info.Known {
				price = info.Price
				break
			}
		}
		t.Add(&u, price)
	}
	t.Calls = s.Calls
	return t
}
