package mcpclient_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pi-remote/pi-remote/mcpclient"
)

// seen records the Authorization header of every request a server gets.
type seen struct {
	mu   sync.Mutex
	auth []string
}

func (s *seen) add(r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.auth = append(s.auth, r.Header.Get("Authorization"))
}

func (s *seen) list() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.auth...)
}

// otherOrigin is srv's URL with "localhost" for 127.0.0.1: another
// origin (and another host name) that reaches the same server.
func otherOrigin(t *testing.T, srv *httptest.Server) string {
	t.Helper()
	require.True(t, strings.HasPrefix(srv.URL, "http://127.0.0.1:"), srv.URL)
	return strings.Replace(srv.URL, "127.0.0.1", "localhost", 1)
}

// A server that redirects elsewhere does not get the configured headers
// sent there: they are the user's credentials for the configured URL
// only (as Go's own client drops Authorization on a redirect to another
// host).
func TestHeadersStayWithTheConfiguredURLOnRedirect(t *testing.T) {
	s := mcp.NewServer(&mcp.Implementation{Name: "web", Version: "1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "echo", Description: "Echo."},
		func(_ context.Context, _ *mcp.CallToolRequest, in textIn) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "web: " + in.Text}}}, nil, nil
		})
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil)
	var there seen
	elsewhere := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		there.add(r)
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(elsewhere.Close)
	target := otherOrigin(t, elsewhere)
	var here seen
	configured := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		here.add(r)
		http.Redirect(w, r, target+r.URL.RequestURI(), http.StatusTemporaryRedirect)
	}))
	t.Cleanup(configured.Close)
	m := mcpclient.Start(t.Context(), []mcpclient.Config{{Name: "web", URL: configured.URL, Headers: map[string]string{"Authorization": "Bearer sesame"}}}, mcpclient.Options{})
	t.Cleanup(m.Close)
	require.NotEmpty(t, here.list(), "the configured server was never asked")
	for _, a := range here.list() {
		assert.Equal(t, "Bearer sesame", a, "the configured URL gets the headers")
	}
	require.NotEmpty(t, there.list(), "the redirect was not followed: the test tests nothing")
	for _, a := range there.list() {
		assert.Empty(t, a, "the user's credentials went to %s", target)
	}
}

// An SSE server names the endpoint messages are posted to: one of
// another origin does not get the configured headers either.
func TestHeadersStayWithTheConfiguredURLForSSEEndpoint(t *testing.T) {
	var there seen
	elsewhere := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		there.add(r)
		http.Error(w, "no", http.StatusInternalServerError)
	}))
	t.Cleanup(elsewhere.Close)
	target := otherOrigin(t, elsewhere)
	configured := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet {
			http.Error(w, "no", http.StatusMethodNotAllowed)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprintf(w, "event: endpoint\ndata: %s/messages\n\n", target)
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	}))
	t.Cleanup(configured.Close)
	m := mcpclient.Start(t.Context(), []mcpclient.Config{{Name: "web", Type: mcpclient.SSE, URL: configured.URL, Headers: map[string]string{"Authorization": "Bearer sesame"}}}, mcpclient.Options{})
	t.Cleanup(m.Close)
	require.NotEmpty(t, there.list(), "nothing was posted to the named endpoint: the test tests nothing")
	for _, a := range there.list() {
		assert.Empty(t, a, "the user's credentials went to %s", target)
	}
}

// A server that answers a call with an endless JSON body does not make
// the client read it all: the body is read up to the size of the
// largest message the other transports take, then the call fails.
func TestHTTPBodyIsBounded(t *testing.T) {
	s := mcp.NewServer(&mcp.Implementation{Name: "web", Version: "1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "echo", Description: "Echo."},
		func(_ context.Context, _ *mcp.CallToolRequest, in textIn) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "web: " + in.Text}}}, nil, nil
		})
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, &mcp.StreamableHTTPOptions{JSONResponse: true})
	const huge = 96 << 20
	written := make(chan int, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if !strings.Contains(string(body), `"tools/call"`) {
			r.Body = io.NopCloser(strings.NewReader(string(body)))
			h.ServeHTTP(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		chunk := []byte(strings.Repeat(" ", 1<<20))
		n := 0
		for n < huge {
			k, err := w.Write(chunk)
			n += k
			if err != nil {
				break
			}
		}
		written <- n
	}))
	t.Cleanup(srv.Close)
	m, tools := start(t, mcpclient.Config{Name: "web", URL: srv.URL})
	require.Empty(t, m.Failures())
	res := call(t, t.Context(), tools["mcp__web__echo"], `{"text":"hello"}`, nil)
	assert.True(t, res.IsError, res.Content.Text())
	select {
	case n := <-written:
		assert.Less(t, n, huge, "the client read the whole %d bytes", huge)
	case <-time.After(60 * time.Second):
		t.Fatal("the server never finished writing")
	}
}
