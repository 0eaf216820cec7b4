// Package canonpath computes canonical path keys: the identity of a file on
// one execution environment, whatever spelling reached it.
//
// A Key is the environment's identity plus the canonical absolute path on
// that environment's host. For a path that exists, every symlink and ".." is
// resolved on the host. For a path that does not exist yet, the nearest
// existing ancestor is resolved (following symlinks, on the host that owns
// the path) and the remaining cleaned segments are appended. So "./a/b",
// "/abs/a/b", "a/../a/b" and a spelling through a symlinked directory all give
// one key, before and after the file is created.
//
// Key is a distinct type so that a raw string cannot reach a mutation queue
// by accident.
//
// The package needs one ability of a host, resolving an existing path
// (Resolver), and nothing else of the layers above it: ops and its
// conformance suite import canonpath, never the other way round.
package canonpath

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"slices"
)

// Resolver is the one ability of a host that Of needs. ops.ResolverOf gives
// it for any backend.
type Resolver interface {
	// RealPath returns the canonical absolute form of the existing path
	// name, every symlink and ".." resolved on the host that owns it. When
	// name does not exist (a component is missing, or is not a directory)
	// the error should wrap fs.ErrNotExist: Of then resolves the parent.
	// Of takes any other error as "cannot be resolved from here".
	RealPath(ctx context.Context, name string) (string, error)
}

// Key identifies one file on one environment. Keys are comparable and usable
// as map keys. The zero Key identifies nothing.
type Key struct {
	env  string
	path string
}

// Env returns the identity of the environment the key belongs to.
func (k Key) Env() string { return k.env }

// Path returns the canonical absolute path on the environment's host.
func (k Key) Path() string { return k.path }

func (k Key) String() string { return k.env + ":" + k.path }

// Of returns the key of the absolute path name on the environment identified
// by envID, resolving with r.
//
// When resolution fails for a reason other than a missing component (for
// instance a directory it may not search), the key falls back to the
// lexically cleaned path below the deepest ancestor that did resolve: the
// operation that follows will report the real error, and identical spellings
// still share a key.
func Of(ctx context.Context, envID string, r Resolver, name string) (Key, error) {
	if !path.IsAbs(name) {
		return Key{}, fmt.Errorf("canonpath: %q is not absolute", name)
	}
	p := path.Clean(name)
	var rest []string // missing segments, innermost last
	for {
		real, err := r.RealPath(ctx, p)
		if err == nil {
			slices.Reverse(rest)
			return Key{env: envID, path: path.Join(append([]string{real}, rest...)...)}, nil
		}
		if ctxErr := ctx.Err(); ctxErr != nil {
			return Key{}, ctxErr
		}
		if p == "/" || !errors.Is(err, fs.ErrNotExist) {
			slices.Reverse(rest)
			return Key{env: envID, path: path.Join(append([]string{p}, rest...)...)}, nil
		}
		rest = append(rest, path.Base(p))
		p = path.Dir(p)
	}
}
