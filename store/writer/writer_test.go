package writer_test

import (
	"context"
	"fmt"
	"os"
	"reflect"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"

	"github.com/handoff-dev/handoff/internal/testenv"
	"github.com/handoff-dev/handoff/model"
	"github.com/handoff-dev/handoff/store/schema"
	"github.com/handoff-dev/handoff/store/storetest"
	"github.com/handoff-dev/handoff/store/writer"
)

// TestInsertEventsRoundTrip stores events over more than one block, with
// none, one and several attrs (the arrays are appended row by row), and
// reads every column back.
func TestInsertEventsRoundTrip(t *testing.T) {
	d := storetest.NewDB(t, "writer")
	conn, db, sink := d.Conn, d.Name, d.Sink
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	n := writer.BlockRows + 10
	want := map[string]model.Event{}
	var b schema.EventBatch
	for i := range n {
		e := model.Event{Spec: model.SpecV1, ID: fmt.Sprintf("e%06d", i), Type: model.JobSucceeded,
			Time: time.Date(2026, 10, 1, 0, 0, 0, i%1000*int(time.Millisecond), time.UTC), Pipeline: fmt.Sprintf("p%d", i%7),
			BusinessDate: model.MustParseDate("2026-09-30"), BatchID: "20260930", System: model.Producer,
			Rows: int64(i), HasRows: i%2 == 0}
		switch i % 3 {
		case 1:
			e.Attrs = map[string]string{"k": fmt.Sprint(i)}
		case 2:
			e.Attrs = map[string]string{"a": "1", "b": "", "c": fmt.Sprint(i)}
		}
		want[e.ID] = e
		b.Add(&e, schema.Source{Topic: "t", Partition: 1, Offset: int64(i)}, 1)
	}
	if err := sink.InsertEvents(ctx, &b); err != nil {
		t.Fatal(err)
	}
	rows, err := conn.Query(ctx, "SELECT "+schema.EventReadColumns+" FROM "+db+".events")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var s schema.EventScanner
	got := 0
	for rows.Next() {
		var e model.Event
		if err := s.Scan(rows, &e); err != nil {
			t.Fatal(err)
		}
		got++
		if w := want[e.ID]; !reflect.DeepEqual(e, w) {
			t.Fatalf("event %s read back as\n%+v\nwant\n%+v", e.ID, e, w)
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if got != n {
		t.Fatalf("%d events read back, want %d", got, n)
	}
}

// BenchmarkInsertEvents measures an INSERT of 100,000 events (the size the
// ingester sends when ClickHouse is the slower side) by rows per block:
// this process's CPU per event (what the driver costs the ingester), and
// ClickHouse's, from system.query_log.
//
//	go test ./store/writer -run '^$' -bench InsertEvents -benchtime 5x
func BenchmarkInsertEvents(b *testing.B) {
	d := storetest.NewDB(b, "writer_bench")
	conn, db := d.Conn, d.Name
	ctx := context.Background()
	var batch schema.EventBatch
	const n = 100_000
	for i := range n {
		e := model.Event{Spec: model.SpecV1, ID: fmt.Sprintf("evt-%08d-%08d", i, i*7), Type: model.JobSucceeded,
			Time: time.Date(2026, 10, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(i) * time.Second), Pipeline: fmt.Sprintf("pipeline_%03d", i%300),
			BusinessDate: model.MustParseDate(fmt.Sprintf("2026-%02d-%02d", 1+i%9, 1+i%28)), BatchID: fmt.Sprintf("batch-%05d", i/12), System: model.Producer,
			Component: "loader", Object: fmt.Sprintf("s3://bucket/p/%d/part-%05d.parquet", i%300, i), Rows: int64(i), HasRows: true}
		if i%3 == 0 {
			e.Attrs = map[string]string{"region": "eu-west-1", "run": fmt.Sprint(i)}
		}
		batch.Add(&e, schema.Source{Topic: "handoff.events", Partition: int32(i % 6), Offset: int64(i)}, 1)
	}
	for _, rows := range blockSizes() {
		b.Run(fmt.Sprintf("block=%d", rows), func(b *testing.B) {
			sink, err := writer.New(conn, db)
			if err != nil {
				b.Fatal(err)
			}
			writer.SetBlockRows(sink, rows)
			qid := testenv.Name("writer_bench")
			qctx := clickhouse.Context(ctx, clickhouse.WithSettings(clickhouse.Settings{"log_queries": 1}), clickhouse.WithQueryID(qid))
			cpu0 := cpuTime()
			b.ResetTimer()
			for range b.N {
				if err := sink.InsertEvents(qctx, &batch); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			b.ReportMetric(float64((cpuTime()-cpu0).Nanoseconds())/float64(b.N*n), "cpu-ns/event")
			if err := conn.Exec(ctx, "SYSTEM FLUSH LOGS"); err != nil {
				b.Fatal(err)
			}
			var user, sys uint64
			if err := conn.QueryRow(ctx, `SELECT sum(arraySum(arrayFilter((v, x) -> x = 'UserTimeMicroseconds', ProfileEvents.Values, ProfileEvents.Names))),
				sum(arraySum(arrayFilter((v, x) -> x = 'SystemTimeMicroseconds', ProfileEvents.Values, ProfileEvents.Names)))
				FROM system.query_log WHERE type = 2 AND query_id = ?`, qid).Scan(&user, &sys); err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64(user)*1000/float64(b.N*n), "ch-user-ns/event")
			b.ReportMetric(float64(sys)*1000/float64(b.N*n), "ch-sys-ns/event")
		})
	}
}

// cpuTime is the process's user+system CPU time: on a shared machine the
// wall time says more about the neighbours than the code.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// blockSizes are the rows per block BenchmarkInsertEvents compares:
// HANDOFF_BENCH_BLOCKS (comma-separated) or 4096, BlockRows and 65536.
func blockSizes() []int {
	var out []int
	for _, f := range strings.Split(os.Getenv("HANDOFF_BENCH_BLOCKS"), ",") {
		if n, err := strconv.Atoi(strings.TrimSpace(f)); err == nil && n > 0 {
			out = append(out, n)
		}
	}
	if len(out) == 0 {
		out = []int{4096, writer.BlockRows, 65536}
	}
	return out
}
