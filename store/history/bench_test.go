package history_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/handoff-dev/handoff/internal/testenv"
	"github.com/handoff-dev/handoff/model"
	"github.com/handoff-dev/handoff/store/history"
	"github.com/handoff-dev/handoff/store/storetest"
)

// BenchmarkEachBatchEvent measures backfill's read of one unit: the batch
// events of 20 pipelines (50,000 rows, the default unit of a backfill),
// the replay's columns only, from the real server, sorted into key order
// and handed over one by one. Each stored row is read once.
func BenchmarkEachBatchEvent(b *testing.B) {
	d := storetest.NewDB(b, "history_bench")
	conn, db, sink := d.Conn, d.Name, d.Sink
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	b.Cleanup(cancel)
	var pipelines []string
	for p := range 20 {
		name := fmt.Sprintf("pipe.bench-%02d", p)
		pipelines = append(pipelines, name)
		if err := sink.Events(ctx, testenv.Events(2500, name, int64(p+1))); err != nil {
			b.Fatal(err)
		}
	}
	st, err := history.New(conn, db)
	if err != nil {
		b.Fatal(err)
	}
	st.ReplayOnly = true
	from, to := model.Date{Year: 1970, Month: 1, Day: 1}, model.Date{Year: 2100, Month: 1, Day: 1}
	read := func() int {
		n := 0
		if err := st.EachBatchEvent(ctx, pipelines, from, to, func(model.Event) error { n++; return nil }); err != nil {
			b.Fatal(err)
		}
		return n
	}
	want := read()
	if want == 0 {
		b.Fatal("the benchmark's events were not read back")
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if n := read(); n != want {
			b.Fatalf("read %d events, then %d", want, n)
		}
	}
	b.ReportMetric(float64(want)*float64(b.N)/b.Elapsed().Seconds(), "events/s")
}
