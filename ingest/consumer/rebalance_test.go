package consumer_test

import (
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/handoff-dev/handoff/ingest/consumer"
	"github.com/handoff-dev/handoff/internal/testenv"
)

// TestRebalanceMidBatch: a second ingester joins the group while the first
// holds a batch it cannot store (its ClickHouse cut), so partitions are
// revoked from the first in the middle of that batch. The first commits
// nothing while the batch is unstored, the second stores and commits what
// its partitions hold, and once the first's ClickHouse is back its held
// batch is stored and nothing is lost, doubled or left uncommitted: the
// commits of messages fetched in the earlier generation go through the
// current one and never move a partition back. Afterwards each ingester's
// lag gauge is 0.
func TestRebalanceMidBatch(t *testing.T) {
	s := newSetup(t, "rebalance")
	const pipeline = "pipe.rebalance"
	p := testenv.NewProxy(t, s.chAddr)
	cfgA := s.config()
	cfgA.ClickHouse.Addr = p.Addr()
	_, regA, stopA := start(t, cfgA, consumer.Options{})
	w := writer(t, s.brokers, s.topic)
	q := "SELECT count() FROM " + s.db + ".events FINAL"
	qDistinct := "SELECT uniqExact(event_id) FROM " + s.db + ".events"
	allCommitted := func(what string) {
		t.Helper()
		testenv.Eventually(t, time.Minute, what, func() (bool, string) {
			n := uncommitted(t, s.brokers, s.group, s.topic)
			return n == 0, strconv.FormatInt(n, 10) + " uncommitted"
		})
	}

	first := testenv.Events(1000, pipeline, 21)
	produce(t, w, twiceShuffled(first, 1))
	waitCount(t, s.conn, time.Minute, uint64(len(first)), q)
	allCommitted("offsets committed by the first ingester alone")

	// The first ingester fetches a batch it cannot store.
	p.SetDown(true)
	held := testenv.Events(2000, pipeline+"-held", 22)
	produce(t, w, twiceShuffled(held, 2))
	failed := metricValue(t, regA, "handoff_ingest_errors_total", "stage", "insert")
	testenv.Eventually(t, time.Minute, "the first ingester's inserts failing", func() (bool, string) {
		v := metricValue(t, regA, "handoff_ingest_errors_total", "stage", "insert")
		return v >= failed+2, fmt.Sprintf("%v failed inserts", v)
	})
	committedA := metricValue(t, regA, "handoff_ingest_committed_total")

	// The second joins: the group rebalances while the first holds the
	// batch. The second reads its partitions from the committed offsets
	// and stores their part of the held events.
	_, regB, stopB := start(t, s.config(), consumer.Options{})
	testenv.Eventually(t, 2*time.Minute, "the second ingester stores and commits its partitions' events", func() (bool, string) {
		n := count(t, s.conn, q)
		c := metricValue(t, regB, "handoff_ingest_committed_total")
		return n > uint64(len(first)) && c > 0, fmt.Sprintf("%d stored, %v committed by the second", n, c)
	})
	if n := count(t, s.conn, q); n >= uint64(len(first)+len(held)) {
		t.Fatalf("%d events stored while the first ingester's ClickHouse is cut, want fewer than %d (its partitions' are held)", n, len(first)+len(held))
	}
	if c := metricValue(t, regA, "handoff_ingest_committed_total"); c != committedA {
		t.Fatalf("the first ingester committed %v messages more while its batch was unstored", c-committedA)
	}
	if n := uncommitted(t, s.brokers, s.group, s.topic); n == 0 {
		t.Fatal("every offset committed while the first ingester's partitions hold unstored events")
	}

	// Back: the held batch is stored, everything committed.
	p.SetDown(false)
	last := testenv.Events(1000, pipeline+"-last", 23)
	produce(t, w, twiceShuffled(last, 3))
	total := uint64(len(first) + len(held) + len(last))
	waitCount(t, s.conn, 2*time.Minute, total, q)
	allCommitted("all offsets committed after the first ingester's ClickHouse is back")
	// Each counts only its own partitions: the first does not go on
	// reporting what it knew of the partitions taken away.
	testenv.Eventually(t, time.Minute, "both ingesters' lag 0 once everything is committed", func() (bool, string) {
		a, b := metricValue(t, regA, "handoff_ingest_consumer_lag"), metricValue(t, regB, "handoff_ingest_consumer_lag")
		return a == 0 && b == 0, fmt.Sprintf("first %v, second %v", a, b)
	})
	if err := stopA(); err != nil {
		t.Fatalf("graceful stop of the first ingester: %v", err)
	}
	if err := stopB(); err != nil {
		t.Fatalf("graceful stop of the second ingester: %v", err)
	}
	if n := uncommitted(t, s.brokers, s.group, s.topic); n != 0 {
		t.Fatalf("after both stopped: %d messages uncommitted, want 0", n)
	}
	if n := count(t, s.conn, qDistinct); n != total {
		t.Fatalf("distinct event ids = %d, want %d", n, total)
	}
	if n := count(t, s.conn, q); n != total {
		t.Fatalf("count FINAL = %d, want %d", n, total)
	}
}
