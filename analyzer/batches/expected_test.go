package batches_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/handoff-dev/handoff/analyzer/batches"
	"github.com/handoff-dev/handoff/model"
)

// TestAbsentExpectedBatches: a Set reports the batches its pipelines'
// calendars expect, from each pipeline's first date, that sent no event,
// whose first deadline has passed and that no re-run stands in for; not
// the holidays, not those not due yet, not those before the history. A
// range read (Covers) reports its own dates only.
func TestAbsentExpectedBatches(t *testing.T) {
	cs := byName{
		"w.weekdays": mustContract(t, "pipeline: w.weekdays\nschedule: weekdays\nholidays: [2026-09-16]\nbatch_id: \"{yyyymmdd}\"\n"),
	}
	ev := func(id, date, batch string) model.Event {
		d := model.MustParseDate(date)
		return model.Event{Spec: model.SpecV1, ID: id, Type: model.JobSucceeded, Time: d.In(time.UTC).Add(20 * time.Hour),
			Pipeline: "w.weekdays", BusinessDate: d, BatchID: batch, System: model.Producer}
	}
	events := []model.Event{
		ev("a", "2026-09-14", "20260914"), // Monday, the first date
		// 09-15 sent nothing: absent
		// 09-16 is a holiday: not expected
		ev("b", "2026-09-17", "20260917-r1"), // 09-17 re-run under another id: stands in
		ev("c", "2026-09-18", "20260918"),
		// 09-19/20: weekend; 09-21 and 09-22 sent nothing
	}
	asOf := time.Date(2026, 9, 22, 12, 0, 0, 0, time.UTC) // 09-21's default deadline (24 h after its start) has passed, 09-22's not
	tests := []struct {
		name     string
		from, to string
		want     string
	}{
		{"whole history", "", "", "[w.weekdays/2026-09-15/20260915 w.weekdays/2026-09-21/20260921]"},
		{"a range", "2026-09-16", "2026-09-18", "[]"},
		{"a range ending at the gap", "2026-09-14", "2026-09-15", "[w.weekdays/2026-09-15/20260915]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := batches.New(cs, asOf)
			var from, to model.Date
			if tt.from != "" {
				from, to = model.MustParseDate(tt.from), model.MustParseDate(tt.to)
				s.Covers(from, to)
			}
			for i := range events {
				s.Add(&events[i])
			}
			var got []string
			for _, d := range s.Diagnose(func(k model.BatchKey) bool {
				return from.IsZero() || (k.BusinessDate.Compare(from) >= 0 && k.BusinessDate.Compare(to) <= 0)
			}) {
				if d.Events == 0 {
					got = append(got, d.Batch)
					if d.Verdict != model.NotProduced || d.FirstMissing != "produced" || !batches.Overdue(&d) {
						t.Errorf("%s: verdict %s first missing %s overdue %v, want not_produced, produced, overdue", d.Batch, d.Verdict, d.FirstMissing, batches.Overdue(&d))
					}
				}
			}
			if fmt.Sprint(got) != tt.want && !(tt.want == "[]" && got == nil) {
				t.Errorf("absent batches %v, want %s", got, tt.want)
			}
			for _, k := range got {
				bk, _ := model.ParseBatchKey(k)
				if _, ok := s.DiagnoseOne(bk); !ok {
					t.Errorf("%s: listed, and DiagnoseOne does not know it", k)
				}
			}
		})
	}
}
