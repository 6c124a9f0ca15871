package serve_test

import (
	"context"
	"testing"
	"time"

	"github.com/handoff-dev/handoff/model"
	"github.com/handoff-dev/handoff/query/serve"
)

// TestNewEventsShowAtOnce checks the caches' rule (docs/serve.md,
// "Caches"): with the first dates cached by an earlier request, events
// that arrive afterwards within the range asked (a new pipeline's first
// batch, the first event of a batch the calendar listed as absent) are on
// the next page at once.
func TestNewEventsShowAtOnce(t *testing.T) {
	f := newFixture(t)
	const path = "/api/v1/batches?from=2026-09-29&to=2026-10-02"
	list := func() map[string]serve.Batch {
		var l serve.BatchList
		f.getJSON(t, path, 200, &l)
		out := make(map[string]serve.Batch, len(l.Batches))
		for _, b := range l.Batches {
			out[b.Batch] = b
		}
		return out
	}
	const (
		absent  = seedPipeline + "/2026-10-01/20261001"
		arrived = "arrived.late.daily/2026-10-02/20261002"
	)
	before := list()
	if b, ok := before[absent]; !ok || !b.Absent {
		t.Fatalf("before: %s is %+v, want listed as absent", absent, b)
	}
	if _, ok := before[arrived]; ok {
		t.Fatalf("before: %s listed", arrived)
	}

	w := f.sink
	at := time.Date(2026, 10, 2, 9, 0, 0, 0, time.UTC)
	ev := func(pipeline, date string) model.Event {
		d := model.MustParseDate(date)
		return model.Event{Spec: model.SpecV1, ID: pipeline + "-" + d.Compact() + "-started", Type: model.JobStarted, Time: at,
			Pipeline: pipeline, BusinessDate: d, BatchID: d.Compact(), System: model.Producer, Component: "etl-1"}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := w.Events(ctx, []model.Event{ev(seedPipeline, "2026-10-01"), ev("arrived.late.daily", "2026-10-02")}); err != nil {
		t.Fatal(err)
	}

	after := list()
	if b, ok := after[absent]; !ok || b.Absent || b.Events != 1 {
		t.Errorf("after: %s is %+v, want listed with its one event", absent, b)
	}
	if b, ok := after[arrived]; !ok || b.Events != 1 || b.Source != "on_read" {
		t.Errorf("after: %s is %+v, want listed with its one event, diagnosed on read", arrived, b)
	}
}
