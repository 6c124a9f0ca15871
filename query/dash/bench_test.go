package dash

import (
	"context"
	"testing"
	"time"

	"github.com/handoff-dev/handoff/ingest/schema"
	"github.com/handoff-dev/handoff/internal/testenv"
)

// BenchmarkQueries: the dashboard queries on a year of history for 1,000
// daily pipelines (365,000 batches, 2,555,000 events, one stored diagnosis
// per batch with 1.5 KB of JSON), generated on the server. docs/dashboards.md
// has the figures:
//
//	go test -run '^$' -bench Queries -benchtime 15x ./query/dash/
func BenchmarkQueries(b *testing.B) {
	conn := testenv.ClickHouse(b)
	db := testenv.Database(b, conn, "dash_bench")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	if err := schema.Ensure(ctx, conn, db); err != nil {
		b.Fatal(err)
	}
	for _, q := range []string{
		// 7 boundary events a batch, a minute apart, from midnight UTC of its business date.
		"INSERT INTO " + db + ".events (" + schema.EventColumns + ") " +
			"SELECT concat('p', toString(intDiv(number, 2555))) AS p, toDate('2025-10-01') + (intDiv(number, 7) % 365) AS bd, " +
			"toString(toYYYYMMDD(bd)), toString(number), 'handoff/v1', " +
			"arrayElement(['job.succeeded','artifact.finalized','signal.published','artifact.transferred','signal.transferred','batch.identified','consume.succeeded'], (number % 7) + 1), " +
			"toInt64(toUnixTimestamp(toDateTime(bd))) * 1000 + (number % 7) * 60000, 'producer', '', '', 0, 0, 0, 0, '', 0, 0, '', [], [], 1, '', 0, toInt64(number) " +
			"FROM numbers(2555000)",
		"INSERT INTO " + db + ".diagnoses_v2 (" + schema.DiagnosisColumns + ") " +
			"SELECT concat('p', toString(intDiv(number, 365))) AS p, toDate('2025-10-01') + (number % 365) AS bd, toString(toYYYYMMDD(bd)), '', 1, " +
			"'delivered', 'delivered', '', arrayStringConcat(arrayMap(x -> 'xxxxxxxxxxxxxxx', range(100))), 1, '', 0, toInt64(number) FROM numbers(365000)",
	} {
		if err := conn.Exec(ctx, q); err != nil {
			b.Fatalf("%s: %v", q, err)
		}
	}
	r, err := NewRunner(conn, db)
	if err != nil {
		b.Fatal(err)
	}
	month := map[string]string{"from": "2026-01-01", "to": "2026-01-31"}
	for _, c := range []struct {
		name   string
		query  string
		params map[string]string
	}{
		{"batch_status/pipeline-month", "batch_status", map[string]string{"from": "2026-01-01", "to": "2026-01-31", "pipeline": "p7"}},
		{"batch_status/all-pipelines-day", "batch_status", map[string]string{"from": "2026-01-01", "to": "2026-01-01", "limit": "10000"}},
		{"boundary_funnel/month", "boundary_funnel", month},
		{"boundary_latency/month", "boundary_latency", month},
		{"breaks_over_time/month", "breaks_over_time", month},
		{"success_not_delivered/month", "success_not_delivered", month},
		{"anomalies_by_kind/month", "anomalies_by_kind", month},
		{"freshness", "freshness", nil},
	} {
		b.Run(c.name, func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				if _, err := r.Run(ctx, c.query, c.params); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
