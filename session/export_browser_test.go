package session

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/net/html"

	"github.com/pi-remote/pi-remote/loop"
)

var updateGolden = flag.Bool("update", false, "rewrite testdata/*.golden")

// The HTML export as a real browser shows it (headless Chromium from
// Debian's packages; .ci/run installs it): what a reader sees matches the
// golden text (Markdown rendered, folded parts closed), and nothing
// scrolls sideways in an 800-pixel window, not even a 600-character line
// with no space in it.
func TestHTMLExportInABrowser(t *testing.T) {
	browser, err := exec.LookPath("chromium")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("chromium is not installed; .ci/run installs it")
		}
		t.Skip("chromium is not installed")
	}
	h, entries := exportSession(t)
	h.ID, h.Created = "c19108d0eb2e6db7d828d48fe458f626", time.Date(2026, 12, 4, 9, 0, 0, 0, time.UTC)
	entries = append(entries, Entry{Message: &loop.ToolResultMessage{ToolCallID: "c4", ToolName: "read", Content: loop.ContentList{&loop.Text{Text: strings.Repeat("x", 600)}}}})
	var page strings.Builder
	require.NoError(t, HTML(&page, h, entries))
	// (The probe is the test's, not the export's: the page has no script.)
	probe := `<script>document.body.setAttribute("data-probe", document.documentElement.scrollWidth + " " + document.documentElement.clientWidth); document.body.setAttribute("data-text", document.body.innerText)</script></body>`
	file := filepath.Join(t.TempDir(), "s.html")
	// (The page's policy forbids scripts: the probe's copy goes without it.)
	csp := regexp.MustCompile(`<meta http-equiv="Content-Security-Policy"[^>]*>`)
	require.True(t, csp.MatchString(page.String()), "the page has its policy")
	probed := csp.ReplaceAllString(strings.Replace(page.String(), "</body>", probe, 1), "")
	require.NoError(t, os.WriteFile(file, []byte(probed), 0o644))
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, browser, "--headless", "--no-sandbox", "--disable-gpu", "--window-size=800,600", "--user-data-dir="+t.TempDir(), "--dump-dom", "file://"+file)
	out, err := cmd.Output()
	require.NoError(t, err)
	doc, err := html.Parse(strings.NewReader(string(out)))
	require.NoError(t, err)
	attrs := map[string]string{}
	var walk func(*html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.ElementNode && n.Data == "body" {
			for _, a := range n.Attr {
				attrs[a.Key] = a.Val
			}
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(doc)
	var scroll, client int
	_, err = fmt.Sscan(attrs["data-probe"], &scroll, &client)
	require.NoError(t, err, "the probe ran: %q", attrs["data-probe"])
	assert.LessOrEqual(t, scroll, client, "nothing scrolls sideways")
	text := regexp.MustCompile(`\n{3,}`).ReplaceAllString(strings.TrimSpace(attrs["data-text"]), "\n\n") + "\n"
	golden := filepath.Join("testdata", "export.golden.txt")
	if *updateGolden {
		require.NoError(t, os.MkdirAll("testdata", 0o755))
		require.NoError(t, os.WriteFile(golden, []byte(text), 0o644))
	}
	want, err := os.ReadFile(golden)
	require.NoError(t, err, "run with -update to write it")
	assert.Equal(t, string(want), text)
}
