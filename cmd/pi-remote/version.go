package main

import (
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"
)

// version is set at link time by release builds
// (-ldflags "-X main.version=v1.2.3"); otherwise it comes from the build
// information Go records: the module version for go install of a tagged
// release, the VCS revision for a build from a clone.
var version = ""

func newVersionCmd(io iostreams) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version, commit and platform of this binary",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			fmt.Fprintln(io.out, versionString())
			return nil
		},
	}
}

// versionString is "pi-remote VERSION (commit REV, DATE[, modified]) GO OS/ARCH".
func versionString() string {
	v, detail := version, ""
	if info, ok := debug.ReadBuildInfo(); ok {
		if v == "" {
			v = info.Main.Version
		}
		settings := map[string]string{}
		for _, s := range info.Settings {
			settings[s.Key] = s.Value
		}
		if rev := settings["vcs.revision"]; rev != "" {
			detail = "commit " + rev[:min(len(rev), 12)]
			if t := settings["vcs.time"]; t != "" {
				detail += ", " + t
			}
			if settings["vcs.modified"] == "true" {
				detail += ", modified"
			}
		}
	}
	if v == "" {
		v = "(devel)"
	}
	s := "pi-remote " + v
	if detail != "" {
		s += " (" + detail + ")"
	}
	return fmt.Sprintf("%s %s %s/%s", s, runtime.Version(), runtime.GOOS, runtime.GOARCH)
}
