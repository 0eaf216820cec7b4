//go:build !linux

package mcpclient

// awaitExit cannot wait without reaping here: the group is then killed
// only by Close, while the program runs.
func awaitExit(int) bool { return false }
