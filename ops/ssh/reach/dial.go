package reach

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync/atomic"
	"time"

	gossh "golang.org/x/crypto/ssh"
)

// ConnectError is a failure to reach, verify or log in to a host. The CLI
// maps it to exit code 3.
type ConnectError struct {
	Host string // user@host:port as resolved
	Err  error
}

func (e *ConnectError) Error() string { return fmt.Sprintf("ssh %s: %v", e.Host, e.Err) }
func (e *ConnectError) Unwrap() error { return e.Err }

// Link is one established connection with the hops it goes through. Its
// methods are safe for concurrent use.
type Link struct {
	client  *gossh.Client
	reads   *lastRead       // the connection under client
	hops    []*gossh.Client // outermost first; closed after client
	first   net.Conn        // the TCP connection to the first hop, if any
	auth    string          // how we logged in, for `check`
	hostKey string          // host key status, for `check`
}

// Client is the SSH client of the host itself (past the hops).
func (l *Link) Client() *gossh.Client { return l.client }

// Auth says how the login went: the agent, how many keys, which
// identities were skipped and why (what `pi-remote check` prints).
func (l *Link) Auth() string { return l.auth }

// HostKey says how the host key was verified: known, or new and recorded
// where (what `pi-remote check` prints).
func (l *Link) HostKey() string { return l.hostKey }

// Idle is the time since bytes last arrived from the host.
func (l *Link) Idle() time.Duration {
	return time.Since(time.Unix(0, l.reads.at.Load()))
}

// Close closes the connection, then its hops, innermost first.
func (l *Link) Close() {
	l.client.Close()
	for i := len(l.hops) - 1; i >= 0; i-- {
		l.hops[i].Close()
	}
}

// Reset makes the close of the connection's TCP socket a reset (SO_LINGER
// 0): the data not yet acknowledged is dropped. Through jump hosts that is
// the socket to the first hop (the hops are this connection's own); what
// a hop further on holds is that hop's to deliver or drop.
func (l *Link) Reset() {
	raw := l.first
	if raw == nil {
		raw = l.reads.Conn
	}
	if tc, ok := raw.(*net.TCPConn); ok {
		tc.SetLinger(0)
	}
}

// Dial connects to c through its jump chain. The whole dial, handshakes
// included, is bounded by ctx and c.ConnectTimeout: x/crypto's own timeout
// covers only the TCP connect. A failure is a *ConnectError, wrapping a
// *HostKeyError or an *AuthError when the host's key or the login was
// refused.
func Dial(ctx context.Context, c *Config) (*Link, error) {
	timeout := c.ConnectTimeout
	if timeout <= 0 {
		timeout = DefaultConnectTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout*time.Duration(len(c.Jump)+1))
	defer cancel()

	l := &Link{}
	var via *gossh.Client
	for i := range c.Jump {
		hop := &c.Jump[i]
		client, reads, _, _, err := dialOne(ctx, via, hop)
		if err != nil {
			for j := len(l.hops) - 1; j >= 0; j-- {
				l.hops[j].Close()
			}
			return nil, &ConnectError{Host: c.String(), Err: fmt.Errorf("jump host %s: %w", hop.String(), err)}
		}
		if i == 0 {
			l.first = reads.Conn
		}
		l.hops = append(l.hops, client)
		via = client
	}
	client, reads, a, hk, err := dialOne(ctx, via, c)
	if err != nil {
		for j := len(l.hops) - 1; j >= 0; j-- {
			l.hops[j].Close()
		}
		return nil, &ConnectError{Host: c.String(), Err: err}
	}
	l.client, l.reads, l.auth, l.hostKey = client, reads, a, hk
	return l, nil
}

func dialOne(ctx context.Context, via *gossh.Client, c *Config) (*gossh.Client, *lastRead, string, string, error) {
	hk, err := loadHostKeys(c)
	if err != nil {
		return nil, nil, "", "", err
	}
	a := loadAuth(c)
	defer a.close()
	cfg := &gossh.ClientConfig{
		User:              c.User,
		Auth:              []gossh.AuthMethod{a.method()},
		HostKeyCallback:   hk.callback(),
		HostKeyAlgorithms: hk.algorithms(c.Addr()),
		Timeout:           c.ConnectTimeout,
	}

	var raw net.Conn
	if via == nil {
		raw, err = (&net.Dialer{Timeout: c.ConnectTimeout, KeepAlive: 15 * time.Second}).DialContext(ctx, "tcp", c.Addr())
	} else {
		raw, err = via.DialContext(ctx, "tcp", c.Addr())
	}
	if err != nil {
		if ctx.Err() != nil {
			return nil, nil, "", "", fmt.Errorf("connect: timed out after %s", c.ConnectTimeout)
		}
		return nil, nil, "", "", fmt.Errorf("connect: %w", err)
	}
	conn := &lastRead{Conn: raw}
	// Closing the conn is the one way to abandon a handshake that hangs;
	// jump channels do not support deadlines.
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	cc, chans, reqs, err := gossh.NewClientConn(conn, c.Addr(), cfg)
	if !stop() {
		if cc != nil {
			cc.Close()
		}
		conn.Close()
		return nil, nil, "", "", fmt.Errorf("handshake: timed out after %s", c.ConnectTimeout)
	}
	if err != nil {
		conn.Close()
		var hke *HostKeyError
		switch {
		case errors.As(err, &hke):
			return nil, nil, "", "", hke
		case strings.Contains(err.Error(), "unable to authenticate"):
			return nil, nil, "", "", authError(c, a, err)
		}
		return nil, nil, "", "", fmt.Errorf("handshake: %w", err)
	}
	return gossh.NewClient(cc, chans, reqs), conn, a.describe(), hk.status, nil
}

// AuthError is a refused login; it lists what was tried.
type AuthError struct {
	User    string
	Tried   []string
	Skipped []string
	Err     error
}

func (e *AuthError) Error() string {
	msg := fmt.Sprintf("authentication as %q failed", e.User)
	if len(e.Tried) == 0 {
		msg += ": no usable key (no ssh-agent with keys, no identity file; pass --identity FILE)"
	} else {
		msg += "; tried " + strings.Join(e.Tried, ", ")
	}
	if len(e.Skipped) > 0 {
		msg += "; skipped " + strings.Join(e.Skipped, "; ")
	}
	return msg
}

func (e *AuthError) Unwrap() error { return e.Err }

func authError(c *Config, a *auth, err error) error {
	return &AuthError{User: c.User, Tried: a.tried, Skipped: a.skipped, Err: err}
}

// lastRead records when bytes last arrived from the host.
type lastRead struct {
	net.Conn
	at atomic.Int64 // unix nanoseconds
}

func (l *lastRead) Read(p []byte) (int, error) {
	n, err := l.Conn.Read(p)
	if n > 0 {
		l.at.Store(time.Now().UnixNano())
	}
	return n, err
}
