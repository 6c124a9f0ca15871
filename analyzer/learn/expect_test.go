package learn

import (
	"fmt"
	"testing"
	"time"

	"github.com/handoff-dev/handoff/analyzer/replay"
	"github.com/handoff-dev/handoff/model"
)

// steady is a history of one pipeline whose boundary b arrives at the
// given offsets (minutes from the batch's anchor) on consecutive business
// dates from 2026-10-01: produced then consumed two minutes later.
func steady(name, id string, loc *time.Location, offsets []float64) *Learner {
	l := New()
	d0 := model.MustParseDate("2026-10-01")
	for i, m := range offsets {
		d := d0.AddDays(i)
		k := model.BatchKey{Pipeline: name, BusinessDate: d, BatchID: renderID(id, d, 0)}
		for j, typ := range []model.EventType{model.JobSucceeded, model.ConsumeSucceeded} {
			at := time.Date(d.Year, d.Month, d.Day, 0, 0, 0, 0, loc).Add(time.Duration((m + float64(2*j)) * float64(time.Minute)))
			l.Add(&model.Event{Spec: model.SpecV1, ID: fmt.Sprintf("%s-%d", k, j), Type: typ, Time: at,
				Pipeline: name, BusinessDate: d, BatchID: k.BatchID})
		}
	}
	return l
}

// repeat is n offsets cycling through vs.
func repeat(n int, vs ...float64) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = vs[i%len(vs)]
	}
	return out
}

func TestExpectBy(t *testing.T) {
	shanghai, err := time.LoadLocation("Asia/Shanghai")
	if err != nil {
		t.Fatal(err)
	}
	next := model.BatchKey{Pipeline: "p", BusinessDate: model.MustParseDate("2026-10-29"), BatchID: "20261029"}
	for _, tc := range []struct {
		name    string
		loc     *time.Location
		offsets []float64
		// want is "usually by" of produced for batch next (UTC), "" when
		// no baseline warns.
		want string
	}{
		// 28 days between +1d 06:00 and 06:08: p95 is the upper edge of
		// the 06:05 bucket, 06:10.
		{"regular", time.UTC, repeat(28, 1800, 1803, 1806, 1808), "2026-10-30T06:10:00Z"},
		// The same wall clock in Shanghai: 22:10 UTC the day before.
		{"zone", shanghai, repeat(28, 1800, 1803, 1806, 1808), "2026-10-29T22:10:00Z"},
		// Two days hours late are left out (beyond the fence).
		{"late days left out", time.UTC, append(repeat(26, 1800, 1803, 1806, 1808), 2100, 2300), "2026-10-30T06:10:00Z"},
		// Nine arrivals are too few (MinArrivals) to warn; and too few
		// dates for a schedule.
		{"too few", time.UTC, repeat(9, 1800), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := steady("p", "{yyyymmdd}", tc.loc, tc.offsets)
			asOf := BaselineAsOf(time.Date(2026, 10, 29, 12, 0, 0, 0, time.UTC))
			x := l.Expect(asOf, 0, Options{Zones: []*time.Location{time.UTC, tc.loc}}).Of("p")
			got, ok := x.By(next, model.Produced)
			if tc.want == "" {
				if ok {
					t.Fatalf("usually by %s from %d arrivals, want no baseline", got, len(tc.offsets))
				}
				return
			}
			if !ok || got.Format(time.RFC3339) != tc.want {
				t.Fatalf("usually by %v (%v), want %s", got, ok, tc.want)
			}
			if x.Label() != "p95 over 28 days" {
				t.Errorf("label %q", x.Label())
			}
			d := replay.Diagnosis{Boundaries: []replay.BoundaryState{{Name: "produced"}, {Name: "signaled"}}}
			x.Annotate(&d, next)
			if d.Baseline != "p95 over 28 days" || !d.Boundaries[0].UsuallyBy.Equal(got) || !d.Boundaries[1].UsuallyBy.IsZero() {
				t.Errorf("annotated %q %v %v", d.Baseline, d.Boundaries[0].UsuallyBy, d.Boundaries[1].UsuallyBy)
			}
		})
	}
}

// The learned calendar expects the batches after the window's last date,
// on the learned weekdays, with the learned ids.
func TestExpectCalendar(t *testing.T) {
	var offs []float64
	d0 := model.MustParseDate("2026-10-01")
	l := New()
	for i := range 28 {
		d := d0.AddDays(i)
		if w := weekdayOf(d); w == time.Saturday || w == time.Sunday {
			continue
		}
		offs = append(offs, 1800)
		at := time.Date(d.Year, d.Month, d.Day+1, 6, 0, 0, 0, time.UTC)
		l.Add(&model.Event{Spec: model.SpecV1, ID: "e" + d.String(), Type: model.JobSucceeded, Time: at,
			Pipeline: "w", BusinessDate: d, BatchID: "run-" + d.String()})
	}
	x := l.Expect(BaselineAsOf(time.Date(2026, 10, 30, 12, 0, 0, 0, time.UTC)), 0, Options{}).Of("w")
	got := fmt.Sprint(x.BatchesBetween(model.MustParseDate("2026-10-20"), model.MustParseDate("2026-11-03")))
	// 10-28 is the window's last batch: expected from 10-29 on, not the
	// weekend.
	want := "[w/2026-10-29/run-2026-10-29 w/2026-10-30/run-2026-10-30 w/2026-11-02/run-2026-11-02 w/2026-11-03/run-2026-11-03]"
	if got != want {
		t.Fatalf("expected %s\nwant %s", got, want)
	}
}
