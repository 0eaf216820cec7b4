package hostproto

import (
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The requests the Go side knows are the server's dispatch table
// ($requests in serve.sh), and the "!" statuses it parses are those the
// server can print: a name added on one side only fails here.
func TestNamesMatchTheServer(t *testing.T) {
	assert.Equal(t, serverRequests(t), sortedKeys(requests), "Go's requests (request.go) against $requests (serve.sh)")
	assert.Equal(t, serverStatuses(t), sortedKeys(bangs), "Go's statuses (status.go) against those the server prints")
}

// The control lines Go writes are the letters the server's watchers read
// (the cases of $ctl after read_control).
func TestControlLettersMatchTheServer(t *testing.T) {
	goLetters := map[string]bool{}
	for _, c := range []Control{Kill, Renew, Stream, LetGo, End, KillJob("ab"), LetGoOf("ab"), Add(Follow{ID: "ab"})} {
		goLetters[string(c[0])] = true
	}
	server := map[string]bool{}
	for _, block := range regexp.MustCompile(`(?s)case \$ctl in\n(.*?)\nesac`).FindAllStringSubmatch(Program, -1) {
		for _, m := range regexp.MustCompile(`(?m)^([a-z](?: \| [a-z])*)\)`).FindAllStringSubmatch(block[1], -1) {
			for _, letter := range strings.Split(m[1], " | ") {
				server[letter] = true
			}
		}
	}
	assert.Equal(t, sortedKeys(server), sortedKeys(goLetters))
}

// Each module opens with a comment naming the requests it serves, and
// every request is named by one.
func TestModulesNameTheirRequests(t *testing.T) {
	names, err := modules.ReadDir("server")
	require.NoError(t, err)
	heads := ""
	for _, e := range names {
		text, err := modules.ReadFile("server/" + e.Name())
		require.NoError(t, err)
		head, _, _ := strings.Cut(string(text), "\n\n")
		require.True(t, strings.HasPrefix(head, "# shellcheck shell=sh disable=SC2034,SC2154\n#\n# "+e.Name()+": "),
			"%s opens with the shellcheck line scripts/test.sh takes out for the joined check, its name and what it holds", e.Name())
		assert.Less(t, strings.Count(string(text), "\n"), 600, "%s is under 600 lines", e.Name())
		heads += head
	}
	for name := range requests {
		name = strings.TrimPrefix(name, "call:")
		assert.Regexp(t, `\b`+name+`\b`, heads, "a module's opening comment names %s", name)
	}
}

// serverRequests are the words of $requests in the program.
func serverRequests(t *testing.T) []string {
	t.Helper()
	m := regexp.MustCompile(`(?m)^requests='([^']*)'`).FindStringSubmatch(Program)
	require.NotNil(t, m, "serve.sh sets requests='...'")
	names := strings.Fields(m[1])
	slices.Sort(names)
	return names
}

// serverStatuses are the names of the "!" statuses in the program's code
// (comments are not sent): "!NAME" after a quote or a blank.
func serverStatuses(t *testing.T) []string {
	t.Helper()
	found := map[string]bool{}
	for _, m := range regexp.MustCompile(`['" ]!([A-Z]{2,})\b`).FindAllStringSubmatch(Program, -1) {
		found[m[1]] = true
	}
	// "!PROTOCOL ..." answers a request that made no sense to the
	// server: no request's status (see bangs).
	require.True(t, found["PROTOCOL"], "the server answers !PROTOCOL")
	delete(found, "PROTOCOL")
	return sortedKeys(found)
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
