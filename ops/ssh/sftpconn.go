package ssh

import (
	"context"
	"time"

	"github.com/pkg/sftp"
)

// useSFTP returns the SFTP client for an upload, opening it on first use,
// and a function to call when the upload is done. It returns a nil client
// when SFTP is not to be used: the host has none, or too few sessions to
// spare one.
func (c *conn) useSFTP(ctx context.Context) (*sftp.Client, func(), error) {
	if c.host.opts.NoSFTP {
		return nil, nil, nil
	}
	for {
		c.mu.Lock()
		switch {
		case c.sftp != nil && !c.sftpOff:
			c.sftpUsers++
			sc := c.sftp
			c.mu.Unlock()
			return sc, c.doneSFTP, nil
		case c.sftpOff || c.limit < 3:
			c.mu.Unlock()
			return nil, nil, nil
		case c.sftpOpening != nil:
			opening := c.sftpOpening
			c.mu.Unlock()
			select {
			case <-opening:
				continue
			case <-ctx.Done():
				return nil, nil, ctx.Err()
			}
		}
		opening := make(chan struct{})
		c.sftpOpening = opening
		c.mu.Unlock()
		err := c.openSFTP(ctx)
		c.mu.Lock()
		c.sftpOpening = nil
		close(opening)
		c.mu.Unlock()
		if err != nil {
			return nil, nil, err
		}
	}
}

func (c *conn) doneSFTP() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.sftpUsers--
	if c.sftpOff && c.sftpUsers == 0 && c.sftp != nil {
		c.closeSFTPLocked()
		c.notifyLocked()
	}
}

func (c *conn) closeSFTPLocked() {
	c.sftp.Close()
	c.sftpSess.Close()
	c.sftp, c.sftpSess = nil, nil
	c.used--
	c.closedAt = time.Now()
}

// openSFTP starts the subsystem in a slot of its own. A host without it,
// or one that refuses the channel, turns SFTP off for the connection.
func (c *conn) openSFTP(ctx context.Context) error {
	if _, err := c.acquire(ctx, false, need{}); err != nil {
		return err
	}
	c.host.sessions.Add(1)
	sess, err := c.link.Client().NewSession()
	if err != nil {
		if isOpenRefused(err) {
			c.refused() // turns SFTP off
			return nil
		}
		c.release(nil)
		return c.lost(err)
	}
	off := func() error {
		sess.Close()
		c.mu.Lock()
		c.sftpOff = true
		c.mu.Unlock()
		c.release(nil)
		return nil
	}
	w, err := sess.StdinPipe()
	if err != nil {
		return off()
	}
	r, err := sess.StdoutPipe()
	if err != nil {
		return off()
	}
	if err := sess.RequestSubsystem("sftp"); err != nil {
		return off()
	}
	stop := context.AfterFunc(ctx, func() { sess.Close() })
	client, err := sftp.NewClientPipe(r, w, sftp.UseConcurrentWrites(true), sftp.UseConcurrentReads(true))
	if !stop() {
		if client != nil {
			client.Close()
		}
		off()
		return ctx.Err()
	}
	if err != nil {
		return off()
	}
	c.mu.Lock()
	c.sftp, c.sftpSess = client, sess
	c.mu.Unlock()
	return nil
}
