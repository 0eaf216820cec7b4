package workspace

import (
	"context"
	"encoding/json"
	"sync"

	"github.com/pi-remote/pi-remote/agent/permission"
	"github.com/pi-remote/pi-remote/env"
	"github.com/pi-remote/pi-remote/loop"
	"github.com/pi-remote/pi-remote/tools"
)

// guard puts gate in front of each of host h's tools: at admission, in
// the in-order prepare stage, after the arguments are validated (and
// hooks had their say) and before anything runs. A path tool's call is
// decided on the canonical path its host resolves, the key of the file's
// mutation queue: a write or edit on the place it has just reserved in
// that queue, so the rule sees the very file the call will change. A call
// that waits for a person holds that place (later calls on the file wait
// behind it, as they would behind the write). Where no rule or mode can
// touch a tool on h (Gate.Quiet), the call costs nothing more.
func guard(h *Host, defs []tools.Definition, gate *permission.Gate) []tools.Definition {
	if gate == nil {
		return defs
	}
	cwd := &canonicalCwd{e: h.Env}
	out := make([]tools.Definition, len(defs))
	for i, d := range defs {
		admit, name, readOnly := d.Admit, d.Name, d.ReadOnly
		d.Admit = func(ctx context.Context, args json.RawMessage) (any, func(), error) {
			if gate.Quiet(h.Name, name, readOnly) {
				if admit == nil {
					return nil, nil, nil
				}
				return admit(ctx, args)
			}
			var in struct {
				Command string `json:"command"`
				Path    string `json:"path"`
			}
			_ = json.Unmarshal(args, &in) // validated already
			var (
				admission any
				release   func()
			)
			if admit != nil {
				var err error
				if admission, release, err = admit(ctx, args); err != nil {
					return nil, nil, err
				}
			}
			c := permission.Call{Host: h.Name, Tool: name, ReadOnly: readOnly, Command: in.Command, CallID: loop.CallIDFrom(ctx)}
			if name != "bash" {
				c.Path = canonical(ctx, h.Env, admission, in.Path)
				c.Cwd = cwd.get(ctx)
			}
			// (While a person decides, the call is not admitted: a
			// command sent meanwhile by another front end does not wait
			// for it. env.Barrier.)
			admitted := func() {}
			if r, ok := admission.(*env.Reservation); ok {
				admitted = r.Hold()
			}
			err := gate.Check(ctx, c, args)
			admitted()
			if err != nil {
				if release != nil {
					release()
				}
				return nil, nil, err
			}
			// The write must still name the file decided on when it
			// commits (a symlink on the way swapped meanwhile, by another
			// user or while a person decided): or it fails as moved.
			if r, ok := admission.(*env.Reservation); ok {
				r.Pin()
			}
			return admission, release, nil
		}
		out[i] = d
	}
	return out
}

// canonical is the canonical path a path tool's call names: the key of
// the place admission reserved, or the key of p (the working directory
// when p is empty: ls, find and grep default to it). A path the host
// cannot resolve keeps its lexical form (canonpath.Of).
func canonical(ctx context.Context, e *env.ExecutionEnv, admission any, p string) string {
	if r, ok := admission.(*env.Reservation); ok {
		if k := r.Key(); k.Path() != "" {
			return k.Path()
		}
	}
	if p == "" {
		p = "."
	}
	abs, err := e.Resolve(ctx, p)
	if err != nil {
		return ""
	}
	k, err := e.Key(ctx, abs)
	if err != nil {
		return abs
	}
	return k.Path()
}

// canonicalCwd is a host's working directory, canonical, asked for once.
type canonicalCwd struct {
	e    *env.ExecutionEnv
	mu   sync.Mutex
	path string
}

func (c *canonicalCwd) get(ctx context.Context) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.path != "" {
		return c.path
	}
	cwd, err := c.e.Cwd(ctx)
	if err != nil {
		return ""
	}
	k, err := c.e.Key(ctx, cwd)
	if err != nil {
		return cwd
	}
	c.path = k.Path()
	return c.path
}

// modeNote says what a host's mode means for the model.
func modeNote(m permission.Mode) string {
	switch m {
	case permission.Ask:
		return "ask: write, edit, bash and the other tools that change files wait for the user's approval, who may refuse; reads run"
	case permission.ReadOnly:
		return "read-only: write, edit and the other tools that change files are refused; bash runs only commands the user's allow rules name"
	}
	return "auto: every call runs"
}
