package batches_test

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/handoff-dev/handoff/analyzer/batches"
	"github.com/handoff-dev/handoff/analyzer/replay"
	"github.com/handoff-dev/handoff/model"
	"github.com/handoff-dev/handoff/model/contract"
)

// byName gives each pipeline its contract, the default one when missing.
type byName map[string]*contract.Contract

func (b byName) For(p string) *contract.Contract {
	if c := b[p]; c != nil {
		return c
	}
	return contract.Default(p)
}

func mustContract(t *testing.T, src string) *contract.Contract {
	t.Helper()
	c, err := contract.Parse("gen.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// genPipelines returns the contracts of four pipelines: daily, weekdays
// with a holiday, hourly, and one without a contract file.
func genPipelines(t *testing.T) byName {
	return byName{
		"d.daily":    mustContract(t, "pipeline: d.daily\nschedule: daily\nbatch_id: \"{yyyymmdd}\"\nartifact: \"d_{batch_id}.csv\"\nsignal: \"d_{batch_id}.flag\"\n"),
		"w.weekdays": mustContract(t, "pipeline: w.weekdays\nschedule: weekdays\nholidays: [2026-09-16]\nbatch_id: \"{yyyymmdd}\"\n"),
		"h.hourly":   mustContract(t, "pipeline: h.hourly\nschedule: hourly\nbatch_id: \"{yyyymmdd}{hh}\"\nrequired: [produced, finalized, signaled, identified, consumed]\n"),
	}
}

// genOrderedHistory returns events of the pipelines over days dates from
// 2026-09-01: batches cut anywhere on the ladder, missing batches (gaps),
// re-runs under another id, duplicates, anomalies, events after the as-of
// time, and heartbeats.
func genOrderedHistory(r *rand.Rand, cs byName, days int) []model.Event {
	var out []model.Event
	ladder := []model.EventType{model.JobStarted, model.JobSucceeded, model.ArtifactFinalized, model.SignalPublished,
		model.ArtifactTransferred, model.SignalTransferred, model.BatchIdentified, model.ConsumeStarted, model.ConsumeSucceeded}
	for _, p := range []string{"d.daily", "w.weekdays", "h.hourly", "x.nocontract"} {
		for day := range days {
			date := model.MustParseDate("2026-09-01").AddDays(day)
			keys := cs.For(p).Expected(date, date)
			if p == "x.nocontract" {
				keys = []model.BatchKey{{Pipeline: p, BusinessDate: date, BatchID: date.Compact()}}
			}
			for _, k := range keys {
				if r.IntN(8) == 0 {
					continue // never produced: a continuity gap for the next
				}
				if r.IntN(15) == 0 {
					k.BatchID += "-rerun"
				}
				t0 := date.In(time.UTC).Add(time.Duration(12+r.IntN(30)) * time.Hour)
				cut := len(ladder)
				if r.IntN(3) == 0 {
					cut = r.IntN(len(ladder))
				}
				for i, typ := range ladder[:cut] {
					e := model.Event{Spec: model.SpecV1, ID: fmt.Sprintf("%s-%02d", k, i), Type: typ, Time: t0.Add(time.Duration(i) * time.Minute),
						Pipeline: p, BusinessDate: date, BatchID: k.BatchID, System: model.Producer, Component: "c"}
					if typ.NeedsObject() {
						e.Object = "d_" + k.BatchID + ".csv"
						if r.IntN(20) == 0 {
							e.Object = "d_19990101.csv" // identity_mismatch under d.daily
						}
					}
					if typ.NeedsRows() {
						e.Rows, e.HasRows = 100, true
						if typ == model.ConsumeSucceeded && r.IntN(10) == 0 {
							e.Rows = 99
						}
					}
					out = append(out, e)
					if r.IntN(10) == 0 {
						out = append(out, e) // redelivered
					}
				}
			}
		}
		for h := range days * 2 {
			out = append(out, model.Event{Spec: model.SpecV1, ID: fmt.Sprintf("hb-%s-%d", p, h), Type: model.ProcessHeartbeat,
				Time: model.MustParseDate("2026-09-01").In(time.UTC).Add(time.Duration(h) * 12 * time.Hour), Pipeline: p,
				System: model.Consumer, Component: fmt.Sprintf("w-%d", h%3)})
		}
	}
	return out
}

// TestOrderedEqualsSet: a pipeline read in business-date order, one date
// in memory at a time, from a context start before from, gives the same
// diagnoses, byte for byte, as a Set holding every event, for the batches
// from on.
func TestOrderedEqualsSet(t *testing.T) {
	cs := genPipelines(t)
	asOf := time.Date(2026, 10, 10, 0, 0, 0, 0, time.UTC) // some events are later
	for seed := range uint64(4) {
		r := rand.New(rand.NewPCG(seed, 7))
		events := genOrderedHistory(r, cs, 45)
		froms := []string{"2026-09-01", "2026-09-14", "2026-09-17", "2026-10-08"}
		if seed >= 2 {
			// The pipelines stop sending after 2026-10-04: a range that
			// starts after their last event holds only absent batches,
			// judged against the verdicts of the last dates read.
			events = slices.DeleteFunc(events, func(e model.Event) bool {
				return e.Type.HasBatch() && e.BusinessDate.Compare(model.MustParseDate("2026-10-04")) > 0
			})
			froms = append(froms, "2026-10-06")
		}
		set := batches.New(cs, asOf)
		for i := range events {
			set.Add(&events[i])
		}
		r.Shuffle(len(events), func(i, j int) { events[i], events[j] = events[j], events[i] })
		slices.SortStableFunc(events, func(a, b model.Event) int {
			if c := a.Key().Compare(b.Key()); c != 0 {
				return c
			}
			return strings.Compare(a.ID, b.ID)
		})
		absent := 0
		for _, from := range froms {
			fromD := model.MustParseDate(from)
			var want [][]byte
			for _, d := range set.Diagnose(func(k model.BatchKey) bool { return k.BusinessDate.Compare(fromD) >= 0 }) {
				want = append(want, d.AppendJSON(nil))
				if d.Events == 0 {
					absent++
				}
			}
			var got [][]byte
			var ord *batches.Ordered
			procs := batches.Processes{}
			for i := range events {
				if !events[i].Type.HasBatch() && !events[i].Time.After(asOf) {
					procs.Add(&events[i])
				}
			}
			pipeline := ""
			finish := func() {
				if ord != nil {
					if err := ord.Finish(); err != nil {
						t.Fatal(err)
					}
				}
			}
			for i := range events {
				e := &events[i]
				if !e.Type.HasBatch() {
					continue
				}
				if e.Pipeline != pipeline {
					finish()
					pipeline = e.Pipeline
					ord = batches.NewOrdered(cs, pipeline, asOf, batches.OrderedOptions{
						First: model.MustParseDate("2026-09-01"), From: fromD, Alive: procs.Alive(pipeline, nil),
					}, func(d *replay.Diagnosis) error {
						got = append(got, d.AppendJSON(nil))
						return nil
					})
				}
				if start := batches.ContextStart(cs.For(pipeline), pipeline, fromD); e.BusinessDate.Compare(start) < 0 {
					continue // not read: before the context start
				}
				if err := ord.Add(e); err != nil {
					t.Fatal(err)
				}
			}
			finish()
			if len(got) != len(want) {
				t.Fatalf("seed %d from %s: %d diagnoses, want %d", seed, from, len(got), len(want))
			}
			if len(want) == 0 {
				t.Fatalf("seed %d from %s: nothing to compare", seed, from)
			}
			for i := range want {
				if string(got[i]) != string(want[i]) {
					t.Fatalf("seed %d from %s: diagnosis %d differs:\nset:     %s\nordered: %s", seed, from, i, want[i], got[i])
				}
			}
		}
		if seed >= 2 && absent == 0 {
			t.Fatalf("seed %d: no absent expected batch compared", seed)
		}
	}
}

// TestOrderedRejectsDisorder: an event of an earlier date, of another
// pipeline or a heartbeat is an error naming the event, not a wrong answer.
func TestOrderedRejectsDisorder(t *testing.T) {
	cs := genPipelines(t)
	mk := func(p, date string, typ model.EventType) *model.Event {
		d := model.MustParseDate(date)
		e := &model.Event{Spec: model.SpecV1, ID: "e-" + date, Type: typ, Time: d.In(time.UTC), Pipeline: p, System: model.Producer}
		if typ.HasBatch() {
			e.BusinessDate, e.BatchID = d, d.Compact()
		}
		return e
	}
	tests := []struct {
		name string
		e    *model.Event
		want string
	}{
		{"earlier date", mk("d.daily", "2026-09-01", model.JobStarted), "not in business-date order"},
		{"other pipeline", mk("h.hourly", "2026-09-03", model.JobStarted), "does not belong here"},
		{"heartbeat", mk("d.daily", "2026-09-03", model.ProcessHeartbeat), "does not belong here"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := batches.NewOrdered(cs, "d.daily", time.Now(), batches.OrderedOptions{}, func(*replay.Diagnosis) error { return nil })
			if err := o.Add(mk("d.daily", "2026-09-02", model.JobStarted)); err != nil {
				t.Fatal(err)
			}
			err := o.Add(tt.e)
			if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), tt.e.ID) {
				t.Fatalf("Add: %v, want an error naming %s and saying %q", err, tt.e.ID, tt.want)
			}
		})
	}
}

// TestContextStart: the date of the previous batch of the first batch on
// or after from, for each schedule.
func TestContextStart(t *testing.T) {
	cs := genPipelines(t)
	tests := []struct {
		pipeline, from, want string
	}{
		{"d.daily", "2026-09-10", "2026-09-09"},
		{"w.weekdays", "2026-09-14", "2026-09-11"}, // Monday: the Friday before
		{"w.weekdays", "2026-09-17", "2026-09-15"}, // the 16th is a holiday
		{"w.weekdays", "2026-09-13", "2026-09-11"}, // a Sunday: first firing is Monday
		{"h.hourly", "2026-09-10", "2026-09-09"},
		{"x.nocontract", "2026-09-10", "2026-09-10"}, // no schedule, no continuity
	}
	for _, tt := range tests {
		got := batches.ContextStart(cs.For(tt.pipeline), tt.pipeline, model.MustParseDate(tt.from))
		if got.String() != tt.want {
			t.Errorf("ContextStart(%s, %s) = %s, want %s", tt.pipeline, tt.from, got, tt.want)
		}
	}
}

// TestEachDiagnosisEqualsDiagnoseKeys: diagnoses evaluated one into the
// memory of the other give, byte for byte, what DiagnoseKeys returns,
// absent expected batches included, and the strings a caller kept of an
// earlier one are not rewritten by the next.
func TestEachDiagnosisEqualsDiagnoseKeys(t *testing.T) {
	cs := genPipelines(t)
	asOf := time.Date(2026, 10, 10, 0, 0, 0, 0, time.UTC)
	for seed := range uint64(4) {
		r := rand.New(rand.NewPCG(seed, 11))
		events := genOrderedHistory(r, cs, 45)
		if seed >= 2 {
			events = slices.DeleteFunc(events, func(e model.Event) bool {
				return e.Type.HasBatch() && e.BusinessDate.Compare(model.MustParseDate("2026-10-04")) > 0
			})
		}
		set := batches.New(cs, asOf)
		for i := range events {
			set.Add(&events[i])
		}
		keys := set.Keys()
		want := set.DiagnoseKeys(keys)
		var got [][]byte
		var kept, keptWant []string
		absent := 0
		set.EachDiagnosis(keys, func(d *replay.Diagnosis) {
			got = append(got, d.AppendJSON(nil))
			kept = append(kept, d.Batch, d.Verdict.String(), d.FirstMissing, d.NextStep.Summary)
			if d.Events == 0 {
				absent++
			}
		})
		for i := range want {
			keptWant = append(keptWant, want[i].Batch, want[i].Verdict.String(), want[i].FirstMissing, want[i].NextStep.Summary)
		}
		if len(got) != len(want) || len(want) == 0 {
			t.Fatalf("seed %d: %d diagnoses one at a time, %d from DiagnoseKeys", seed, len(got), len(want))
		}
		for i := range want {
			if w := want[i].AppendJSON(nil); string(got[i]) != string(w) {
				t.Fatalf("seed %d: diagnosis %d differs:\nDiagnoseKeys: %s\nEachDiagnosis: %s", seed, i, w, got[i])
			}
		}
		if !slices.Equal(kept, keptWant) {
			t.Fatalf("seed %d: strings kept from earlier diagnoses changed", seed)
		}
		if seed >= 2 && absent == 0 {
			t.Fatalf("seed %d: no absent expected batch compared", seed)
		}
	}
}
