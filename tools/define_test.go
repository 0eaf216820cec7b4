package tools_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/pi-remote/pi-remote/env"
	"github.com/pi-remote/pi-remote/ops/local"
	"github.com/pi-remote/pi-remote/tools"
)

// The permission gate lets a tool run on a read-only host only when its
// definition says it changes nothing: the four readers say so, and the
// tools that change their host do not.
func TestReadOnlyTools(t *testing.T) {
	e := env.New(local.New(), env.Options{Cwd: "/", Home: "/"})
	var readOnly []string
	for _, d := range tools.Definitions(e, tools.Options{}) {
		if d.ReadOnly {
			readOnly = append(readOnly, d.Name)
		}
	}
	assert.Equal(t, tools.ReadOnly, readOnly)
}
