package session

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
)

// HistoryFile keeps the prompts typed in the terminal, across sessions
// ("" without a home directory).
func HistoryFile() string {
	home, err := os.UserHomeDir()
	if err != nil {
		return ""
	}
	return filepath.Join(home, ".pi-remote", "history.jsonl")
}

// LoadHistory reads the last n prompts of the history file at path (one
// JSON string per line; lines that are not are skipped). A file that
// cannot be read is an empty history.
func LoadHistory(path string, n int) []string {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for sc.Scan() {
		var p string
		if json.Unmarshal(sc.Bytes(), &p) == nil && strings.TrimSpace(p) != "" {
			out = append(out, p)
		}
	}
	if len(out) > n {
		out = out[len(out)-n:]
	}
	return out
}

// AppendHistory adds prompt to the history file at path (a private file
// in a private directory), as best it can: a history that cannot be kept
// stops nothing.
func AppendHistory(path, prompt string) {
	if path == "" {
		return
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return
	}
	defer f.Close()
	b, _ := json.Marshal(prompt)
	f.Write(append(b, '\n'))
}
