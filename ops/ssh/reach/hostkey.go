package reach

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"

	"github.com/skeema/knownhosts"
	gossh "golang.org/x/crypto/ssh"
	xknownhosts "golang.org/x/crypto/ssh/knownhosts"
)

// HostKeyError is a host key that was refused: unknown (and not accepted
// with AcceptNewHostKey) or different from the one known_hosts records.
type HostKeyError struct {
	Addr    string
	Offered gossh.PublicKey
	Known   []xknownhosts.KnownKey // empty: the host is unknown
	File    string                 // where an accepted key would be written
}

func (e *HostKeyError) Error() string {
	offered := fmt.Sprintf("%s %s", e.Offered.Type(), gossh.FingerprintSHA256(e.Offered))
	if len(e.Known) == 0 {
		return fmt.Sprintf("host key of %s is unknown (server offered %s); verify it, then pass --accept-new-host-key to record it in %s",
			e.Addr, offered, e.File)
	}
	var known []string
	for _, k := range e.Known {
		known = append(known, fmt.Sprintf("%s %s (%s:%d)", k.Key.Type(), gossh.FingerprintSHA256(k.Key), k.Filename, k.Line))
	}
	return fmt.Sprintf("HOST KEY OF %s HAS CHANGED: known_hosts has %s, server offered %s. Someone may be intercepting the connection. "+
		"If the change is expected, remove the old entry (ssh-keygen -R %s -f %s) and connect again",
		e.Addr, strings.Join(known, ", "), offered, xknownhosts.Normalize(e.Addr), e.Known[0].Filename)
}

// hostKeys verifies server keys against known_hosts files.
type hostKeys struct {
	db        *knownhosts.HostKeyDB // nil when no file exists yet
	files     []string
	acceptNew bool
	status    string // what happened at the last check, for `check`
}

// knownHostsFiles are the known_hosts files parsed (parsedFiles); one a
// host key was added to is parsed again.
var knownHostsFiles parsedFiles[*knownhosts.HostKeyDB]

func loadHostKeys(c *Config) (*hostKeys, error) {
	h := &hostKeys{acceptNew: c.AcceptNewHostKey, files: c.KnownHostsFiles}
	var existing []string
	for _, f := range c.KnownHostsFiles {
		if _, err := os.Stat(f); err == nil {
			existing = append(existing, f)
		}
	}
	if len(existing) > 0 {
		db, err := knownHostsFiles.get(existing, func() (*knownhosts.HostKeyDB, error) { return knownhosts.NewDB(existing...) })
		if err != nil {
			return nil, fmt.Errorf("known_hosts: %w", err)
		}
		h.db = db
	}
	return h, nil
}

// algorithms are the host key algorithms to ask for: the ones known_hosts
// has for addr, so that a host with several keys presents the one we know.
func (h *hostKeys) algorithms(addr string) []string {
	if h.db == nil {
		return nil
	}
	return h.db.HostKeyAlgorithms(addr)
}

func (h *hostKeys) callback() gossh.HostKeyCallback {
	return func(hostname string, remote net.Addr, key gossh.PublicKey) error {
		var err error
		if h.db != nil {
			err = h.db.HostKeyCallback()(hostname, remote, key)
		} else {
			err = &xknownhosts.KeyError{}
		}
		if err == nil {
			h.status = "known (" + key.Type() + " " + gossh.FingerprintSHA256(key) + ")"
			return nil
		}
		var ke *xknownhosts.KeyError
		if !errors.As(err, &ke) {
			return err
		}
		if len(ke.Want) > 0 {
			return &HostKeyError{Addr: hostname, Offered: key, Known: ke.Want, File: h.writeFile()}
		}
		if !h.acceptNew {
			return &HostKeyError{Addr: hostname, Offered: key, File: h.writeFile()}
		}
		if err := h.record(hostname, key); err != nil {
			return fmt.Errorf("recording host key of %s: %w", hostname, err)
		}
		h.status = "new, recorded in " + h.writeFile() + " (" + key.Type() + " " + gossh.FingerprintSHA256(key) + ")"
		return nil
	}
}

func (h *hostKeys) writeFile() string {
	if len(h.files) == 0 {
		return filepath.Join(homeDir(), ".ssh", "known_hosts")
	}
	return h.files[0]
}

// record appends one known_hosts line under an exclusive lock, creating
// the file (0600) and its directory (0700) when needed.
func (h *hostKeys) record(addr string, key gossh.PublicKey) error {
	name := h.writeFile()
	if err := os.MkdirAll(filepath.Dir(name), 0o700); err != nil {
		return err
	}
	f, err := os.OpenFile(name, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := lockFile(f); err != nil {
		return err
	}
	line := knownhosts.Line([]string{knownhosts.Normalize(addr)}, key)
	_, err = f.WriteString(line + "\n")
	return err
}
