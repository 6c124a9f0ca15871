package learn

import (
	"fmt"
	"math"
	"sort"
	"testing"
	"time"

	"github.com/handoff-dev/handoff/model"
)

// Baselines are a pure function of the history as of a time: events
// stored after the as-of, and the order events come in, change nothing;
// the sketch's quantiles are within one 5-minute bucket of the exact ones
// over the same window, and a sketch stays bounded.
func TestBaselinesAsOf(t *testing.T) {
	var events []model.Event
	generate(t, 12, 3, func(e *model.Event) { events = append(events, *e) })
	asOf := time.Date(2026, 10, 20, 12, 0, 0, 0, time.UTC)
	all, known, reversed := New(), New(), New()
	for i := range events {
		all.Add(&events[i])
		if !events[i].Time.After(asOf) {
			known.Add(&events[i])
		}
		reversed.Add(&events[len(events)-1-i])
	}
	o := Options{Zones: testZones(t)}
	want := summary(all.Baselines(asOf, 0, o))
	if len(want) < 12*4 {
		t.Fatalf("%d baselines for 12 pipelines:\n%v", len(want), want)
	}
	for name, l := range map[string]*Learner{"events up to the as-of only": known, "events in reverse": reversed} {
		got := summary(l.Baselines(asOf, 0, o))
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%s: baselines differ:\ngot  %v\nwant %v", name, got, want)
		}
	}

	// The exact 95th percentile over the same window, from the events.
	from := model.Date{Year: 2026, Month: 9, Day: 23}
	for _, b := range all.Baselines(asOf, 0, o) {
		if len(b.Arrivals.counts) > sketchHi-sketchLo+1 {
			t.Fatalf("%s %s: %d buckets", b.Pipeline, b.Boundary, len(b.Arrivals.counts))
		}
		if b.From != from {
			t.Fatalf("window starts %s, want %s (28 days ending at the as-of's date)", b.From, from)
		}
		first := map[model.BatchKey]int64{}
		for i := range events {
			e := &events[i]
			if e.Pipeline != b.Pipeline || e.Type.Proves() != b.Boundary || e.Time.After(asOf) ||
				e.BusinessDate.Compare(b.From) < 0 || e.BusinessDate.Compare(b.To) > 0 {
				continue
			}
			if ms, ok := first[e.Key()]; !ok || e.Time.UnixMilli() < ms {
				first[e.Key()] = e.Time.UnixMilli()
			}
		}
		var v []float64
		for k, ms := range first {
			slot := 0
			if b.Timed {
				s, _ := shapeID(k.BatchID, k.BusinessDate)
				slot = atoi2(s.digits[:2]) * 60
				if len(s.digits) == 4 {
					slot += atoi2(s.digits[2:])
				}
			}
			v = append(v, offset(ms, k, slot, b.Timed, b.Zone))
		}
		sort.Float64s(v)
		if len(v) != b.Arrivals.N() {
			t.Fatalf("%s %s: sketch counts %d arrivals, the events %d", b.Pipeline, b.Boundary, b.Arrivals.N(), len(v))
		}
		for _, q := range []float64{0.5, 0.95} {
			exact, got := quantile(v, q), b.Arrivals.Quantile(q)
			if got < exact || got-exact > sketchStep+1e-9 || math.IsNaN(got) {
				t.Errorf("%s %s: p%.0f %.1f from the sketch, %.1f exact", b.Pipeline, b.Boundary, q*100, got, exact)
			}
		}
	}
}

func summary(bs []Baseline) []string {
	var out []string
	for _, b := range bs {
		out = append(out, fmt.Sprintf("%s %s %s n=%d %s p50=%.0f", b.Pipeline, b.Boundary, b.Zone, b.Arrivals.N(), b.Text(), b.Arrivals.Quantile(0.5)))
	}
	return out
}

func TestSketchQuantile(t *testing.T) {
	var s Sketch
	for _, m := range []float64{-7, -5, 1, 4.9, 5, 61, 61, 10000} {
		s.Add(m)
	}
	for _, tc := range []struct {
		q    float64
		want float64
	}{{0, -5}, {0.125, -5}, {0.25, 0}, {0.5, 5}, {0.625, 10}, {0.875, 65}, {1, float64((sketchHi + 1) * sketchStep)}} {
		if got := s.Quantile(tc.q); got != tc.want {
			t.Errorf("Quantile(%v) = %v, want %v", tc.q, got, tc.want)
		}
	}
	var habit Sketch
	for range 20 {
		habit.Add(61)
	}
	habit.Add(900)
	if got := (Baseline{Arrivals: habit, Days: 28}).Text(); got != "usually by +0d 01:05 (p95 over 28 days)" {
		t.Errorf("Text() = %q", got)
	}
}
