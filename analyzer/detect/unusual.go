package detect

import (
	"time"

	"github.com/handoff-dev/handoff/analyzer/learn"
	"github.com/handoff-dev/handoff/analyzer/replay"
	"github.com/handoff-dev/handoff/model"
	"github.com/handoff-dev/handoff/model/contract"
)

// Unusual: a boundary not yet proven is later than its learned baseline's
// high quantile (learn.WarnQuantile) by learn.WarnGrace and not yet past
// its deadline: an
// early warning, severity info, resolved when the boundary arrives (or
// when another finding of the batch takes over). Name is the boundary;
// Deadline is the instant the warning fired at (UsuallyBy plus the grace).
const Unusual Kind = "unusual"

// Baselines turns on the early warning: the detector learns each
// pipeline's arrivals from the events it observes (learn.Learner, the
// window of Days business dates) and, once per UTC day, the baselines in
// force (learn.BaselineAsOf), the same a `handoff diagnose` or
// `backfill` of the same events computes for an as-of of that day.
type Baselines struct {
	// Days is the window (0: learn.DefaultBaselineDays).
	Days int
	// Options are the learner's (candidate zones, minimum history).
	Options learn.Options
}

// baseState is the detector's learning: the learner fed by Observe, the
// expectations in force, and how far the learned calendar was expanded.
type baseState struct {
	cfg      Baselines
	learner  *learn.Learner
	exp      *learn.Expectations
	asOf     time.Time
	calendar map[string]model.Date
}

func newBaseState(cfg *Baselines) *baseState {
	if cfg == nil {
		return nil
	}
	if cfg.Days <= 0 {
		cfg.Days = learn.DefaultBaselineDays
	}
	return &baseState{cfg: *cfg, learner: learn.New(), calendar: map[string]model.Date{}}
}

// learnEvent feeds e to the learner (no-op without baselines).
func (d *Detector) learnEvent(e *model.Event) {
	if d.base != nil {
		d.base.learner.Add(e)
	}
}

// refreshBaselines learns the baselines in force at safe when the UTC day
// changed, forgets the history before their window, and marks every open
// batch for evaluation under them; then it puts the batches the learned
// schedules expect of pipelines without a contract on the watch list.
func (d *Detector) refreshBaselines(safe time.Time) {
	s := d.base
	if s == nil || safe.IsZero() {
		return
	}
	if asOf := learn.BaselineAsOf(safe); !asOf.Equal(s.asOf) {
		s.asOf = asOf
		s.learner.Forget(dateOf(asOf).AddDays(-(s.cfg.Days - 1)))
		s.exp = s.learner.Expect(asOf, s.cfg.Days, s.cfg.Options)
		for b := range d.open.all() {
			d.markDirty(b)
		}
	}
	lo, to, ok := d.expectWindow(safe)
	if !ok {
		return
	}
	for _, p := range s.exp.Pipelines() {
		if !d.contracts.For(p).IsDefault() {
			continue // the contract's own calendar speaks
		}
		d.expectPipeline(s.calendar, p, lo, to, s.exp.Of(p).BatchesBetween)
	}
}

// annotate writes the baselines in force into a diagnosis of batch k.
func (d *Detector) annotate(diag *replay.Diagnosis, k model.BatchKey) {
	if d.base != nil {
		d.base.exp.Of(k.Pipeline).Annotate(diag, k)
	}
}

// unusual returns the early-warning condition of a diagnosis (annotated
// with its baselines) as of safe, given the other conditions found.
func unusual(diag *replay.Diagnosis, others []condition, rerun bool, safe time.Time) (condition, bool) {
	bs, ok := UnusualBoundary(diag, safe)
	if !ok || len(others) > 0 || rerun {
		return condition{}, false
	}
	return condition{kind: Unusual, name: bs.Name, deadline: bs.UsuallyBy.Add(learn.WarnGrace)}, true
}

// UnusualBoundary is the early-warning rule, the same wherever a
// diagnosis is judged: a diagnosis annotated with baselines (learn) shows
// an unusual boundary as of asOf when the lowest required boundary not
// yet proven that has a baseline is later than it (asOf after UsuallyBy
// plus learn.WarnGrace),
// no boundary is overdue, the batch is not superseded, failed or
// delivered, and the boundary's deadline (if any) has not passed.
func UnusualBoundary(diag *replay.Diagnosis, asOf time.Time) (replay.BoundaryState, bool) {
	if diag.Baseline == "" || diag.Superseded() || diag.Status == replay.StatusFailed || diag.Status == replay.StatusBroken {
		return replay.BoundaryState{}, false
	}
	if diag.Status == replay.StatusDelivered && diag.FirstMissing == "" {
		return replay.BoundaryState{}, false
	}
	var low *replay.BoundaryState
	for i := range diag.Boundaries {
		bs := &diag.Boundaries[i]
		if bs.Overdue {
			return replay.BoundaryState{}, false
		}
		if low == nil && bs.Required && !bs.Proven && !bs.UsuallyBy.IsZero() {
			low = bs
		}
	}
	if low == nil || !asOf.After(low.UsuallyBy.Add(learn.WarnGrace)) || (!low.Due.IsZero() && asOf.After(low.Due)) {
		return replay.BoundaryState{}, false
	}
	return *low, true
}

// nextUnusual is the instant after which the early warning of diag may
// begin (Unix ms), 0 when none is ahead.
func nextUnusual(diag *replay.Diagnosis, safe time.Time) int64 {
	if diag.Baseline == "" {
		return 0
	}
	for i := range diag.Boundaries {
		bs := &diag.Boundaries[i]
		if bs.Required && !bs.Proven && !bs.UsuallyBy.IsZero() {
			w := bs.UsuallyBy.Add(learn.WarnGrace)
			if w.Before(safe) {
				return 0
			}
			return w.UnixMilli() + 1
		}
	}
	return 0
}

// severityOf is a finding's severity: the contract's, but info for an
// early warning, which must never page.
func severityOf(kind Kind, c *contract.Contract) string {
	if kind == Unusual {
		return contract.SeverityInfo
	}
	return c.Severity
}
