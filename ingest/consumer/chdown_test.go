package consumer_test

import (
	"fmt"
	"io"
	"net"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/handoff-dev/handoff/ingest/consumer"
	"github.com/handoff-dev/handoff/internal/testenv"
)

// proxy is a loopback TCP proxy that can be cut (every connection closed,
// new ones refused by closing them at once) and restored.
type proxy struct {
	ln     net.Listener
	target string
	mu     sync.Mutex
	down   bool
	conns  map[net.Conn]bool
}

func newProxy(t *testing.T, target string) *proxy {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &proxy{ln: ln, target: target, conns: map[net.Conn]bool{}}
	go p.serve()
	t.Cleanup(func() { ln.Close(); p.setDown(true) })
	return p
}

func (p *proxy) addr() string { return p.ln.Addr().String() }

func (p *proxy) serve() {
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
		go func() { io.Copy(up, c); up.Close(); c.Close() }()
		go func() { io.Copy(c, up); up.Close(); c.Close() }()
	}
}

func (p *proxy) setDown(down bool) {
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

// TestClickHouseDown: while ClickHouse is unreachable, ingestion stalls and
// no offset is committed; when it is back, everything arrives.
func TestClickHouseDown(t *testing.T) {
	s := newSetup(t, "chdown")
	const pipeline = "pipe.chdown"
	p := newProxy(t, s.chAddr)
	cfg := s.config()
	cfg.ClickHouseAddr = p.addr()
	_, reg, stop := start(t, cfg, consumer.Options{})
	w := writer(t, s.brokers, s.topic)
	q := "SELECT count() FROM " + s.db + ".events FINAL"

	before := testenv.Events(1000, pipeline, 5)
	produce(t, w, twiceShuffled(before, 1))
	waitCount(t, s.conn, 2*time.Minute, uint64(len(before)), q)
	testenv.Eventually(t, time.Minute, "offsets committed before the outage", func() (bool, string) {
		n := uncommitted(t, s.brokers, s.group, s.topic)
		return n == 0, strconv.FormatInt(n, 10) + " uncommitted"
	})

	p.setDown(true)
	during := testenv.Events(2000, pipeline+"-during", 6)
	duringMsgs := twiceShuffled(during, 2)
	produce(t, w, duringMsgs)
	failedBefore := metricValue(t, reg, "handoff_ingest_errors_total", "stage", "insert")
	testenv.Eventually(t, time.Minute, "inserts failing while ClickHouse is down", func() (bool, string) {
		v := metricValue(t, reg, "handoff_ingest_errors_total", "stage", "insert")
		return v >= failedBefore+3, fmt.Sprintf("%v failed inserts", v)
	})
	if n := count(t, s.conn, q); n != uint64(len(before)) {
		t.Fatalf("while down: %d events stored, want %d", n, len(before))
	}
	if n := uncommitted(t, s.brokers, s.group, s.topic); n != int64(len(duringMsgs)) {
		t.Fatalf("while down: %d messages uncommitted, want all %d sent during the outage", n, len(duringMsgs))
	}

	p.setDown(false)
	waitCount(t, s.conn, 2*time.Minute, uint64(len(before)+len(during)), q)
	testenv.Eventually(t, time.Minute, "offsets committed after the outage", func() (bool, string) {
		n := uncommitted(t, s.brokers, s.group, s.topic)
		return n == 0, strconv.FormatInt(n, 10) + " uncommitted"
	})
	if err := stop(); err != nil {
		t.Fatalf("graceful stop: %v", err)
	}
}
