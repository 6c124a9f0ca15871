package learn

import (
	"fmt"
	"math"
	"sort"
	"strings"
	"time"

	"github.com/handoff-dev/handoff/analyzer/replay"
	"github.com/handoff-dev/handoff/model"
)

// WarnQuantile is the quantile of a baseline past which a boundary not yet
// proven is unusual: the early warning fires when a boundary is later than
// 95 arrivals in 100 of its window.
const WarnQuantile = 0.95

// warnPercent is WarnQuantile as the label writes it.
const warnPercent = 95

// WarnGrace is how long after "usually by" the early warning fires: the
// resolution of a baseline (its 5-minute buckets) and then some, so that
// an arrival a few minutes past the 95th percentile, which one day in
// twenty has by definition, warns nobody.
const WarnGrace = 10 * time.Minute

// MinArrivals is the fewest arrivals of a boundary in the window for its
// baseline to warn; below it the baseline is shown nowhere.
const MinArrivals = 10

// habitShare is the share of a window's batches (those that proved any
// boundary) that must prove a boundary for its lateness to be unusual:
// a boundary the pipeline proves only now and then is no habit, and its
// absence no warning.
const habitShare = 0.9

// BaselineAsOf is the as-of of the baselines in force at t: the last
// millisecond of the UTC day before t's. Every surface (detect, diagnose,
// backfill) evaluating at any time of one UTC day uses the same baselines,
// learned from the DefaultBaselineDays business dates that ended before
// it, so they agree, and the detector learns once a day rather than at
// every evaluation.
func BaselineAsOf(t time.Time) time.Time {
	u := t.UTC()
	day := time.Date(u.Year(), u.Month(), u.Day(), 0, 0, 0, 0, time.UTC)
	return day.Add(-time.Millisecond)
}

// Expectations are the baselines of every pipeline as of a time, in the
// form the early warning reads: by when each boundary of a batch usually
// arrives, and which batches the learned schedule expects.
type Expectations struct {
	AsOf  time.Time
	Days  int
	pipes map[string]*Expected
}

// Expected is what one pipeline's history says of its next batches.
type Expected struct {
	Pipeline string
	// Timed: the batches fire within the day (their ids name the hour);
	// the baselines count from the firing's start.
	Timed bool
	Zone  *time.Location
	Days  int
	// Batches is how many batches of the window proved a boundary.
	Batches int
	id      idTemplate
	days    [7]bool
	slots   []int
	last    model.Date // the window's last business date with a batch
	by      [model.Consumed + 1]float64
	n       [model.Consumed + 1]int
	// gap[b] is the warning quantile of the minutes from the habitual
	// boundary below b (prev[b]) to b; hasGap[b] when there is one.
	gap    [model.Consumed + 1]float64
	hasGap [model.Consumed + 1]bool
	prev   [model.Consumed + 1]model.Boundary
	// ties are the other zones that made the window's arrivals as regular
	// as Zone, with how far their clocks were ahead of it at the window's last arrival.
	ties []tie
	// spans remembers, for Zone (0) and each tie (i+1), the offset period
	// at last found an instant in; nil (an Expected not made by Expect,
	// or a timed one): every instant is worked out afresh.
	spans []*spanCache
	// label is Label for labelDays (Expect sets it): Annotate labels
	// every diagnosis, and a Sprintf each was a tenth of its time.
	label     string
	labelDays int
}

// tie is a zone as regular as the chosen one over the window.
type tie struct {
	loc   *time.Location
	ahead float64 // minutes
}

// ties lists the zones whose fit equals best's: over a window without a
// daylight-saving change, UTC and Europe/London, say, are equally
// regular, and which the jobs follow shows only once the clocks change.
// By takes the latest of their predictions, so that a change the window
// has not seen delays a warning rather than raising a false one.
func ties(best *time.Location, fits []zoneFit, timed bool, last time.Time) []tie {
	eps := zoneTie
	if timed {
		eps = timedTie
	}
	bestDev := 0.0
	for _, f := range fits {
		if f.loc == best {
			bestDev = f.dev
		}
	}
	_, bo := last.In(best).Zone()
	var out []tie
	for _, f := range fits {
		if f.loc == best || f.dev > bestDev+eps {
			continue
		}
		_, zo := last.In(f.loc).Zone()
		out = append(out, tie{loc: f.loc, ahead: float64(zo-bo) / 60})
	}
	return out
}

// Expect learns the Expectations as of asOf from the days business dates
// ending at asOf's date (0: DefaultBaselineDays), by the rules of
// Baselines: a pure function of the events added, counting only the
// proofs made by asOf.
func (l *Learner) Expect(asOf time.Time, days int, o Options) *Expectations {
	o = o.withDefaults()
	if days <= 0 {
		days = DefaultBaselineDays
	}
	e := &Expectations{AsOf: asOf, Days: days, pipes: map[string]*Expected{}}
	from, to := window(asOf, days)
	for _, name := range l.Pipelines() {
		seen := l.pipes[name].asOf(from, to, asOf.UnixMilli())
		if seen == nil {
			continue
		}
		if x := seen.expected(o, from, to, days); x != nil {
			e.pipes[name] = x
		}
	}
	return e
}

// window is the business dates of days days ending at asOf's UTC date.
func window(asOf time.Time, days int) (from, to model.Date) {
	u := asOf.UTC()
	to = model.Date{Year: u.Year(), Month: u.Month(), Day: u.Day()}
	return to.AddDays(-(days - 1)), to
}

// asOf is p's batches of the business dates from to to with their proofs
// made by cut (Unix ms); nil when none proved anything.
func (p *pipe) asOf(from, to model.Date, cut int64) *pipe {
	seen := &pipe{name: p.name, batches: map[model.BatchKey]*batch{}}
	for k, b := range p.batches {
		if k.BusinessDate.Compare(from) < 0 || k.BusinessDate.Compare(to) > 0 {
			continue
		}
		c := *b
		for i, t := range c.proven {
			if t > cut {
				c.proven[i] = 0
			}
		}
		if _, ok := c.firstProof(); ok {
			seen.batches[k] = &c
		}
	}
	if len(seen.batches) == 0 {
		return nil
	}
	return seen
}

// expected learns p's schedule, zone and the warning quantile of each
// habitual boundary; nil when the window supports no schedule.
func (p *pipe) expected(o Options, from, to model.Date, days int) *Expected {
	bls, w, fits := p.baselinesWork(o, from, to, days)
	if len(bls) == 0 {
		return nil
	}
	x := &Expected{Pipeline: p.name, Timed: w.timed, Zone: bls[0].Zone, Days: days, Batches: len(w.batches),
		id: w.id, days: w.sched.days, slots: w.sched.slots, last: w.sched.last}
	x.labelDays = x.Days
	x.label = x.Label()
	var lastProof int64
	for _, b := range w.batches {
		if ms, ok := b.firstProof(); ok && ms > lastProof {
			lastProof = ms
		}
	}
	if !w.timed {
		// Within the day the offsets count from the firing's start in
		// the zone itself; only once-a-day anchors (midnight on the
		// zone's wall clock) move with a clock change the window missed.
		x.ties = ties(bls[0].Zone, fits, w.timed, time.UnixMilli(lastProof))
		x.spans = make([]*spanCache, 1+len(x.ties))
		for i := range x.spans {
			x.spans[i] = &spanCache{}
		}
	}
	for _, bl := range bls {
		n := bl.Arrivals.N()
		if n < MinArrivals || float64(n) < habitShare*float64(x.Batches) {
			continue
		}
		x.by[bl.Boundary], x.n[bl.Boundary] = bl.Arrivals.Habit(WarnQuantile)
	}
	x.learnGaps(w.batches)
	return x
}

// learnGaps sketches, for every habitual boundary above another, the
// minutes from the one below to it: once the boundary below arrived (late,
// say), the next is expected that long after it, not at its own usual
// time, so that one slow step warns once, not at every boundary after it.
func (x *Expected) learnGaps(batches []*batch) {
	var below model.Boundary
	has := false
	for _, b := range model.Ladder {
		if x.n[b] == 0 {
			continue
		}
		if has {
			var g Sketch
			for _, bt := range batches {
				if bt.proven[b] != 0 && bt.proven[below] != 0 {
					g.Add(float64(bt.proven[b]-bt.proven[below]) / 60000)
				}
			}
			if g.N() >= MinArrivals {
				x.gap[b], _ = g.Habit(WarnQuantile)
				x.hasGap[b], x.prev[b] = true, below
			}
		}
		below, has = b, true
	}
}

// Of returns the expectations of pipeline, nil when its history as of the
// as-of supports none (e or the pipeline unknown).
func (e *Expectations) Of(pipeline string) *Expected {
	if e == nil {
		return nil
	}
	return e.pipes[pipeline]
}

// Pipelines lists the pipelines with expectations, sorted.
func (e *Expectations) Pipelines() []string {
	if e == nil {
		return nil
	}
	out := make([]string, 0, len(e.pipes))
	for n := range e.pipes {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Label says the baseline as the diagnosis names it: "p95 over 28 days".
func (x *Expected) Label() string {
	if x.label != "" && x.labelDays == x.Days {
		return x.label
	}
	return fmt.Sprintf("p%d over %d days", warnPercent, x.Days)
}

// By returns the instant by which boundary bd of batch k usually arrives
// (the warning quantile of its baseline's habitual arrivals, Habit), and false when the boundary has
// no baseline that warns or k's id does not name its firing.
func (x *Expected) By(k model.BatchKey, bd model.Boundary) (time.Time, bool) {
	if x == nil || !bd.Valid() || x.n[bd] == 0 {
		return time.Time{}, false
	}
	slot := 0
	if x.Timed {
		var ok bool
		if slot, ok = x.id.slot(k); !ok {
			return time.Time{}, false
		}
	}
	day := int64(k.BusinessDate.DaysSinceEpoch())
	t := x.at(k.BusinessDate, day, slot, x.by[bd], 0)
	for i := range x.ties {
		if u := x.at(k.BusinessDate, day, slot, x.by[bd]+x.ties[i].ahead, i+1); u.After(t) {
			t = u
		}
	}
	return t, true
}

// at is the instant m minutes after the anchor of date d (day: its
// DaysSinceEpoch, and slot) in zone z (0: Zone, i+1: ties[i]).
func (x *Expected) at(d model.Date, day int64, slot int, m float64, z int) time.Time {
	loc := x.Zone
	if z > 0 {
		loc = x.ties[z-1].loc
	}
	if x.Timed {
		return wallClock(d, slot/60, slot%60, loc).Add(time.Duration(m * float64(time.Minute))).UTC()
	}
	mm := int(math.Floor(m))
	if z >= len(x.spans) {
		return time.Date(d.Year, d.Month, d.Day, 0, mm, 0, 0, loc).UTC()
	}
	// time.Date(d.Year, d.Month, d.Day, 0, mm, 0, 0, loc), with the
	// zone's offset periods remembered: working the offset out afresh
	// for every boundary and tied zone of every diagnosis was most of
	// Annotate's time in a backfill.
	return time.Unix(x.spans[z].date(loc, day*secondsPerDay+int64(mm)*60), 0).UTC()
}

// Warns reports whether some boundary of x has a baseline that warns.
func (x *Expected) Warns() bool {
	if x == nil {
		return false
	}
	for _, n := range x.n {
		if n > 0 {
			return true
		}
	}
	return false
}

// BatchesBetween returns the batches the learned schedule expects on the
// business dates from to to after the window's last business date with a
// batch (the window's own dates are history, not expectations), with the
// ids the learned template gives them. Holidays are not learned per
// pipeline: a learned calendar expects a batch on every scheduled weekday.
func (x *Expected) BatchesBetween(from, to model.Date) []model.BatchKey {
	if x == nil || !x.Warns() || x.id.text == "" {
		return nil
	}
	if f := x.last.AddDays(1); f.Compare(from) > 0 {
		from = f
	}
	var out []model.BatchKey
	for d := from; d.Compare(to) <= 0; d = d.AddDays(1) {
		if !x.days[weekdayOf(d)] {
			continue
		}
		if !x.Timed {
			out = append(out, model.BatchKey{Pipeline: x.Pipeline, BusinessDate: d, BatchID: x.id.render(d, 0)})
			continue
		}
		for _, s := range x.slots {
			out = append(out, model.BatchKey{Pipeline: x.Pipeline, BusinessDate: d, BatchID: x.id.render(d, s)})
		}
	}
	return out
}

// render writes the batch id of t for date d and slot (minutes after
// midnight).
func (t idTemplate) render(d model.Date, slot int) string {
	r := strings.NewReplacer("{yyyymmdd}", d.Compact(), "{business_date}", d.String(),
		"{hh}", fmt.Sprintf("%02d", slot/60), "{mi}", fmt.Sprintf("%02d", slot%60))
	return r.Replace(t.text)
}

// Annotate writes the baseline into diagnosis d of batch k: each
// boundary's UsuallyBy and the diagnosis's Baseline label. UsuallyBy is
// the boundary's own usual time (By) or, when the habitual boundary below
// it is proven, that proof plus the usual gap between them if later. A
// diagnosis of a pipeline without expectations is left as it is.
func (x *Expected) Annotate(d *replay.Diagnosis, k model.BatchKey) {
	if !x.Warns() {
		return
	}
	shown := false
	for i := range d.Boundaries {
		bs := &d.Boundaries[i]
		bd, err := model.ParseBoundary(bs.Name)
		if err != nil {
			continue
		}
		if t, ok := x.usual(k, bd, func(b model.Boundary) time.Time { return provenAt(d, b) }); ok {
			bs.UsuallyBy, shown = t, true
		}
	}
	if shown {
		d.Baseline = x.Label()
	}
}

// usual is the UsuallyBy of boundary bd of batch k, given when its
// boundaries were proven (zero: not).
func (x *Expected) usual(k model.BatchKey, bd model.Boundary, proven func(model.Boundary) time.Time) (time.Time, bool) {
	t, ok := x.By(k, bd)
	if !ok {
		return t, false
	}
	if x.hasGap[bd] {
		if at := proven(x.prev[bd]); !at.IsZero() {
			if g := at.Add(time.Duration(x.gap[bd] * float64(time.Minute))); g.After(t) {
				t = g
			}
		}
	}
	return t.UTC(), true
}

// provenAt is when d proved boundary b, zero when not.
func provenAt(d *replay.Diagnosis, b model.Boundary) time.Time {
	name := b.String()
	for i := range d.Boundaries {
		if bs := &d.Boundaries[i]; bs.Name == name && bs.Proven {
			return bs.At
		}
	}
	return time.Time{}
}

// Forget drops the batches of business dates before d: a learner kept
// for baselines holds only their window.
func (l *Learner) Forget(d model.Date) {
	l.last = nil
	for name, p := range l.pipes {
		for k := range p.batches {
			if k.BusinessDate.Compare(d) < 0 {
				delete(p.batches, k)
			}
		}
		if len(p.batches) == 0 {
			delete(l.pipes, name)
		}
	}
}
