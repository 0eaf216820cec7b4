package ssh

import (
	"flag"
	"os"
	"testing"

	"github.com/pi-remote/pi-remote/internal/tier"
)

func TestMain(m *testing.M) {
	flag.Parse()
	tier.Parallel(4)
	os.Exit(m.Run())
}
