package printer

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pi-remote/pi-remote/session"
)

func TestSessions(t *testing.T) {
	var out strings.Builder
	at := time.Date(2026, 1, 2, 3, 4, 0, 0, time.Local)
	require.NoError(t, Sessions(&out, []SessionRow{
		{Info: session.Info{ID: "0123456789abcdef", LastActivity: at, Host: "local", Cwd: "/src", Messages: 3, Bytes: 2048, FirstPrompt: "fix\n  the\ttests"}, Cost: 0.5},
		{Info: session.Info{ID: "ab", LastActivity: at, Host: "me@dev:22", Cwd: "/x", Bytes: 3 << 20, FirstPrompt: strings.Repeat("é", 60)}},
	}))
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	require.Len(t, lines, 3)
	assert.Regexp(t, `^ID +LAST ACTIVE +HOST +CWD +MSGS +SIZE +COST +FIRST PROMPT$`, lines[0])
	assert.Regexp(t, `^01234567 +2026-01-02 03:04 +local +/src +3 +2\.0 KiB +\$0\.5000 +fix the tests$`, lines[1])
	assert.Contains(t, lines[2], "3.0 MiB")
	assert.Contains(t, lines[2], strings.Repeat("é", 49)+"…", "cut to 50 characters")
	assert.Equal(t, "ab", ShortID("ab"))
}
