package consumer_test

import (
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/handoff-dev/handoff/ingest/consumer"
	"github.com/handoff-dev/handoff/internal/testenv"
)

// TestClickHouseDown: while ClickHouse is unreachable, ingestion stalls and
// no offset is committed; when it is back, everything arrives.
func TestClickHouseDown(t *testing.T) {
	s := newSetup(t, "chdown")
	const pipeline = "pipe.chdown"
	p := testenv.NewProxy(t, s.chAddr)
	cfg := s.config()
	cfg.ClickHouse.Addr = p.Addr()
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

	p.SetDown(true)
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
	// The lag gauge shows the backlog while nothing can be committed (it
	// moved only on commits and read 0 throughout an outage).
	testenv.Eventually(t, time.Minute, "consumer lag above 0 while ClickHouse is down", func() (bool, string) {
		v := metricValue(t, reg, "handoff_ingest_consumer_lag")
		return v > 0, fmt.Sprintf("lag %v", v)
	})
	if n := uncommitted(t, s.brokers, s.group, s.topic); n != int64(len(duringMsgs)) {
		t.Fatalf("while down: %d messages uncommitted, want all %d sent during the outage", n, len(duringMsgs))
	}

	p.SetDown(false)
	waitCount(t, s.conn, 2*time.Minute, uint64(len(before)+len(during)), q)
	testenv.Eventually(t, time.Minute, "offsets committed after the outage", func() (bool, string) {
		n := uncommitted(t, s.brokers, s.group, s.topic)
		return n == 0, strconv.FormatInt(n, 10) + " uncommitted"
	})
	testenv.Eventually(t, time.Minute, "consumer lag back to 0", func() (bool, string) {
		v := metricValue(t, reg, "handoff_ingest_consumer_lag")
		return v == 0, fmt.Sprintf("lag %v", v)
	})
	if err := stop(); err != nil {
		t.Fatalf("graceful stop: %v", err)
	}
}
