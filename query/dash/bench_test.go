package dash

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/handoff-dev/handoff/model"
	"github.com/handoff-dev/handoff/store/schema"
	"github.com/handoff-dev/handoff/store/storetest"
	"github.com/handoff-dev/handoff/store/writer"
)

// BenchmarkQueries: the dashboard queries on a year of history for 1,000
// daily pipelines (365,000 batches, 2,555,000 events, one stored diagnosis
// per batch with 1.5 KB of JSON), stored through ingest's writer. docs/dashboards.md
// has the figures:
//
//	go test -run '^$' -bench Queries -benchtime 15x ./query/dash/
func BenchmarkQueries(b *testing.B) {
	d := storetest.NewDB(b, "dash_bench")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	if err := loadBenchHistory(ctx, d.Sink); err != nil {
		b.Fatal(err)
	}
	r, err := NewRunner(d.Conn, d.Name)
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

// loadBenchHistory stores the benchmark's year through ingest's rows and
// sink (only ingest writes to ClickHouse): 1,000 pipelines p0..p999, a
// daily batch each from 2025-10-01, 7 boundary events a batch a minute
// apart from midnight UTC of its business date, and a delivered diagnosis
// per batch.
func loadBenchHistory(ctx context.Context, s *writer.Sink) error {
	types := []model.EventType{model.JobSucceeded, model.ArtifactFinalized, model.SignalPublished, model.ArtifactTransferred,
		model.SignalTransferred, model.BatchIdentified, model.ConsumeSucceeded}
	first := model.MustParseDate("2025-10-01")
	json := strings.Repeat("xxxxxxxxxxxxxxx", 100)
	var (
		events schema.EventBatch
		diags  schema.DiagnosisRows
		n      int64
	)
	flush := func() error {
		if err := s.InsertEvents(ctx, &events); err != nil {
			return err
		}
		if err := s.InsertColumns(ctx, schema.Diagnoses, schema.DiagnosisColumns, diags.Columns()); err != nil {
			return err
		}
		events, diags = schema.EventBatch{}, schema.DiagnosisRows{}
		return nil
	}
	for p := 0; p < 1000; p++ {
		pipeline := "p" + strconv.Itoa(p)
		for d := 0; d < 365; d++ {
			day := first.AddDays(d)
			key := model.BatchKey{Pipeline: pipeline, BusinessDate: day, BatchID: day.Compact()}
			midnight := day.In(time.UTC)
			for i, typ := range types {
				n++
				e := model.Event{Spec: model.SpecV1, ID: strconv.FormatInt(n, 10), Type: typ, Time: midnight.Add(time.Duration(i) * time.Minute),
					Pipeline: pipeline, BusinessDate: day, BatchID: key.BatchID, System: model.Producer}
				events.Add(&e, schema.Source{Offset: n}, 1)
			}
			diags.Add(schema.DiagnosisRow{Key: key, AsOfMS: 1, Status: "delivered", Verdict: "delivered", Diagnosis: json},
				schema.Source{Offset: n}, 1)
		}
		if p%20 == 19 {
			if err := flush(); err != nil {
				return err
			}
		}
	}
	return nil
}
