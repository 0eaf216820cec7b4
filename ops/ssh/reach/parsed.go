package reach

import (
	"os"
	"strconv"
	"strings"
	"sync"
)

// parsedFiles keeps what was made of files (an ssh_config, the known_hosts
// files) while they stay the same, by size and modification time: one
// process resolves and dials every --host against the same files, and
// parsing a file that names 200 hosts once per host took most of the
// 200-host start's CPU time. What it keeps is only read once made.
type parsedFiles[T any] struct {
	mu sync.Mutex
	m  map[string]parsedEntry[T] // by the files' names
}

type parsedEntry[T any] struct {
	stamp string
	v     T
	err   error
}

// get returns what parse made of names, parsing them again when one has
// changed since.
func (p *parsedFiles[T]) get(names []string, parse func() (T, error)) (T, error) {
	key := strings.Join(names, "\x00")
	var stamp strings.Builder
	for _, name := range names {
		if fi, err := os.Stat(name); err == nil {
			stamp.WriteString(strconv.FormatInt(fi.Size(), 10) + " " + strconv.FormatInt(fi.ModTime().UnixNano(), 10))
		}
		stamp.WriteByte(';')
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if e, ok := p.m[key]; ok && e.stamp == stamp.String() {
		return e.v, e.err
	}
	v, err := parse()
	if p.m == nil {
		p.m = map[string]parsedEntry[T]{}
	}
	p.m[key] = parsedEntry[T]{stamp.String(), v, err}
	return v, err
}
