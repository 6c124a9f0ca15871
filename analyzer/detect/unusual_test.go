package detect_test

import (
	"strings"
	"testing"
	"time"

	"github.com/handoff-dev/handoff/analyzer/detect"
	"github.com/handoff-dev/handoff/analyzer/learn"
	"github.com/handoff-dev/handoff/model"
)

// seedDay returns the seed case's delivered batch (2026-09-29) moved to
// business date d and later by shift: the same events, ids and names.
func seedDay(t *testing.T, d model.Date, shift time.Duration) []model.Event {
	t.Helper()
	src := model.MustParseDate("2026-09-29")
	days := time.Duration(d.DaysSinceEpoch()-src.DaysSinceEpoch()) * 24 * time.Hour
	var out []model.Event
	for _, e := range seedEvents(t) {
		if e.BusinessDate != src {
			continue
		}
		e.BusinessDate = d
		e.BatchID = strings.ReplaceAll(e.BatchID, src.Compact(), d.Compact())
		e.ID = strings.ReplaceAll(e.ID, src.Compact(), d.Compact())
		e.Object = strings.ReplaceAll(e.Object, src.Compact(), d.Compact())
		e.Time = e.Time.Add(days + shift)
		out = append(out, e)
	}
	return out
}

// TestUnusual plays 28 habitual days of the seed pipeline (produced at
// 01:15 Shanghai, a few minutes' jitter), then a day of the case, through
// the detector with baselines: a slow day warns (kind unusual, severity
// info) at the instant the baseline predicts, before the contract's
// deadline, and the warning ends when the boundary arrives; a normal day
// raises nothing.
func TestUnusual(t *testing.T) {
	first := model.MustParseDate("2026-10-01")
	var history []model.Event
	for i := range 28 {
		history = append(history, seedDay(t, first.AddDays(i), time.Duration(i%4)*2*time.Minute)...)
	}
	day := first.AddDays(28) // 2026-10-29
	for _, tc := range []struct {
		name  string
		shift time.Duration
		// want: the boundary that warns, "" for none.
		want string
	}{
		{"normal day", 3 * time.Minute, ""},
		// 40 minutes late: produced 01:55 Shanghai, deadline 02:00.
		{"slow day", 40 * time.Minute, "produced"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			events := append(append([]model.Event(nil), history...), seedDay(t, day, tc.shift)...)
			d := mustNew(t, detect.Config{Contracts: seedContracts(t), From: first, Baselines: &detect.Baselines{}})
			s := newStream(d, events)
			s.run(first.In(time.UTC), day.In(time.UTC).Add(36*time.Hour), time.Minute, time.Second)
			var unusual []detect.Finding
			for _, f := range s.findings {
				if f.Kind == detect.Unusual {
					unusual = append(unusual, f)
				}
				if f.Kind != detect.Unusual && f.Batch.BusinessDate == day {
					t.Errorf("%s %s %s: the day's batch is not overdue", f.Kind, f.Name, f.State)
				}
			}
			if tc.want == "" {
				if len(unusual) > 0 {
					t.Fatalf("a normal day warned: %v", summarize(unusual))
				}
				return
			}
			if len(unusual) != 2 {
				t.Fatalf("want an open and a resolved unusual finding, got %v", summarize(unusual))
			}
			open, done := unusual[0], unusual[1]
			// The baseline: 28 days of produced between 17:14:05 and
			// 17:20:05Z (01:14 to 01:20 Shanghai); its p95 falls in the
			// 17:20 bucket, whose upper edge is 17:25, and the warning
			// fires WarnGrace later.
			usually := day.In(time.UTC).Add(17*time.Hour + 25*time.Minute)
			predicted := usually.Add(learn.WarnGrace)
			deadline := day.In(time.UTC).Add(18 * time.Hour)
			if open.State != detect.Open || open.Name != tc.want || open.Severity != "info" || open.Batch.BusinessDate != day {
				t.Fatalf("open record %+v", summarize(unusual[:1]))
			}
			if !open.Deadline.Equal(predicted) || open.EvidenceAsOf.Before(predicted) || open.EvidenceAsOf.After(predicted.Add(time.Minute)) {
				t.Errorf("warned as of %s for %s, want at the predicted %s (usually by %s)", open.EvidenceAsOf, open.Deadline, predicted, usually)
			}
			if !open.EvidenceAsOf.Before(deadline) {
				t.Errorf("warned at %s, not before the deadline %s", open.EvidenceAsOf, deadline)
			}
			var by time.Time
			for _, b := range open.Diagnosis.Boundaries {
				if b.Name == "produced" {
					by = b.UsuallyBy
				}
			}
			if !by.Equal(usually) || open.Diagnosis.Baseline != "p95 over 28 days" {
				t.Errorf("diagnosis baseline %q, produced usually by %s, want %s", open.Diagnosis.Baseline, by, usually)
			}
			proven := provenAt(done, "produced")
			if done.State != detect.Resolved || done.Fingerprint != open.Fingerprint || proven.IsZero() ||
				done.EvidenceAsOf.Before(proven) || done.EvidenceAsOf.After(proven.Add(time.Minute)) {
				t.Errorf("resolved record %+v as of %s, want resolved when produced arrived (%s)", summarize(unusual[1:]), done.EvidenceAsOf, proven)
			}
			if done.Lateness != proven.Sub(predicted) {
				t.Errorf("lateness %s, want %s (arrival past the warning)", done.Lateness, proven.Sub(predicted))
			}
		})
	}
}

func provenAt(f detect.Finding, name string) time.Time {
	for _, b := range f.Diagnosis.Boundaries {
		if b.Name == name && b.Proven {
			return b.At
		}
	}
	return time.Time{}
}

// A pipeline without a contract: the learned calendar expects its next
// batch, and one that never starts warns once its first boundary is
// later than usual.
func TestUnusualNeverStarts(t *testing.T) {
	first := model.MustParseDate("2026-10-01")
	var history []model.Event
	for i := range 28 {
		for _, e := range seedDay(t, first.AddDays(i), time.Duration(i%4)*2*time.Minute) {
			e.Pipeline = otherPipeline
			history = append(history, e)
		}
	}
	day := first.AddDays(28)
	d := mustNew(t, detect.Config{Contracts: seedContracts(t), From: first, Baselines: &detect.Baselines{}})
	s := newStream(d, history)
	s.run(first.In(time.UTC), day.In(time.UTC).Add(36*time.Hour), time.Minute, time.Second)
	var got []string
	for _, f := range s.findings {
		if f.Kind == detect.Unusual {
			got = append(got, f.Batch.String()+" "+f.Name+" "+string(f.State)+" "+f.EvidenceAsOf.Format(time.RFC3339))
		}
	}
	// 17:14-17:20Z on 28 days: usually by 17:25, the warning after 17:35,
	// at the first step past it.
	want := otherPipeline + "/2026-10-29/20261029 produced open 2026-10-29T17:36:00Z"
	if len(got) != 1 || got[0] != want {
		t.Fatalf("unusual findings %q, want [%s]", got, want)
	}
}
