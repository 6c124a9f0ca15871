package serve_test

import (
	"context"
	"net/url"
	"testing"

	"github.com/handoff-dev/handoff/analyzer/replay"
	"github.com/handoff-dev/handoff/model"
	"github.com/handoff-dev/handoff/query/serve"
)

// TestAllPipelinesDaySameAnswer: the list of every pipeline for one day,
// read unordered from events_by_date (which the fixture's database has),
// says of each batch on read what its batch endpoint says (one pipeline's
// events, read in order from events: the reader handoff diagnose and
// backfill agree with, judge/live's equivalence test): status, verdict,
// first missing boundary and events. Each is stored twice (a redelivery
// merges have not collapsed yet), and counted once.
func TestAllPipelinesDaySameAnswer(t *testing.T) {
	f := newFixture(t)
	// Every event again, in a part of its own.
	writeEvents(t, context.Background(), f.sink)
	checked := 0
	for d := model.MustParseDate("2026-09-29"); d.Compare(model.MustParseDate("2026-10-02")) <= 0; d = d.AddDays(1) {
		var list serve.BatchList
		f.getJSON(t, "/api/v1/batches?from="+d.String()+"&to="+d.String()+"&size=500", 200, &list)
		for _, b := range list.Batches {
			if b.Source != "on_read" {
				continue
			}
			var one struct {
				Diagnosis replay.Diagnosis `json:"diagnosis"`
			}
			f.getJSON(t, "/api/v1/batches/"+url.PathEscape(b.Pipeline)+"/"+b.BusinessDate+"/"+url.PathEscape(b.BatchID), 200, &one)
			g := one.Diagnosis
			if b.Status != string(g.Status) || b.Verdict != g.Verdict.String() || b.FirstMissing != g.FirstMissing || b.Events != g.Events {
				t.Errorf("%s: the day's list says %s %s missing %q, %d events; its batch endpoint %s %s missing %q, %d events",
					b.Batch, b.Status, b.Verdict, b.FirstMissing, b.Events, g.Status, g.Verdict, g.FirstMissing, g.Events)
			}
			checked++
		}
	}
	if checked < 4 {
		t.Fatalf("checked %d batches diagnosed on read; the fixture has more", checked)
	}
}
