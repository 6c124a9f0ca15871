package detect_test

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/handoff-dev/handoff/analyzer/batches"
	"github.com/handoff-dev/handoff/analyzer/detect"
	"github.com/handoff-dev/handoff/analyzer/replay"
	"github.com/handoff-dev/handoff/model"
	"github.com/handoff-dev/handoff/model/contract"
)

// absEvent is one event of the seed pipeline (deploy/contracts: Asia/
// Shanghai, produced due business_date + 1d 02:00, 18:00Z on the date).
func absEvent(id, date, batch string, typ model.EventType, tm time.Time) model.Event {
	d := model.MustParseDate(date)
	e := model.Event{Spec: model.SpecV1, ID: id, Type: typ, Time: tm.UTC(), Pipeline: seedPipeline,
		BusinessDate: d, BatchID: batch, System: model.Producer, Component: "build-runner-3"}
	names := "account_balance_snapshot_" + d.Compact()
	switch typ {
	case model.ArtifactStaged:
		e.Object = names + ".csv.tmp"
	case model.ArtifactFinalized:
		e.Object = names + ".csv"
	case model.SignalPublished:
		e.Object = names + ".flag"
	case model.ArtifactTransferred:
		e.System, e.Component, e.Object = model.Exchange, "sftp-relay", names+".csv"
	case model.SignalTransferred:
		e.System, e.Component, e.Object = model.Exchange, "sftp-relay", names+".flag"
	case model.BatchIdentified, model.ConsumeStarted, model.ConsumeSucceeded, model.ConsumeFailed:
		e.System, e.Component = model.Consumer, "consume-runner-1"
	case model.JobFailed:
		e.Error = "exit status 1"
	}
	if typ.NeedsRows() {
		e.Rows, e.HasRows = 100, true
	}
	return e
}

var happyPath = []model.EventType{model.JobStarted, model.ArtifactStaged, model.ArtifactFinalized, model.JobSucceeded,
	model.SignalPublished, model.ArtifactTransferred, model.SignalTransferred, model.BatchIdentified,
	model.ConsumeStarted, model.ConsumeSucceeded}

// absDelivered is a delivered batch of date under batch id, its events two
// minutes apart from start.
func absDelivered(date, batch string, start time.Time) []model.Event {
	out := make([]model.Event, len(happyPath))
	for i, typ := range happyPath {
		out[i] = absEvent(fmt.Sprintf("%s-%02d", batch, i+1), date, batch, typ, start.Add(time.Duration(i)*2*time.Minute))
	}
	return out
}

func openKinds(fs []detect.Finding) []string {
	var out []string
	for _, f := range latest(fs) {
		if f.State == detect.Open {
			out = append(out, f.Batch.BatchID+" "+string(f.Kind))
		}
	}
	slices.Sort(out)
	return out
}

// TestRerunsAreAttempts: a date re-run under a declared id
// ({batch_id}-r{n}) is an attempt of that date. The date speaks through
// its latest delivered attempt; the earlier attempt's findings resolve as
// superseded, naming the re-run; continuity of the next date holds; a live
// missing ends when any attempt arrives. An undeclared id is still an
// identity_mismatch and does not count for the date. diagnose (batches.Set)
// and the detector agree on every batch.
func TestRerunsAreAttempts(t *testing.T) {
	day := func(s string) time.Time { return at(s) }
	d29 := absDelivered("2026-09-29", "20260929", day("2026-09-29T17:00:00Z"))
	d01 := absDelivered("2026-10-01", "20261001", day("2026-10-01T17:00:00Z"))
	failed := []model.Event{
		absEvent("20260930-01", "2026-09-30", "20260930", model.JobStarted, day("2026-09-30T17:00:00Z")),
		absEvent("20260930-02", "2026-09-30", "20260930", model.JobFailed, day("2026-09-30T17:10:00Z")),
	}
	badRows := absDelivered("2026-09-30", "20260930", day("2026-09-30T17:00:00Z"))
	badRows[9].Rows = 99
	r2 := absDelivered("2026-09-30", "20260930-r2", day("2026-09-30T19:00:00Z"))
	r2late := absDelivered("2026-09-30", "20260930-r2", day("2026-10-01T00:00:00Z"))
	fix := absDelivered("2026-09-30", "20260930-fix", day("2026-09-30T19:00:00Z"))
	r3failed := []model.Event{absEvent("20260930-r3-01", "2026-09-30", "20260930-r3", model.JobStarted, day("2026-09-30T21:00:00Z")),
		absEvent("20260930-r3-02", "2026-09-30", "20260930-r3", model.JobFailed, day("2026-09-30T21:05:00Z"))}
	tests := []struct {
		name       string
		events     [][]model.Event
		superseded string // batch id whose findings end superseded, by r2
		open       []string
		gap        bool // 2026-10-01 reports a continuity gap
		raised     []string
	}{
		{"failed, then a delivered re-run", [][]model.Event{d29, failed, r2, d01}, "20260930", nil, false, []string{"20260930 failed"}},
		{"absent, then a delivered re-run after the deadline", [][]model.Event{d29, r2late, d01}, "20260930", nil, false, []string{"20260930 missing"}},
		{"delivered with bad files, then a re-run", [][]model.Event{d29, badRows, r2, d01}, "20260930", nil, false, []string{"20260930 row_mismatch"}},
		{"a later failed re-run does not undo a delivered one", [][]model.Event{d29, failed, r2, r3failed, d01}, "20260930", nil, false, []string{"20260930 failed"}},
		{"an undeclared id is not an attempt", [][]model.Event{d29, failed, fix, d01}, "", []string{"20260930 failed", "20260930 overdue", "20260930-fix identity_mismatch"}, true, nil},
	}
	asOf := day("2026-10-02T12:00:00Z") // before 2026-10-02 is due
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var all []model.Event
			for _, es := range tt.events {
				all = append(all, es...)
			}
			contracts := seedContracts(t)
			d := mustNew(t, detect.Config{Contracts: contracts, From: model.MustParseDate("2026-09-29")})
			s := newStream(d, all)
			s.run(day("2026-09-29T00:00:00Z"), asOf, 10*time.Minute, 0)
			if got := openKinds(s.findings); !slices.Equal(got, tt.open) {
				t.Errorf("open findings %v, want %v", got, tt.open)
			}
			var raised []string
			for _, f := range s.findings {
				if f.State == detect.Open && f.Seq == 1 && f.Batch.BusinessDate.String() == "2026-09-30" {
					raised = append(raised, f.Batch.BatchID+" "+string(f.Kind))
				}
				if f.State == detect.Resolved && f.Batch.BatchID == tt.superseded {
					if want := seedPipeline + "/2026-09-30/20260930-r2"; f.SupersededBy != want || !strings.Contains(f.Resolution, "superseded by "+want) {
						t.Errorf("%s %s resolved with superseded_by %q (%q), want %s", f.Batch, f.Kind, f.SupersededBy, f.Resolution, want)
					}
				}
			}
			if tt.open == nil {
				for _, w := range tt.raised {
					if !slices.Contains(raised, w) {
						t.Errorf("%s was never raised (raised %v): the test does not exercise the superseding", w, raised)
					}
				}
			}
			set := batches.New(contracts, asOf)
			for i := range all {
				set.Add(&all[i])
			}
			for _, dg := range set.Diagnose(nil) {
				k, _ := model.ParseBatchKey(dg.Batch)
				if k.BusinessDate.String() == "2026-10-01" {
					if got := slices.ContainsFunc(dg.Anomalies, func(a replay.Anomaly) bool { return a.Kind == replay.ContinuityGap }); got != tt.gap {
						t.Errorf("2026-10-01 continuity_gap %v, want %v (%v)", got, tt.gap, dg.Previous)
					}
				}
				if k.BatchID == "20260930-r2" {
					if dg.Status != replay.StatusDelivered || dg.Attempt == nil || dg.Attempt.Rerun != 2 || dg.Attempt.SupersededBy != "" {
						t.Errorf("the re-run: status %s, attempt %+v; want delivered, re-run 2, speaking for the date", dg.Status, dg.Attempt)
					}
				}
				if k.BatchID == tt.superseded && tt.superseded != "" && len(all) > 0 {
					if !dg.Superseded() || dg.NextStep.Action != replay.ActionNone {
						t.Errorf("%s: attempt %+v, next step %s; want superseded by the re-run, nothing to do", dg.Batch, dg.Attempt, dg.NextStep.Action)
					}
				}
				got, open := d.Diagnosis(k)
				if !open {
					if dg.Status != replay.StatusDelivered {
						t.Errorf("%s: the detector closed it, diagnose says %s", k, dg.Status)
					}
					continue
				}
				if g, w := got.AppendJSON(nil), dg.AppendJSON(nil); !bytes.Equal(g, w) {
					t.Errorf("%s: detector and diagnose disagree:\n detect   %s\n diagnose %s", k, g, w)
				}
			}
		})
	}
}

// TestRerunNamesDeriveFromTheDate: a declared re-run's files may carry the
// date's names or names rendered from its own id; any other name is an
// identity_mismatch, and so is a re-run of an id that does not derive
// from the date.
func TestRerunNamesDeriveFromTheDate(t *testing.T) {
	c := seedContracts(t)
	asOf := at("2026-10-03T00:00:00Z")
	tests := []struct {
		batch, artifact string
		mismatch        bool
	}{
		{"20260930-r2", "account_balance_snapshot_20260930.csv", false},
		{"20260930-r2", "account_balance_snapshot_20260930-r2.csv", false},
		{"20260930-r2", "account_balance_snapshot_20260929.csv", true},
		{"20260929-r2", "account_balance_snapshot_20260930.csv", true},  // a re-run of another date's id
		{"20260930-r02", "account_balance_snapshot_20260930.csv", true}, // not the declared shape
		{"20260930", "account_balance_snapshot_20260930.csv", false},
	}
	for _, tt := range tests {
		es := absDelivered("2026-09-30", tt.batch, at("2026-09-30T17:00:00Z"))
		for i := range es {
			if es[i].Type == model.ArtifactFinalized || es[i].Type == model.ArtifactTransferred {
				es[i].Object = tt.artifact
			}
		}
		set := batches.New(c, asOf)
		for i := range es {
			set.Add(&es[i])
		}
		dg := diagnosisOf(t, set.Diagnose(nil), seedPipeline+"/2026-09-30/"+tt.batch)
		got := slices.ContainsFunc(dg.Anomalies, func(a replay.Anomaly) bool { return a.Kind == replay.IdentityMismatch })
		if got != tt.mismatch {
			t.Errorf("%s with %s: identity_mismatch %v, want %v (%v)", tt.batch, tt.artifact, got, tt.mismatch, dg.Anomalies)
		}
	}
	// reruns: none turns the concept off: the re-run is a batch of its own.
	off, err := contract.Parse("off.yaml", []byte("pipeline: "+seedPipeline+"\nschedule: daily\nbatch_id: \"{yyyymmdd}\"\nreruns: none\n"))
	if err != nil {
		t.Fatal(err)
	}
	es := absDelivered("2026-09-30", "20260930-r2", at("2026-09-30T17:00:00Z"))
	set := batches.New(single{off}, asOf)
	for i := range es {
		set.Add(&es[i])
	}
	if dg := diagnosisOf(t, set.Diagnose(nil), seedPipeline+"/2026-09-30/20260930-r2"); dg.Status != replay.StatusBroken {
		t.Errorf("reruns: none: status %s, want broken (identity_mismatch)", dg.Status)
	}
}

type single struct{ c *contract.Contract }

func (s single) For(string) *contract.Contract { return s.c }
func (s single) Pipelines() []string           { return []string{s.c.Pipeline} }

// diagnosisOf picks batch key's diagnosis: the others include the absent
// expected batches of the calendar.
func diagnosisOf(t *testing.T, ds []replay.Diagnosis, key string) replay.Diagnosis {
	t.Helper()
	for _, d := range ds {
		if d.Batch == key {
			return d
		}
	}
	t.Fatalf("no diagnosis of %s among %d", key, len(ds))
	return replay.Diagnosis{}
}
