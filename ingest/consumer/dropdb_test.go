package consumer_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/handoff-dev/handoff/ingest/consumer"
	"github.com/handoff-dev/handoff/internal/testenv"
)

// TestDatabaseDropped: the database is dropped while the ingester runs.
// The ingester recreates the schema (instead of retrying an INSERT into a
// missing table for ever) and every event and dead letter sent afterwards
// is stored and committed.
func TestDatabaseDropped(t *testing.T) {
	s := newSetup(t, "dropdb")
	const pipeline = "pipe.dropdb"
	_, _, stop := start(t, s.config(), consumer.Options{})
	w := writer(t, s.brokers, s.topic)
	events := "SELECT count() FROM " + s.db + ".events FINAL"

	before := testenv.Events(500, pipeline, 1)
	produce(t, w, twiceShuffled(before, 1))
	waitCount(t, s.conn, 2*time.Minute, uint64(len(before)), events)

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := s.conn.Exec(ctx, "DROP DATABASE "+s.db); err != nil {
		t.Fatal(err)
	}
	after := testenv.Events(1500, pipeline+"-after", 2)
	bad, _ := malformed(pipeline)
	produce(t, w, append(twiceShuffled(after, 2), bad...))

	waitCount(t, s.conn, time.Minute, uint64(len(after)), events)
	waitCount(t, s.conn, time.Minute, uint64(len(bad)), "SELECT count() FROM "+s.db+".dead_letters FINAL")
	testenv.Eventually(t, time.Minute, "every offset committed", func() (bool, string) {
		n := uncommitted(t, s.brokers, s.group, s.topic)
		return n == 0, strconv.FormatInt(n, 10) + " uncommitted"
	})
	if err := stop(); err != nil {
		t.Fatalf("graceful stop: %v", err)
	}
}
