package ssh

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync/atomic"
	"time"

	"golang.org/x/crypto/ssh"
)

// ConnectError is a failure to reach, verify or log in to a host. The CLI
// maps it to exit code 3.
type ConnectError struct {
	Host string // user@host:port as resolved
	Err  error
}

func (e *ConnectError) Error() string { return fmt.Sprintf("ssh %s: %v", e.Host, e.Err) }
func (e *ConnectError) Unwrap() error { return e.Err }

// dialed is one established connection with the hops it goes through.
type dialed struct {
	client  *ssh.Client
	reads   *lastRead     // the connection under client
	hops    []*ssh.Client // outermost first; closed after client
	first   net.Conn      // the TCP connection to the first hop, if any
	auth    string        // how we logged in, for `check`
	hostKey string        // host key status, for `check`
}

// idle is the time since bytes last arrived from the host.
func (d *dialed) idle() time.Duration {
	return time.Since(time.Unix(0, d.reads.at.Load()))
}

func (d *dialed) close() {
	d.client.Close()
	for i := len(d.hops) - 1; i >= 0; i-- {
		d.hops[i].Close()
	}
}

// reset makes the close of the connection's TCP socket a reset (SO_LINGER
// 0): the data not yet acknowledged is dropped. Through jump hosts that is
// the socket to the first hop (the hops are this connection's own); what
// a hop further on holds is that hop's to deliver or drop.
func (d *dialed) reset() {
	raw := d.first
	if raw == nil {
		raw = d.reads.Conn
	}
	if tc, ok := raw.(*net.TCPConn); ok {
		tc.SetLinger(0)
	}
}

// dial connects to c through its jump chain. The whole dial, handshakes
// included, is bounded by ctx and c.ConnectTimeout: x/crypto's own timeout
// covers only the TCP connect.
func dial(ctx context.Context, c *Config) (*dialed, error) {
	timeout := c.ConnectTimeout
	if timeout <= 0 {
		timeout = defaultConnectTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout*time.Duration(len(c.Jump)+1))
	defer cancel()

	d := &dialed{}
	var via *ssh.Client
	for i := range c.Jump {
		hop := &c.Jump[i]
		client, reads, _, _, err := dialOne(ctx, via, hop)
		if err != nil {
			for j := len(d.hops) - 1; j >= 0; j-- {
				d.hops[j].Close()
			}
			return nil, &ConnectError{Host: c.String(), Err: fmt.Errorf("jump host %s: %w", hop.String(), err)}
		}
		if i == 0 {
			d.first = reads.Conn
		}
		d.hops = append(d.hops, client)
		via = client
	}
	client, reads, a, hk, err := dialOne(ctx, via, c)
	if err != nil {
		for j := len(d.hops) - 1; j >= 0; j-- {
			d.hops[j].Close()
		}
		return nil, &ConnectError{Host: c.String(), Err: err}
	}
	d.client, d.reads, d.auth, d.hostKey = client, reads, a, hk
	return d, nil
}

func dialOne(ctx context.Context, via *ssh.Client, c *Config) (*ssh.Client, *lastRead, string, string, error) {
	hk, err := loadHostKeys(c)
	if err != nil {
		return nil, nil, "", "", err
	}
	a := loadAuth(c)
	defer a.close()
	cfg := &ssh.ClientConfig{
		User:              c.User,
		Auth:              []ssh.AuthMethod{a.method()},
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
	cc, chans, reqs, err := ssh.NewClientConn(conn, c.Addr(), cfg)
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
	return ssh.NewClient(cc, chans, reqs), conn, a.describe(), hk.status, nil
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
