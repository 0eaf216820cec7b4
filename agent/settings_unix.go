//go:build unix

package agent

import (
	"fmt"
	"io/fs"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"syscall"
)

// projectFileRefusal says why a project's settings file f (fi, its file
// info) is not to be read, or "" when only the user or root could have
// written it: the file, its .pi-remote directory and the project
// directory must be theirs, and neither the file nor a directory may be
// writable by others (a directory may when it is sticky), nor by a group
// other than the user's private one (named after the user: Debian's
// umask 002). The same rules as for context files (tools/context.sh).
func projectFileRefusal(f *os.File, fi fs.FileInfo) string {
	dir := filepath.Dir(f.Name())
	for _, c := range []struct {
		name string
		fi   fs.FileInfo
	}{{f.Name(), fi}, {dir, nil}, {filepath.Dir(dir), nil}} {
		if c.fi == nil {
			var err error
			if c.fi, err = os.Stat(c.name); err != nil {
				return fmt.Sprintf("cannot check who may change %s: %v", c.name, err)
			}
		}
		st, ok := c.fi.Sys().(*syscall.Stat_t)
		if !ok {
			return "cannot check who owns " + c.name
		}
		if int(st.Uid) != os.Geteuid() && st.Uid != 0 {
			return fmt.Sprintf("%s is owned by uid %d, who could have written the settings", c.name, st.Uid)
		}
		mode := c.fi.Mode()
		if c.fi.IsDir() && mode&fs.ModeSticky != 0 {
			continue
		}
		if mode&0o002 != 0 || mode&0o020 != 0 && !privateGroup(st.Gid) {
			return fmt.Sprintf("other users may write to %s", c.name)
		}
	}
	return ""
}

// privateGroup says whether gid is the user's primary group and named
// after the user.
func privateGroup(gid uint32) bool {
	if int(gid) != os.Getegid() {
		return false
	}
	u, err := user.LookupId(strconv.Itoa(os.Geteuid()))
	if err != nil {
		return false
	}
	g, err := user.LookupGroupId(strconv.Itoa(int(gid)))
	return err == nil && g.Name == u.Username
}
