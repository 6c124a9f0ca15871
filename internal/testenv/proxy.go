package testenv

import (
	"io"
	"net"
	"sync"
	"testing"
)

// Proxy is a loopback TCP proxy to a real service that a test can cut
// (every open connection closed, new ones closed at once, as in an outage)
// and restore. For Kafka it cuts only what goes through it: the bootstrap
// and admin connections (clients then connect to the listener the broker
// advertises); for ClickHouse it is a whole outage.
type Proxy struct {
	ln     net.Listener
	target string
	mu     sync.Mutex
	down   bool
	conns  map[net.Conn]bool
	wg     sync.WaitGroup
}

// NewProxy listens on a free loopback port and forwards to target
// (host:port) until the test ends.
func NewProxy(t testing.TB, target string) *Proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("proxy to %s: %v", target, err)
	}
	p := &Proxy{ln: ln, target: target, conns: map[net.Conn]bool{}}
	p.wg.Add(1)
	go p.serve()
	t.Cleanup(func() {
		ln.Close()
		p.SetDown(true)
		p.wg.Wait()
	})
	return p
}

// Addr returns the proxy's host:port, to connect to instead of the target.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

func (p *Proxy) serve() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		if p.down {
			p.mu.Unlock()
			c.Close()
			continue
		}
		up, err := net.Dial("tcp", p.target)
		if err != nil {
			p.mu.Unlock()
			c.Close()
			continue
		}
		p.conns[c], p.conns[up] = true, true
		p.mu.Unlock()
		p.wg.Add(2)
		go func() { defer p.wg.Done(); io.Copy(up, c); up.Close(); c.Close() }()
		go func() { defer p.wg.Done(); io.Copy(c, up); up.Close(); c.Close() }()
	}
}

// SetDown cuts the proxy (true) or restores it (false).
func (p *Proxy) SetDown(down bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.down = down
	if down {
		for c := range p.conns {
			c.Close()
		}
		p.conns = map[net.Conn]bool{}
	}
}
