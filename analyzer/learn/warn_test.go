package learn

import (
	"testing"
	"time"

	"github.com/handoff-dev/handoff/model"
)

// TestEarlyWarningFalsePositives plays the early-warning rule over the
// generated history of TestSuggestReproducesContracts (204 pipelines, 90
// days): for every UTC day from the 29th on, the baselines in force
// (BaselineAsOf), and for every batch the instant its lowest habitual
// boundary not yet proven would warn (UsuallyBy + WarnGrace). A batch of an
// undisturbed day that warns is a false positive; a late day (a transfer
// hours behind) should warn. The figures are in docs/learned.md.
// debugWarn logs each false positive.
const debugWarn = false

func TestEarlyWarningFalsePositives(t *testing.T) {
	if testing.Short() {
		t.Skip("90 days of 204 pipelines")
	}
	l := New()
	// first[k][b]: when boundary b of batch k was first proven.
	first := map[model.BatchKey]*[model.Consumed + 1]int64{}
	truths := generate(t, 204, 1, func(e *model.Event) {
		l.Add(e)
		if b := e.Type.Proves(); b.Valid() && !e.BusinessDate.IsZero() {
			p := first[e.Key()]
			if p == nil {
				p = new([model.Consumed + 1]int64)
				first[e.Key()] = p
			}
			if ms := e.Time.UnixMilli(); p[b] == 0 || ms < p[b] {
				p[b] = ms
			}
		}
	})
	normal := map[model.BatchKey]bool{}
	for _, tr := range truths {
		for _, k := range tr.keys {
			normal[k] = true
		}
	}
	o := Options{Zones: testZones(t)}
	// warned[k]: the batch warned on some day.
	warned := map[model.BatchKey]bool{}
	judged := map[model.BatchKey]bool{}
	for day := histFirst.AddDays(DefaultBaselineDays); day.Compare(histLast.AddDays(2)) <= 0; day = day.AddDays(1) {
		dayStart := day.In(time.UTC)
		exp := l.Expect(BaselineAsOf(dayStart), 0, o)
		dayEnd := dayStart.Add(24 * time.Hour)
		for k, p := range first {
			// Batches of this day's business date and the two before
			// (a once-a-day batch runs the night after its date, in zones
			// ahead of UTC the day before).
			if lag := day.DaysSinceEpoch() - k.BusinessDate.DaysSinceEpoch(); lag < -1 || lag > 2 {
				continue
			}
			x := exp.Of(k.Pipeline)
			if x == nil {
				continue
			}
			provenBy := func(w time.Time) func(model.Boundary) time.Time {
				return func(b model.Boundary) time.Time {
					if p[b] == 0 || p[b] > w.UnixMilli() {
						return time.Time{}
					}
					return time.UnixMilli(p[b])
				}
			}
			for _, b := range model.Ladder {
				// What a diagnosis as of the boundary's own usual time
				// shows: the boundaries below it proven by then.
				by0, ok := x.By(k, b)
				if !ok {
					continue
				}
				by, _ := x.usual(k, b, provenBy(by0.Add(WarnGrace)))
				if !ok {
					continue
				}
				judged[k] = true
				w := by.Add(WarnGrace)
				inTime := p[b] != 0 && p[b] <= w.UnixMilli()
				if !w.Before(dayStart) && w.Before(dayEnd) && !inTime {
					warned[k] = true
					if normal[k] && debugWarn {
						t.Logf("FP %s %s usually %s warn %s arrived %s zone %s", k, b, by0, w, time.UnixMilli(p[b]).UTC(), x.Zone)
					}
				}
				if !inTime || !w.Before(dayEnd) {
					// Only the lowest habitual boundary not proven by
					// its warning instant warns; a later one is judged
					// on its own day.
					break
				}
			}
		}
	}
	var nNormal, fp, nLate, tp int
	for k := range judged {
		if normal[k] {
			nNormal++
			if warned[k] {
				fp++
			}
			continue
		}
		nLate++
		if warned[k] {
			tp++
		}
	}
	t.Logf("undisturbed batches judged: %d, warned (false positives): %d (%.2f%%)", nNormal, fp, 100*float64(fp)/float64(max(1, nNormal)))
	t.Logf("late, re-run, failed or absent batches judged: %d, warned: %d", nLate, tp)
	if nNormal < 10000 {
		t.Fatalf("only %d undisturbed batches judged", nNormal)
	}
	if 1000*fp > nNormal {
		t.Errorf("%d false positives of %d undisturbed batches: more than 0.1%%", fp, nNormal)
	}
	if float64(tp) < 0.8*float64(nLate) {
		t.Errorf("%d of %d disturbed batches warned: fewer than 80%%", tp, nLate)
	}
}
