package results

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/handoff-dev/handoff/internal/testenv"
	"github.com/handoff-dev/handoff/store/chconn"
)

// TestClickHouseDown: while ClickHouse is unreachable the consumer retries
// the INSERT (counted as errors), stores nothing more and commits nothing
// of what it holds; once ClickHouse is back everything arrives once and is
// committed, with no restart.
func TestClickHouseDown(t *testing.T) {
	e := newEnv(t, "results_chdown")
	p := testenv.NewProxy(t, testenv.ClickHouseAddr(t))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conn, err := chconn.Open(ctx, chconn.Config{Addr: p.Addr(), DialTimeout: time.Second, ReadTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()

	recs := load(t, "pipe.chdown", 600).diagnoses
	half := len(recs) / 2
	cfg := e.cfg
	reg, stop := e.runOn(t, conn, cfg, nil)
	insertErrors := func() float64 {
		return value(t, reg, "handoff_ingest_results_errors_total", "stage", "insert")
	}

	e.publish(t, cfg.DiagnosesTopic, recs[:half]...)
	e.waitCount(t, uint64(half), "SELECT count() FROM {db}.diagnoses_v2 FINAL")
	testenv.Eventually(t, time.Minute, "first half committed", func() (bool, string) {
		n := e.uncommitted(t)
		return n == 0, fmt.Sprintf("%d uncommitted", n)
	})

	p.SetDown(true)
	e.publish(t, cfg.DiagnosesTopic, recs[half:]...)
	testenv.Eventually(t, 2*time.Minute, "INSERT retried while ClickHouse is down", func() (bool, string) {
		n := insertErrors()
		return n >= 2, fmt.Sprintf("%v insert errors", n)
	})
	if n := e.count(t, "SELECT count() FROM {db}.diagnoses_v2"); n != uint64(half) {
		t.Errorf("%d diagnoses stored while ClickHouse was cut off, want still %d", n, half)
	}
	if n := e.uncommitted(t); n != int64(len(recs)-half) {
		t.Errorf("%d records uncommitted while ClickHouse is down, want the %d held", n, len(recs)-half)
	}
	if lag := value(t, reg, "handoff_ingest_results_consumer_lag", "topic", cfg.DiagnosesTopic); lag <= 0 {
		t.Errorf("lag %v while ClickHouse is down with records held, want > 0", lag)
	}

	p.SetDown(false)
	e.waitCount(t, uint64(len(recs)), "SELECT count() FROM {db}.diagnoses_v2 FINAL")
	testenv.Eventually(t, time.Minute, "everything committed after the outage", func() (bool, string) {
		n := e.uncommitted(t)
		return n == 0, fmt.Sprintf("%d uncommitted", n)
	})
	if err := stop(); err != nil {
		t.Fatalf("graceful stop after the outage: %v", err)
	}
	if n := e.count(t, "SELECT uniqExact(batch, as_of_ms) FROM {db}.diagnoses_v2"); n != uint64(len(recs)) {
		t.Errorf("distinct diagnoses = %d, want %d", n, len(recs))
	}
}
