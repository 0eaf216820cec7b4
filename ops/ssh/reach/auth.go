package reach

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"

	gossh "golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/agent"
)

// auth collects the public keys for one host, in OpenSSH's order, behind a
// single PublicKeysCallback (x/crypto uses only the first method of each
// kind, so agent and file keys must share one).
type auth struct {
	signers []gossh.Signer
	tried   []string // descriptions, in order, for error messages
	skipped []string // identities that could not be used, with the reason
	agent   net.Conn
}

func (a *auth) close() {
	if a.agent != nil {
		a.agent.Close()
	}
}

func (a *auth) method() gossh.AuthMethod {
	return gossh.PublicKeysCallback(func() ([]gossh.Signer, error) { return a.signers, nil })
}

// describe is the one-line summary `check` prints.
func (a *auth) describe() string {
	var parts []string
	if a.agent != nil {
		parts = append(parts, "ssh-agent")
	}
	parts = append(parts, fmt.Sprintf("%d key(s)", len(a.signers)))
	s := strings.Join(parts, ", ")
	if len(a.skipped) > 0 {
		s += "; skipped: " + strings.Join(a.skipped, "; ")
	}
	return s
}

func loadAuth(c *Config) *auth {
	a := &auth{}
	var agentSigners []gossh.Signer
	sock := c.IdentityAgent
	if sock == "" || strings.EqualFold(sock, "SSH_AUTH_SOCK") {
		sock = os.Getenv("SSH_AUTH_SOCK")
	}
	if sock != "" && !strings.EqualFold(sock, "none") {
		if conn, err := net.Dial("unix", sock); err == nil {
			if s, err := agent.NewClient(conn).Signers(); err == nil {
				a.agent = conn
				agentSigners = s
			} else {
				conn.Close()
			}
		}
	}
	inAgent := func(pub gossh.PublicKey) gossh.Signer {
		for _, s := range agentSigners {
			if bytes.Equal(s.PublicKey().Marshal(), pub.Marshal()) {
				return s
			}
		}
		return nil
	}
	used := map[string]bool{}
	add := func(s gossh.Signer, what string) {
		k := string(s.PublicKey().Marshal())
		if used[k] {
			return
		}
		used[k] = true
		a.signers = append(a.signers, s)
		a.tried = append(a.tried, what)
	}

	var fromAgent, fromFiles []gossh.Signer
	var agentNames, fileNames []string
	for _, file := range c.IdentityFiles {
		pem, err := os.ReadFile(file)
		if err != nil {
			if !errors.Is(err, os.ErrNotExist) {
				a.skipped = append(a.skipped, fmt.Sprintf("%s (%v)", file, err))
			}
			continue
		}
		signer, err := gossh.ParsePrivateKey(pem)
		var pm *gossh.PassphraseMissingError
		switch {
		case errors.As(err, &pm):
			if pm.PublicKey != nil {
				if s := inAgent(pm.PublicKey); s != nil {
					fromAgent = append(fromAgent, s)
					agentNames = append(agentNames, file+" (agent)")
					continue
				}
			}
			a.skipped = append(a.skipped, fmt.Sprintf("%s needs a passphrase and no ssh-agent holds it (run: ssh-add %s)", file, file))
			continue
		case err != nil:
			a.skipped = append(a.skipped, fmt.Sprintf("%s (%v)", file, err))
			continue
		}
		if s := inAgent(signer.PublicKey()); s != nil {
			fromAgent = append(fromAgent, s)
			agentNames = append(agentNames, file+" (agent)")
			continue
		}
		signer = withCertificate(signer, file)
		fromFiles = append(fromFiles, signer)
		fileNames = append(fileNames, file)
	}
	for i, s := range fromAgent {
		add(s, agentNames[i])
	}
	for i, s := range fromFiles {
		add(s, fileNames[i])
	}
	if !c.IdentitiesOnly {
		for _, s := range agentSigners {
			add(s, "agent key "+gossh.FingerprintSHA256(s.PublicKey()))
		}
	}
	return a
}

// withCertificate pairs a key with FILE-cert.pub when that certificate exists.
func withCertificate(s gossh.Signer, file string) gossh.Signer {
	b, err := os.ReadFile(file + "-cert.pub")
	if err != nil {
		return s
	}
	pub, _, _, _, err := gossh.ParseAuthorizedKey(b)
	if err != nil {
		return s
	}
	cert, ok := pub.(*gossh.Certificate)
	if !ok {
		return s
	}
	cs, err := gossh.NewCertSigner(cert, s)
	if err != nil {
		return s
	}
	return cs
}
