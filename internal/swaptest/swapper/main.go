//go:build linux

// Command swapper is the attacker of package swaptest: run as another user
// than the writer's, it watches a directory it owns and, the moment a new
// entry appears there (inotify), swaps it for a symbolic link to a canary
// file the writer may change and the attacker may not. A new directory is
// first renamed away and replaced with a link to a directory of the
// attacker's, which holds a link to the canary under the directory's own
// name. It prints "ready" once watching, then one line per swap.
//
//	swapper DIR CANARY EVIL [SPARED...]
//
// SPARED names are left alone (the files being written: a link there is
// the documented "write through a symlink", not an attack on the write).
//
//	swapper -exchange DIR NAME BAIT
//
// exchanges instead, for ever, the entry NAME in DIR with a symbolic link
// to BAIT, a file of the attacker's (renameat2 RENAME_EXCHANGE): the file
// written is at NAME most of the time, and otherwise under the link's
// name. A write that replaces the link at NAME leaves two files: the
// older is moved away and the link made anew. It prints "ready", then
// "swapped 10" every 10 exchanges.
package main

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

func main() {
	if len(os.Args) == 5 && os.Args[1] == "-exchange" {
		if err := exchange(os.Args[2], os.Args[3], os.Args[4]); err != nil {
			fmt.Fprintln(os.Stderr, "swapper:", err)
			os.Exit(1)
		}
		return
	}
	if len(os.Args) < 4 {
		fmt.Fprintln(os.Stderr, "usage: swapper DIR CANARY EVIL [SPARED...]")
		os.Exit(2)
	}
	s := &swapper{dir: os.Args[1], canary: os.Args[2], evil: os.Args[3], spared: map[string]bool{}, out: bufio.NewWriter(os.Stdout)}
	for _, name := range os.Args[4:] {
		s.spared[name] = true
	}
	if err := s.run(); err != nil {
		fmt.Fprintln(os.Stderr, "swapper:", err)
		os.Exit(1)
	}
}

type swapper struct {
	dir, canary, evil string
	spared            map[string]bool
	out               *bufio.Writer
	n                 int
}

// run watches dir for ever.
func (s *swapper) run() error {
	fd, err := unix.InotifyInit1(unix.IN_CLOEXEC)
	if err != nil {
		return err
	}
	if _, err := unix.InotifyAddWatch(fd, s.dir, unix.IN_CREATE|unix.IN_MOVED_TO); err != nil {
		return err
	}
	fmt.Fprintln(s.out, "ready")
	s.out.Flush()
	buf := make([]byte, 64<<10)
	for {
		n, err := unix.Read(fd, buf)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return err
		}
		for off := 0; off+unix.SizeofInotifyEvent <= n; {
			ev := (*unix.InotifyEvent)(unsafe.Pointer(&buf[off]))
			name := strings.TrimRight(string(buf[off+unix.SizeofInotifyEvent:off+unix.SizeofInotifyEvent+int(ev.Len)]), "\x00")
			off += unix.SizeofInotifyEvent + int(ev.Len)
			if name != "" && !s.spared[name] && !strings.HasPrefix(name, "swap-") {
				s.swap(name)
			}
		}
		s.out.Flush()
	}
}

// swap replaces the entry name with a link to the canary, or to the evil
// directory when it is a directory.
func (s *swapper) swap(name string) {
	p := filepath.Join(s.dir, name)
	var st unix.Stat_t
	if unix.Lstat(p, &st) != nil || st.Mode&unix.S_IFMT == unix.S_IFLNK {
		return
	}
	s.n++
	link := filepath.Join(s.dir, fmt.Sprintf("swap-link-%d", s.n))
	if st.Mode&unix.S_IFMT == unix.S_IFDIR {
		// The file inside is likely named like its directory.
		os.Symlink(s.canary, filepath.Join(s.evil, name))
		if os.Symlink(s.evil, link) != nil || os.Rename(p, filepath.Join(s.dir, fmt.Sprintf("swap-moved-%d", s.n))) != nil {
			os.Remove(link)
			return
		}
	} else if os.Symlink(s.canary, link) != nil {
		return
	}
	if os.Rename(link, p) != nil {
		os.Remove(link)
		return
	}
	fmt.Fprintf(s.out, "swapped %s\n", name)
}

// exchange runs the -exchange attack for ever.
func exchange(dir, name, bait string) error {
	out := bufio.NewWriter(os.Stdout)
	target, link := filepath.Join(dir, name), filepath.Join(dir, "swap-link")
	if err := os.Symlink(bait, link); err != nil {
		return err
	}
	fmt.Fprintln(out, "ready")
	out.Flush()
	for n := 1; ; n++ {
		if err := unix.Renameat2(unix.AT_FDCWD, target, unix.AT_FDCWD, link, unix.RENAME_EXCHANGE); err != nil {
			return err
		}
		var a, b unix.Stat_t
		if unix.Lstat(target, &a) == nil && unix.Lstat(link, &b) == nil &&
			a.Mode&unix.S_IFMT != unix.S_IFLNK && b.Mode&unix.S_IFMT != unix.S_IFLNK {
			// Both are files: keep the newer at NAME.
			older := link
			if a.Mtim.Nano() < b.Mtim.Nano() {
				older = target
			}
			if err := os.Rename(older, filepath.Join(dir, fmt.Sprintf("swap-moved-%d", n))); err != nil {
				return err
			}
			if older == target {
				if err := os.Rename(link, target); err != nil {
					return err
				}
			}
			if err := os.Symlink(bait, link); err != nil {
				return err
			}
		}
		// The file stays at NAME four times as long as the link: most
		// edits may go through, and the link shows up in their midst.
		if a.Mode&unix.S_IFMT == unix.S_IFLNK {
			time.Sleep(250 * time.Microsecond)
		} else {
			time.Sleep(time.Millisecond)
		}
		if n%10 == 0 {
			fmt.Fprintln(out, "swapped 10")
			out.Flush()
		}
	}
}
