package detect_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/handoff-dev/handoff/analyzer/detect"
	"github.com/handoff-dev/handoff/model"
)

const fxPipeline = "fx-rates.hourly"

// fxHour returns the events of one delivered hourly batch of fx-rates
// (deploy/contracts/fx-rates.hourly.yaml: Europe/London, produced due
// start + 20m, consumed start + 55m).
func fxHour(t *testing.T, date string, hh int) []model.Event {
	d := model.MustParseDate(date)
	london, err := time.LoadLocation("Europe/London")
	if err != nil {
		t.Fatal(err)
	}
	start := time.Date(d.Year, d.Month, d.Day, hh, 0, 0, 0, london)
	id := fmt.Sprintf("%s%02d", d.Compact(), hh)
	var out []model.Event
	for i, st := range []struct {
		typ    model.EventType
		sys    model.System
		object string
	}{
		{model.JobSucceeded, model.Producer, ""},
		{model.ArtifactFinalized, model.Producer, fmt.Sprintf("fx_rates_%s_%02d00.csv", d.Compact(), hh)},
		{model.SignalPublished, model.Producer, "fx_rates_" + id + ".flag"},
		{model.BatchIdentified, model.Consumer, ""},
		{model.ConsumeSucceeded, model.Consumer, ""},
	} {
		e := model.Event{Spec: model.SpecV1, ID: id + "-" + string(st.typ), Type: st.typ, Time: start.Add(time.Duration(5+i) * time.Minute).UTC(),
			Pipeline: fxPipeline, BusinessDate: d, BatchID: id, System: st.sys, Component: string(st.sys) + "-1", Object: st.object}
		if st.typ.NeedsRows() {
			e.Rows, e.HasRows = 42, true
		}
		out = append(out, e)
	}
	return out
}

func byKind(fs []detect.Finding, kind detect.Kind) []detect.Finding {
	var out []detect.Finding
	for _, f := range fs {
		if f.Kind == kind {
			out = append(out, f)
		}
	}
	return out
}

// TestHourlyBatchThatNeverAppears: every hour of 2026-10-02 of the hourly
// fx-rates pipeline is delivered except 07:00, which sends no event at all.
// The detector raises missing for that batch at its first deadline (07:20
// London, 06:20Z), not before, and nothing for the other 23 hours.
func TestHourlyBatchThatNeverAppears(t *testing.T) {
	var events []model.Event
	for hh := 0; hh < 24; hh++ {
		if hh != 7 {
			events = append(events, fxHour(t, "2026-10-02", hh)...)
		}
	}
	d := mustNew(t, detect.Config{Contracts: loadContracts(t, "contracts/fx-rates.hourly.yaml"), From: model.MustParseDate("2026-10-02")})
	s := newStream(d, events)
	if fs := s.run(at("2026-10-01T22:00:00Z"), at("2026-10-02T06:20:00Z"), 10*time.Minute, time.Second); len(fs) != 0 {
		t.Fatalf("before 06:20Z: %+v", summarize(fs))
	}
	fs := s.step(at("2026-10-02T06:20:00.001Z"), time.Second)
	checkSummaries(t, "at 06:20:00.001Z", fs, []summary{{fxPipeline + "/2026-10-02/2026100207", "missing", "not_produced", detect.Open, 1, time.Millisecond}})
	if f := fs[0]; !f.Deadline.Equal(at("2026-10-02T06:20:00Z")) || f.Severity != "critical" || f.Owner != "treasury-data" || f.Labels["team"] != "treasury" {
		t.Errorf("deadline %s severity %q owner %q labels %v: want 06:20Z and the contract's routing", f.Deadline, f.Severity, f.Owner, f.Labels)
	}
	if fs := s.run(at("2026-10-02T06:30:00Z"), at("2026-10-02T22:50:00Z"), 10*time.Minute, time.Second); len(fs) != 0 {
		t.Fatalf("the delivered hours raised %+v", summarize(fs))
	}
}

// TestHolidayRaisesNothing: fx-rates has no batches on 2026-12-25 and 26.
// With no event at all from 2026-12-24 to the 27th, every hour of the 24th
// is missing and no hour of the holidays is.
func TestHolidayRaisesNothing(t *testing.T) {
	d := mustNew(t, detect.Config{Contracts: loadContracts(t, "contracts/fx-rates.hourly.yaml"), From: model.MustParseDate("2026-12-24")})
	fs := newStream(d, nil).run(at("2026-12-24T00:00:00Z"), at("2026-12-27T00:00:00Z"), 30*time.Minute, time.Second)
	dates := map[string]int{}
	for _, f := range fs {
		if f.Kind != detect.Missing {
			t.Errorf("unexpected finding %+v", summarize([]detect.Finding{f}))
		}
		dates[f.Batch.BusinessDate.String()]++
	}
	if dates["2026-12-24"] != 24 || dates["2026-12-25"] != 0 || dates["2026-12-26"] != 0 || len(dates) != 1 {
		t.Errorf("missing findings by date %v, want 24 on 2026-12-24 and none on the holidays", dates)
	}
}

// TestExpectedDailyBatch: the seed's daily calendar expects 2026-10-01,
// due (produced) business_date + 1d 02:00 Shanghai = 2026-10-01T18:00Z.
// With no event it is missing at 18:00:00.001Z; a re-run of the date under
// another batch id satisfies the calendar, before or after the deadline;
// a late first event resolves missing with its lateness.
func TestExpectedDailyBatch(t *testing.T) {
	key := seedPipeline + "/2026-10-01/20261001"
	ev := func(id, batchID, tm string) model.Event {
		return model.Event{Spec: model.SpecV1, ID: id, Type: model.JobStarted, Time: at(tm), Pipeline: seedPipeline,
			BusinessDate: model.MustParseDate("2026-10-01"), BatchID: batchID, System: model.Producer, Component: "build-runner-3"}
	}
	tests := []struct {
		name  string
		extra []model.Event
		want  []summary // findings of the 2026-10-01 date, in order
	}{
		{"never appears", nil, []summary{{key, "missing", "not_produced", detect.Open, 1, time.Millisecond}}},
		{"first event after the deadline", []model.Event{ev("late-1", "20261001", "2026-10-01T19:00:00Z")}, []summary{
			{key, "missing", "not_produced", detect.Open, 1, time.Millisecond},
			{key, "missing", "not_produced", detect.Resolved, 2, time.Hour},
			{key, "overdue", "produced", detect.Open, 1, time.Hour + 5*time.Minute},
		}},
		{"re-run under another id before the deadline", []model.Event{ev("rerun-1", "20261001-r2", "2026-10-01T17:00:00Z")}, nil},
		{"re-run under another id after the deadline", []model.Event{ev("rerun-1", "20261001-r2", "2026-10-01T19:00:00Z")}, []summary{
			{key, "missing", "not_produced", detect.Open, 1, time.Millisecond},
			{key, "missing", "not_produced", detect.Resolved, 2, time.Hour + 5*time.Minute},
		}},
		{"an undeclared id is not an attempt", []model.Event{ev("rerun-1", "20261001r", "2026-10-01T17:00:00Z")}, []summary{
			{key, "missing", "not_produced", detect.Open, 1, time.Millisecond},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := mustNew(t, detect.Config{Contracts: seedContracts(t), From: model.MustParseDate("2026-09-29")})
			s := newStream(d, append(seedEvents(t), tt.extra...))
			s.run(at("2026-09-29T00:00:00Z"), at("2026-10-01T18:00:00Z"), 30*time.Minute, time.Second)
			s.step(at("2026-10-01T18:00:00.001Z"), 0)
			s.run(at("2026-10-01T19:05:00Z"), at("2026-10-01T19:05:00Z"), time.Minute, 0)
			var got []detect.Finding
			for _, f := range s.findings {
				if f.Batch.String() == key {
					got = append(got, f)
				}
			}
			checkSummaries(t, tt.name, got, tt.want)
		})
	}
}
