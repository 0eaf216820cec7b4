// Package hostproto is the protocol between the SSH backend (ops/ssh) and
// the command server it runs on a host: the server's program (Program, the
// POSIX sh modules under server/, sent at every server start), a builder
// per request (RunJob, AttachJobs, StatPath, ...), the statuses that end
// an answer parsed once (Request.Answer, Status), and the control lines
// (Control). It says what is sent and what it means; ops/ssh decides when
// (its pool, jobs and files). docs/host-protocol.md is its reference, and
// the tests keep the Go names and the server's in step.
package hostproto

import (
	"embed"
	"io/fs"
	"strings"
)

// modules are the server's program, one file per part of the protocol,
// each opening with a comment naming the requests it serves.
//
//go:embed server/*.sh
var modules embed.FS

// Program is the server's program as it is sent at every start: the
// modules in the order of their names, without comment lines, blank lines
// and indentation. Only serve.sh and start.sh have code outside functions,
// which depends on nothing of the others, so the order is free.
var Program = compact(Source())

// Source is the modules' text, joined in the order of their names.
func Source() string {
	names, err := fs.Glob(modules, "server/*.sh")
	if err != nil {
		panic(err) // the pattern is fixed and valid
	}
	var b strings.Builder
	for _, name := range names { // fs.Glob sorts them
		text, err := modules.ReadFile(name)
		if err != nil {
			panic(err) // embedded: cannot fail
		}
		b.Write(text)
	}
	return b.String()
}

// compact drops comment lines and blank lines, and the blanks that start
// a line: the program is sent at every server start, and the host's shell
// reads it a byte at a time. So no line may start with "#" unless it is a
// comment, and a multi-line string or here-document loses its lines'
// leading blanks.
func compact(src string) string {
	var b strings.Builder
	for line := range strings.Lines(src) {
		line = strings.TrimLeft(line, " \t")
		if t := strings.TrimSpace(line); t == "" || strings.HasPrefix(t, "#") {
			continue
		}
		b.WriteString(line)
	}
	return b.String()
}
