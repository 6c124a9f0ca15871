package batches_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/handoff-dev/handoff/analyzer/batches"
	"github.com/handoff-dev/handoff/analyzer/replay"
	"github.com/handoff-dev/handoff/model"
	"github.com/handoff-dev/handoff/model/contract"
)

// contracts gives every pipeline a daily contract deriving {yyyymmdd}.
type contracts struct{ schedule contract.Schedule }

func (c contracts) For(p string) *contract.Contract {
	k := contract.Default(p)
	k.Source = "test.yaml"
	k.Schedule = c.schedule
	k.BatchID = contract.MustTemplate("{yyyymmdd}")
	return k
}

// delivered returns the seven boundary events of a delivered batch.
func delivered(pipeline, date, batchID string) []model.Event {
	d := model.MustParseDate(date)
	t0 := d.In(time.UTC).Add(20 * time.Hour)
	var out []model.Event
	for i, typ := range []model.EventType{model.JobSucceeded, model.ArtifactFinalized, model.SignalPublished,
		model.ArtifactTransferred, model.SignalTransferred, model.BatchIdentified, model.ConsumeSucceeded} {
		e := model.Event{Spec: model.SpecV1, ID: pipeline + batchID + string(typ), Type: typ, Time: t0.Add(time.Duration(i) * time.Minute),
			Pipeline: pipeline, BusinessDate: d, BatchID: batchID, System: model.Producer}
		if typ.NeedsObject() {
			e.Object = "f"
		}
		if typ.NeedsRows() {
			e.Rows, e.HasRows = 10, true
		}
		out = append(out, e)
	}
	return out
}

func add(s *batches.Set, evs ...[]model.Event) {
	for _, es := range evs {
		for i := range es {
			s.Add(&es[i])
		}
	}
}

func kinds(d replay.Diagnosis) []string {
	var out []string
	for _, a := range d.Anomalies {
		out = append(out, string(a.Kind))
	}
	return out
}

func hasKind(d replay.Diagnosis, k replay.AnomalyKind) bool {
	for _, a := range d.Anomalies {
		if a.Kind == k {
			return true
		}
	}
	return false
}

func TestContinuity(t *testing.T) {
	asOf := time.Date(2026, 10, 10, 0, 0, 0, 0, time.UTC)
	tests := []struct {
		name     string
		schedule contract.Schedule
		events   [][]model.Event
		batch    string
		wantGap  bool
	}{
		{"first known batch is not checked", contract.Daily,
			[][]model.Event{delivered("p", "2026-09-30", "20260930")}, "p/2026-09-30/20260930", false},
		{"previous delivered", contract.Daily,
			[][]model.Event{delivered("p", "2026-09-29", "20260929"), delivered("p", "2026-09-30", "20260930")}, "p/2026-09-30/20260930", false},
		{"hole in the calendar", contract.Daily,
			[][]model.Event{delivered("p", "2026-09-28", "20260928"), delivered("p", "2026-09-30", "20260930")}, "p/2026-09-30/20260930", true},
		{"previous not delivered", contract.Daily,
			[][]model.Event{delivered("p", "2026-09-29", "20260929")[:3], delivered("p", "2026-09-30", "20260930")}, "p/2026-09-30/20260930", true},
		{"declared re-run counts", contract.Daily,
			[][]model.Event{delivered("p", "2026-09-29", "20260929-r2"), delivered("p", "2026-09-30", "20260930")}, "p/2026-09-30/20260930", false},
		{"failed first attempt, delivered re-run counts", contract.Daily,
			[][]model.Event{delivered("p", "2026-09-29", "20260929")[:1], delivered("p", "2026-09-29", "20260929-r2"), delivered("p", "2026-09-30", "20260930")}, "p/2026-09-30/20260930", false},
		{"undeclared id does not count", contract.Daily,
			[][]model.Event{delivered("p", "2026-09-29", "20260929-rerun"), delivered("p", "2026-09-30", "20260930")}, "p/2026-09-30/20260930", true},
		{"no schedule, no check", contract.NoSchedule,
			[][]model.Event{delivered("p", "2026-09-28", "20260928"), delivered("p", "2026-09-30", "20260930")}, "p/2026-09-30/20260930", false},
		{"weekdays skip the weekend", contract.Weekdays, // 2026-10-05 is a Monday
			[][]model.Event{delivered("p", "2026-10-02", "20261002"), delivered("p", "2026-10-05", "20261005")}, "p/2026-10-05/20261005", false},
		{"other pipelines do not count", contract.Daily,
			[][]model.Event{delivered("q", "2026-09-29", "20260929"), delivered("p", "2026-09-28", "20260928"), delivered("p", "2026-09-30", "20260930")}, "p/2026-09-30/20260930", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := batches.New(contracts{tt.schedule}, asOf)
			add(s, tt.events...)
			key, err := model.ParseBatchKey(tt.batch)
			if err != nil {
				t.Fatal(err)
			}
			var found bool
			for _, d := range s.Diagnose(nil) {
				if d.Batch != tt.batch {
					continue
				}
				found = true
				if got := hasKind(d, replay.ContinuityGap); got != tt.wantGap {
					t.Errorf("continuity_gap = %v, want %v (anomalies %v)", got, tt.wantGap, kinds(d))
				}
				if d.Status != replay.StatusDelivered {
					t.Errorf("status %s: a continuity gap must not change a delivered batch's status", d.Status)
				}
			}
			if !found {
				t.Fatalf("no diagnosis for %s", tt.batch)
			}
			one, ok := s.DiagnoseOne(key)
			if !ok || hasKind(one, replay.ContinuityGap) != tt.wantGap {
				t.Errorf("DiagnoseOne disagrees with Diagnose (ok=%v, anomalies %v)", ok, kinds(one))
			}
		})
	}
}

func TestDiagnoseKeepsNeighboursForContinuity(t *testing.T) {
	s := batches.New(contracts{contract.Daily}, time.Date(2026, 10, 10, 0, 0, 0, 0, time.UTC))
	add(s, delivered("p", "2026-09-28", "20260928"), delivered("p", "2026-09-30", "20260930"))
	ds := s.Diagnose(func(k model.BatchKey) bool { return k.BatchID == "20260930" })
	if len(ds) != 1 || ds[0].BatchID != "20260930" {
		t.Fatalf("keep selected %d diagnoses, want the one batch", len(ds))
	}
	if !hasKind(ds[0], replay.ContinuityGap) {
		t.Error("a batch selected by keep lost its continuity check")
	}
	if s.Len() != 2 || s.Events() != 14 {
		t.Errorf("Len %d Events %d, want 2 and 14", s.Len(), s.Events())
	}
}

func TestHeartbeatsAsOf(t *testing.T) {
	asOf := time.Date(2026, 10, 1, 12, 0, 0, 0, time.UTC)
	s := batches.New(contracts{}, asOf)
	add(s, delivered("p", "2026-09-30", "20260930"))
	hb := func(id string, at time.Time) model.Event {
		return model.Event{Spec: model.SpecV1, ID: id, Type: model.ProcessHeartbeat, Time: at, Pipeline: "p", System: model.Consumer, Component: "c1"}
	}
	add(s, []model.Event{hb("early", asOf.Add(-time.Hour)), hb("late", asOf.Add(time.Hour)), hb("other", asOf.Add(-2*time.Hour))})
	d := s.Diagnose(nil)[0]
	var facts []string
	for _, h := range d.Alive {
		facts = append(facts, h.EventID)
	}
	if len(facts) != 1 || facts[0] != "early" {
		t.Fatalf("heartbeat facts %v, want only the latest one before as-of (early)", facts)
	}
}

// TestEachSummaryMatchesEachDiagnosis: a list's summaries of a set's
// batches (EachSummary) have the status, verdict, first missing boundary,
// as-of and anomalies of the full diagnoses (EachDiagnosis), on a set
// with what the context changes: a previous batch missing (a gap), one
// cut short, a declared re-run, and absent expected batches.
func TestEachSummaryMatchesEachDiagnosis(t *testing.T) {
	asOf := time.Date(2026, 10, 10, 0, 0, 0, 0, time.UTC)
	cs := contracts{schedule: contract.Daily}
	s := batches.New(cs, asOf)
	short := delivered("p", "2026-10-03", "20261003")[:3]
	add(s, delivered("p", "2026-10-01", "20261001"), delivered("p", "2026-10-02", "20261002"), short,
		delivered("p", "2026-10-05", "20261005"), delivered("p", "2026-10-06", "20261006-r1"), delivered("q", "2026-10-04", "20261004"))
	keys := s.Keys()
	var full, sum []replay.Diagnosis
	s.EachDiagnosis(keys, func(d *replay.Diagnosis) { full = append(full, *d) })
	s.EachSummary(keys, func(d *replay.Diagnosis) { sum = append(sum, *d) })
	if len(full) != len(sum) || len(full) < 8 {
		t.Fatalf("%d diagnoses and %d summaries of %d keys", len(full), len(sum), len(keys))
	}
	gaps := 0
	for i := range full {
		f, g := full[i], sum[i]
		if f.Batch != g.Batch || f.Status != g.Status || f.Verdict != g.Verdict || f.FirstMissing != g.FirstMissing || !f.AsOf.Equal(g.AsOf) ||
			f.Events != g.Events || fmt.Sprint(kinds(f)) != fmt.Sprint(kinds(g)) {
			t.Errorf("%s: summary %s, %s, %q, %v, %v; diagnosis %s, %s, %q, %v, %v", f.Batch, g.Status, g.Verdict, g.FirstMissing, g.AsOf, kinds(g),
				f.Status, f.Verdict, f.FirstMissing, f.AsOf, kinds(f))
		}
		if hasKind(f, replay.ContinuityGap) {
			gaps++
		}
	}
	if gaps == 0 {
		t.Fatalf("no diagnosis has a continuity gap: the set should have the previous batch matter")
	}
}

// TestListFromMatchesKeysFrom: a list asked of Listed batches (ListFrom,
// SpanOf, EachSummaryOf) gets the keys, spans and summaries it gets
// asking by key (KeysFrom, Span, EachSummary), in a brief set and a
// whole one, with a previous batch missing, one cut short, a re-run,
// absent expected batches, a pipeline that starts in the range (no
// previous batch to check) and a range that leaves dates out.
func TestListFromMatchesKeysFrom(t *testing.T) {
	asOf := time.Date(2026, 10, 10, 0, 0, 0, 0, time.UTC)
	cs := contracts{schedule: contract.Daily}
	from := model.MustParseDate("2026-10-02")
	for _, brief := range []bool{false, true} {
		s := batches.New(cs, asOf)
		if brief {
			s.Brief(16, 2)
		}
		short := delivered("p", "2026-10-03", "20261003")[:3]
		add(s, delivered("q", "2026-10-04", "20261004"), delivered("p", "2026-10-01", "20261001"), delivered("p", "2026-10-02", "20261002"), short,
			delivered("p", "2026-10-05", "20261005"), delivered("p", "2026-10-06", "20261006-r1"), delivered("r", "2026-10-05", "20261005"))
		keys := s.KeysFrom(from)
		listed := s.ListFrom(from)
		if len(keys) != len(listed) || len(keys) < 6 {
			t.Fatalf("brief %v: %d keys, %d listed", brief, len(keys), len(listed))
		}
		for i, k := range keys {
			if listed[i].Key != k {
				t.Fatalf("brief %v: listed[%d] is %s, key %s", brief, i, listed[i].Key, k)
			}
			n, first, last, ok := s.Span(k)
			ln, lfirst, llast, lok := s.SpanOf(listed[i])
			if n != ln || !first.Equal(lfirst) || !last.Equal(llast) || ok != lok {
				t.Errorf("brief %v: %s: SpanOf %d %v %v %v, Span %d %v %v %v", brief, k, ln, lfirst, llast, lok, n, first, last, ok)
			}
		}
		var byKey, byListed []replay.Diagnosis
		s.EachSummary(keys, func(d *replay.Diagnosis) { byKey = append(byKey, *d) })
		s.EachSummaryOf(listed, func(d *replay.Diagnosis) { byListed = append(byListed, *d) })
		if len(byKey) != len(byListed) {
			t.Fatalf("brief %v: %d summaries by key, %d of listed", brief, len(byKey), len(byListed))
		}
		gaps := 0
		for i := range byKey {
			a, b := byKey[i], byListed[i]
			if a.Batch != b.Batch || a.Status != b.Status || a.Verdict != b.Verdict || a.FirstMissing != b.FirstMissing || fmt.Sprint(kinds(a)) != fmt.Sprint(kinds(b)) {
				t.Errorf("brief %v: %s: of listed %s %s %q %v, by key %s %s %q %v", brief, a.Batch, b.Status, b.Verdict, b.FirstMissing, kinds(b), a.Status, a.Verdict, a.FirstMissing, kinds(a))
			}
			if a.Events > 0 && hasKind(a, replay.ContinuityGap) {
				gaps++
				if a.Pipeline == "r" {
					t.Errorf("brief %v: %s, the first batch of its pipeline, has a continuity gap", brief, a.Batch)
				}
			}
		}
		if gaps == 0 {
			t.Fatalf("brief %v: no summary of a batch with events has a continuity gap: the previous batch should matter", brief)
		}
	}
}

// TestAddInterleavedBatches: a batch whose events come apart, with other
// batches' between them (of its pipeline and of others, as an unordered
// read gives them), is one batch holding all of its events, in a brief
// set and a whole one.
func TestAddInterleavedBatches(t *testing.T) {
	asOf := time.Date(2026, 10, 10, 0, 0, 0, 0, time.UTC)
	for _, brief := range []bool{false, true} {
		s := batches.New(contracts{}, asOf)
		if brief {
			s.Brief(4, 2)
		}
		a, b, q := delivered("p", "2026-10-01", "20261001"), delivered("p", "2026-10-02", "20261002"), delivered("q", "2026-10-01", "20261001")
		add(s, a[:3], q[:2], a[3:5], b[:4], q[2:], a[5:], b[4:])
		if s.Len() != 3 {
			t.Fatalf("brief %v: %d batches, want 3", brief, s.Len())
		}
		for _, es := range [][]model.Event{a, b, q} {
			k := es[0].Key()
			if n, _, _, ok := s.Span(k); !ok || n != len(es) {
				t.Errorf("brief %v: %s holds %d events, want %d", brief, k, n, len(es))
			}
		}
		if got := len(s.KeysFrom(model.Date{})); got != 3 {
			t.Errorf("brief %v: %d keys listed, want 3", brief, got)
		}
	}
}
