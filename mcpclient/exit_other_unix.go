//go:build unix && !linux

package mcpclient

import "syscall"

// dieWithParent: only Linux kills a child when its parent dies; elsewhere
// a server whose pi-remote was killed sees its stdin end.
func dieWithParent(*syscall.SysProcAttr) {}
