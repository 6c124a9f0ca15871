package learn

import (
	"fmt"
	"math"
	"sort"
	"time"

	"github.com/handoff-dev/handoff/model"
)

// DefaultBaselineDays is how many business dates, ending at the as-of
// time's date, a baseline learns from: four weeks, so that every weekday
// counts four times and a change of habit shows within a month.
const DefaultBaselineDays = 28

// sketchStep is the resolution of a baseline's distribution: arrivals are
// counted in 5-minute buckets, the rounding the deadlines use.
const sketchStep = 5 // minutes

// sketchSpan bounds the buckets: offsets are clamped to [-1 day, +6 days]
// of the anchor, so a sketch holds at most 2,016 buckets, whatever the
// history.
const sketchLo, sketchHi = -1440 / sketchStep, 6 * 1440 / sketchStep

// Sketch is a bounded histogram of arrival offsets (minutes), in
// 5-minute buckets.
type Sketch struct {
	counts map[int32]uint32
	n      int
}

// Add counts one offset.
func (s *Sketch) Add(minutes float64) {
	if s.counts == nil {
		s.counts = map[int32]uint32{}
	}
	f := math.Floor(minutes / sketchStep)
	b := int32(max(sketchLo, min(f, sketchHi)))
	s.counts[b]++
	s.n++
}

// N is the number of offsets counted.
func (s *Sketch) N() int { return s.n }

// Quantile returns the q-quantile, the upper edge of the bucket that holds
// it (so "usually by" is never earlier than the arrivals it counts).
func (s *Sketch) Quantile(q float64) float64 {
	if s.n == 0 {
		return 0
	}
	keys := make([]int32, 0, len(s.counts))
	for k := range s.counts {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i] < keys[j] })
	rank := int(q*float64(s.n) + 0.999999)
	seen := 0
	for _, k := range keys {
		seen += int(s.counts[k])
		if seen >= rank {
			return float64((k + 1) * sketchStep)
		}
	}
	return float64((keys[len(keys)-1] + 1) * sketchStep)
}

// Habit returns the q-quantile of the arrivals within the fence of the
// deadline rule (the 75th percentile plus fenceIQRs interquartile ranges,
// at least fenceMin): late days are left out, as they are of a suggested
// deadline, so that one slow day in the window does not move "usually by"
// by hours. kept is how many arrivals it counts.
func (s *Sketch) Habit(q float64) (v float64, kept int) {
	if s.n == 0 {
		return 0, 0
	}
	q25, q75 := s.Quantile(0.25), s.Quantile(0.75)
	fence := q75 + fenceIQRs*math.Max(q75-q25, fenceMin.Minutes())
	in := Sketch{}
	for k, c := range s.counts {
		if float64(k*sketchStep) <= fence {
			if in.counts == nil {
				in.counts = map[int32]uint32{}
			}
			in.counts[k] += c
			in.n += int(c)
		}
	}
	return in.Quantile(q), in.n
}

// Baseline is when one boundary of one pipeline usually arrives, learned
// from the business dates From to To as of a time.
type Baseline struct {
	Pipeline string
	Boundary model.Boundary
	// Timed: offsets count from the firing's start (a schedule within the
	// day); otherwise from the business date's midnight in Zone.
	Timed    bool
	Zone     *time.Location
	From, To model.Date
	Days     int
	Arrivals Sketch
}

// Text says the baseline as the diagnosis shows it: "usually by +1d 06:10
// (p95 over 28 days)".
func (b Baseline) Text() string {
	return fmt.Sprintf("usually by %s (p95 over %d days)", offText(b.Arrivals.Quantile(0.95), b.Timed), b.Days)
}

// Baselines returns, for every pipeline whose history as of asOf supports
// a schedule, the arrival distribution of each boundary its batches prove,
// from the business dates of the days days ending at asOf's date (UTC):
// only what was known at asOf counts, so the same history gives the same
// baselines for the same as-of, however much was stored after it. days 0
// is DefaultBaselineDays.
func (l *Learner) Baselines(asOf time.Time, days int, o Options) []Baseline {
	o = o.withDefaults()
	if days <= 0 {
		days = DefaultBaselineDays
	}
	from, to := window(asOf, days)
	var out []Baseline
	for _, name := range l.Pipelines() {
		seen := l.pipes[name].asOf(from, to, asOf.UnixMilli())
		if seen == nil {
			continue
		}
		out = append(out, seen.baselines(o, from, to, days)...)
	}
	return out
}

// baselines learns p's schedule and zone from its window, then sketches
// every boundary's arrivals.
func (p *pipe) baselines(o Options, from, to model.Date, days int) []Baseline {
	out, _, _ := p.baselinesWork(o, from, to, days)
	return out
}

// baselinesWork is baselines with what was learned of p's window (nil
// when no schedule) and how regular each candidate zone made it.
func (p *pipe) baselinesWork(o Options, from, to model.Date, days int) ([]Baseline, *pipeWork, []zoneFit) {
	w := p.learnOwn(Options{Zones: o.Zones, MinBatches: o.MinBatches, MinDates: min(o.MinDates, days)})
	if !w.schedOK {
		return nil, nil, nil
	}
	var firsts []batchAt
	for _, b := range w.batches {
		if ms, ok := b.firstProof(); ok {
			if slot, ok := w.slotOf(b); ok {
				firsts = append(firsts, batchAt{key: b.key, slot: slot, ms: ms})
			}
		}
	}
	best, fits := chooseZone(firsts, w.timed, o.Zones)
	var out []Baseline
	for _, bd := range model.Ladder {
		bl := Baseline{Pipeline: p.name, Boundary: bd, Timed: w.timed, Zone: best.loc, From: from, To: to, Days: days}
		for _, b := range w.batches {
			if slot, ok := w.slotOf(b); ok && b.proven[bd] != 0 {
				bl.Arrivals.Add(offset(b.proven[bd], b.key, slot, w.timed, best.loc))
			}
		}
		if bl.Arrivals.N() > 0 {
			out = append(out, bl)
		}
	}
	return out, w, fits
}
