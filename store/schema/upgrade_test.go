package schema_test

import (
	"context"
	"testing"
	"time"

	"github.com/handoff-dev/handoff/internal/testenv"
	"github.com/handoff-dev/handoff/store/schema"
)

// TestEnsureUpgrade: a database made by the first schema (findings and
// diagnoses without Kafka position and lifecycle) gets the revised
// findings_v2 and diagnoses_v2 beside them, and the old tables are left as
// they were (no data is dropped by an upgrade).
func TestEnsureUpgrade(t *testing.T) {
	conn := testenv.ClickHouse(t)
	db := testenv.Database(t, conn, "schema_upgrade")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, q := range []string{
		"CREATE DATABASE " + db,
		"CREATE TABLE " + db + ".findings (found_ms Int64, pipeline String, business_date Date, batch_id String, batch String, kind String, " +
			"status String, first_missing String, detail String, diagnosis String) ENGINE = MergeTree() PARTITION BY toYYYYMM(business_date) " +
			"ORDER BY (pipeline, business_date, batch_id, found_ms)",
	} {
		if err := conn.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	b, err := conn.PrepareBatch(ctx, "INSERT INTO "+db+".findings (found_ms, pipeline, business_date, batch_id, batch, kind)")
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Append(int64(1), "p", time.Date(2026, 9, 30, 0, 0, 0, 0, time.UTC), "b", "p/2026-09-30/b", "late"); err != nil {
		t.Fatal(err)
	}
	if err := b.Send(); err != nil {
		t.Fatal(err)
	}
	if err := schema.Ensure(ctx, conn, db); err != nil {
		t.Fatal(err)
	}
	for table, want := range map[string][]string{
		schema.Findings:  {"fingerprint", "state", "seq", "raised_ms", "resolved_ms", "labels.key", "evidence_as_of_ms", "kafka_offset"},
		schema.Diagnoses: {"as_of_ms", "status", "diagnosis", "ingested_ms", "kafka_topic", "kafka_partition", "kafka_offset"},
	} {
		for _, col := range want {
			var n uint64
			if err := conn.QueryRow(ctx, "SELECT count() FROM system.columns WHERE database = ? AND table = ? AND name = ?", db, table, col).Scan(&n); err != nil {
				t.Fatal(err)
			}
			if n != 1 {
				t.Errorf("%s.%s has no column %s", db, table, col)
			}
		}
	}
	var n uint64
	if err := conn.QueryRow(ctx, "SELECT count() FROM "+db+".findings").Scan(&n); err != nil || n != 1 {
		t.Errorf("old findings table: %d rows, %v; want its 1 row kept", n, err)
	}
}
