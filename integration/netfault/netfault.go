// Package netfault is a TCP proxy for tests that puts faults between a
// client and a server on loopback: added latency, a bandwidth limit per
// direction, a black hole (bytes stop flowing, connections stay open), and
// resets, and a partition that heals late. netem is not available on every
// kernel; this works anywhere.
package netfault

import (
	"errors"
	"net"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// Proxy forwards connections from Addr to a target.
type Proxy struct {
	Addr   string
	target string
	ln     net.Listener

	mu      sync.Mutex
	delay   time.Duration    // one way
	rate    [2]int           // bytes per second client→server, server→client; 0 = unlimited
	held    [2]bool          // per direction: bytes wait (a black hole)
	unblock [2]chan struct{} // per direction: closed when the hold ends
	refuse  bool             // new connections are reset at once
	conns   map[*pair]bool

	accepted  atomic.Int64
	bytes     atomic.Int64
	lastReply atomic.Int64 // unix nanoseconds of the last bytes forwarded to a client
	resets    atomic.Int64 // client connections that ended with a reset
}

type pair struct {
	client, server *net.TCPConn
	// parted is closed when the partition this pair is caught in heals
	// (nil: it is caught in none); see Partition.
	parted chan struct{}
}

// Start listens on a loopback port until the test ends.
func Start(t testing.TB, target string) *Proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &Proxy{Addr: ln.Addr().String(), target: target, ln: ln, conns: map[*pair]bool{}}
	for dir := range p.unblock {
		p.unblock[dir] = make(chan struct{})
		close(p.unblock[dir])
	}
	go p.serve()
	t.Cleanup(func() {
		ln.Close()
		p.Reset()
	})
	return p
}

// SetRTT adds rtt of round-trip latency (half each way).
func (p *Proxy) SetRTT(rtt time.Duration) {
	p.mu.Lock()
	p.delay = rtt / 2
	p.mu.Unlock()
}

// SetRate limits the bandwidth of each direction in bytes per second (0:
// unlimited): up is client to server, down server to client. It applies to
// connections open now and later; connections made while a direction is
// limited also get a small receive buffer for it.
func (p *Proxy) SetRate(up, down int) {
	p.mu.Lock()
	p.rate = [2]int{up, down}
	p.mu.Unlock()
}

// Blackhole stops (on) or resumes (off) all forwarding. Connections stay
// open and unread bytes wait, as behind a dead route.
func (p *Proxy) Blackhole(on bool) {
	p.hold(0, on)
	p.hold(1, on)
}

// HoldReplies stops (on) or resumes (off) forwarding from the server to
// the client only: requests arrive, their answers wait.
func (p *Proxy) HoldReplies(on bool) { p.hold(1, on) }

func (p *Proxy) hold(dir int, on bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if on == p.held[dir] {
		return
	}
	p.held[dir] = on
	if on {
		p.unblock[dir] = make(chan struct{})
	} else {
		close(p.unblock[dir])
	}
}

// Partition stops the connections open now, both ways, as a partition of
// the network does; connections made later are not caught in it. heal
// ends it: what each side sent meanwhile is delivered then, even when that
// side has since closed or reset its connection, as a kernel that
// retransmits into a healed route does; and the server's side of such a
// connection is not closed (the server never saw a FIN) until the test
// ends.
func (p *Proxy) Partition() (heal func()) {
	parted := make(chan struct{})
	p.mu.Lock()
	for c := range p.conns {
		c.parted = parted
	}
	p.mu.Unlock()
	var once sync.Once
	return func() { once.Do(func() { close(parted) }) }
}

// Reset closes every current connection with a TCP reset.
func (p *Proxy) Reset() {
	p.mu.Lock()
	conns := p.conns
	p.conns = map[*pair]bool{}
	p.mu.Unlock()
	for c := range conns {
		c.client.SetLinger(0)
		c.server.SetLinger(0)
		c.client.Close()
		c.server.Close()
	}
}

// Refuse makes the proxy reset every new connection as soon as it is
// made (a host that is down), or stop doing so.
func (p *Proxy) Refuse(on bool) {
	p.mu.Lock()
	p.refuse = on
	p.mu.Unlock()
}

// Accepted is how many connections the proxy has accepted.
func (p *Proxy) Accepted() int64 { return p.accepted.Load() }

// Bytes is how many bytes were forwarded, both ways.
func (p *Proxy) Bytes() int64 { return p.bytes.Load() }

// ClientResets is how many client connections ended with a TCP reset
// (SO_LINGER 0 on the client's side) rather than a close.
func (p *Proxy) ClientResets() int64 { return p.resets.Load() }

// LastReply is when bytes from the server last reached a client.
func (p *Proxy) LastReply() time.Time { return time.Unix(0, p.lastReply.Load()) }

func (p *Proxy) serve() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.accepted.Add(1)
		p.mu.Lock()
		refuse := p.refuse
		p.mu.Unlock()
		if refuse {
			c.(*net.TCPConn).SetLinger(0)
			c.Close()
			continue
		}
		go p.handle(c.(*net.TCPConn))
	}
}

func (p *Proxy) handle(client *net.TCPConn) {
	s, err := net.Dial("tcp", p.target)
	if err != nil {
		client.Close()
		return
	}
	pr := &pair{client: client, server: s.(*net.TCPConn)}
	p.mu.Lock()
	rate := p.rate
	p.mu.Unlock()
	// A limited direction gets a small receive buffer, as on a real slow
	// link: the sender feels the limit instead of filling megabytes of
	// loopback buffers first.
	if rate[up] > 0 {
		pr.client.SetReadBuffer(64 << 10)
	}
	if rate[down] > 0 {
		pr.server.SetReadBuffer(64 << 10)
	}
	p.mu.Lock()
	p.conns[pr] = true
	p.mu.Unlock()
	var wg sync.WaitGroup
	wg.Go(func() { p.pipe(pr, pr.server, pr.client, up) })
	wg.Go(func() { p.pipe(pr, pr.client, pr.server, down) })
	wg.Wait()
	pr.client.Close()
	pr.server.Close()
	p.mu.Lock()
	delete(p.conns, pr)
	p.mu.Unlock()
}

const (
	up   = 0
	down = 1
)

type chunk struct {
	at   time.Time
	data []byte
}

// pipe copies src to dst in direction dir of pr, releasing each chunk after
// the one-way delay, no faster than the direction's rate, and holding
// everything while the black hole is on or pr is caught in a partition.
func (p *Proxy) pipe(pr *pair, dst, src *net.TCPConn, dir int) {
	queue := make(chan chunk, 256)
	go func() {
		defer close(queue)
		var next time.Time // when the link is free again
		for {
			buf := make([]byte, 32<<10)
			p.mu.Lock()
			rate := p.rate[dir]
			p.mu.Unlock()
			if rate > 0 {
				// Small reads, paced: the sender sees the link's speed
				// through TCP's flow control.
				buf = buf[:min(len(buf), max(rate/50, 512))]
			}
			n, err := src.Read(buf)
			if dir == up && errors.Is(err, syscall.ECONNRESET) {
				p.resets.Add(1)
			}
			if n > 0 {
				if rate > 0 {
					if now := time.Now(); next.Before(now) {
						next = now
					}
					next = next.Add(time.Duration(n) * time.Second / time.Duration(rate))
					time.Sleep(time.Until(next))
				}
				queue <- chunk{at: time.Now(), data: buf[:n]}
			}
			if err != nil {
				return
			}
		}
	}()
	for c := range queue {
		for {
			p.mu.Lock()
			delay, unblock, parted := p.delay, p.unblock[dir], pr.parted
			p.mu.Unlock()
			<-unblock
			if parted != nil {
				<-parted
			}
			if wait := time.Until(c.at.Add(delay)); wait > 0 {
				time.Sleep(wait)
			}
			p.mu.Lock()
			blocked := p.held[dir]
			p.mu.Unlock()
			if !blocked {
				break
			}
		}
		if _, err := dst.Write(c.data); err != nil {
			p.mu.Lock()
			late := pr.parted != nil
			p.mu.Unlock()
			if late && dir == down {
				// The client is gone: the server's side stays open, its
				// output dropped, as when nobody acknowledges it.
				for range queue {
				}
				return
			}
			src.Close()
			dst.Close()
			for range queue {
			}
			return
		}
		p.bytes.Add(int64(len(c.data)))
		if dir == down {
			p.lastReply.Store(time.Now().UnixNano())
		}
	}
	p.mu.Lock()
	late := pr.parted != nil
	p.mu.Unlock()
	if late && dir == up {
		return
	}
	dst.CloseWrite()
}
