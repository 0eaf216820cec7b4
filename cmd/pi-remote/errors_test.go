package main

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// A model's failure (a refused key, a server that is not there) is told
// once in print mode, and the run exits 1.
func TestModelErrorToldOnce(t *testing.T) {
	refusing := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		fmt.Fprint(w, `{"error":{"message":"Incorrect API key provided","type":"invalid_request_error","code":"invalid_api_key"}}`)
	}))
	t.Cleanup(refusing.Close)
	gone := httptest.NewServer(http.NotFoundHandler())
	gone.Close()
	for name, tc := range map[string]struct{ url, says string }{
		"401":                {refusing.URL, "Incorrect API key provided"},
		"connection refused": {gone.URL, "connection refused"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Setenv("HOME", t.TempDir())
			t.Setenv("PI_REMOTE_MODEL", "")
			t.Setenv("OPENAI_API_KEY", "sk-wrong")
			t.Chdir(t.TempDir())
			code, _, errOut := runCLI(t, "", "run", "--model", "openai/gpt-4o-mini", "--base-url", tc.url+"/v1", "hi")
			assert.Equal(t, exitFailed, code, errOut)
			var told []string
			for l := range strings.Lines(errOut) {
				if strings.Contains(l, tc.says) && !strings.Contains(l, "retrying") {
					told = append(told, l)
				}
			}
			assert.Len(t, told, 1, errOut)
		})
	}
}
