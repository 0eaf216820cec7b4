package hostproto

import (
	_ "embed"
	"strings"

	"github.com/pi-remote/pi-remote/internal/shellquote"
)

// spawnSource is the wrapper of a spawned process (spawn/spawn.sh): a
// program of its own, sent on the process's channel instead of the
// command server's.
//
//go:embed spawn/spawn.sh
var spawnSource string

// SpawnSource is the wrapper's text as it is in its file.
func SpawnSource() string { return spawnSource }

// spawnProgram is the wrapper as it is sent.
var spawnProgram = compact(spawnSource)

// Spawn is what a spawned process's channel reads after the bootstrap,
// up to the end mark: the wrapper as the variable spawn_program (which
// it runs again under setsid where it must), its eval, and the call
// "spawn MARKER SUFFIX GRACE DIR [NAME=VALUE...] -- ARGS..." on one line.
// MARKER starts the wrapper's one status line; SUFFIX (hex) names its
// FIFO's directory; GRACE is in whole seconds.
func Spawn(marker, suffix, grace, dir string, env, args []string) string {
	words := append([]string{marker, suffix, grace, dir}, env...)
	words = append(append(words, "--"), args...)
	var b strings.Builder
	b.WriteString("spawn_program=")
	b.WriteString(shellquote.Quote(spawnProgram))
	b.WriteString("\neval \"$spawn_program\"\nspawn")
	for _, w := range words {
		b.WriteByte(' ')
		b.WriteString(shellquote.QuoteLine(w))
	}
	b.WriteByte('\n')
	return b.String()
}
