package batches

import (
	"time"

	"github.com/handoff-dev/handoff/analyzer/replay"
	"github.com/handoff-dev/handoff/model"
	"github.com/handoff-dev/handoff/model/contract"
)

// An expected batch is one the contract's schedule expects (its calendar:
// contract.Expected, holidays skipped) on a business date on or after the
// pipeline's first known date. One with no event at all is a batch too:
// `handoff diagnose`, backfill and the batch pages report it, and the
// streaming detector raises a missing finding for it, under one rule
// (Absent), once its first deadline has passed and unless a re-run of its
// date under another batch id stands in for it (StandIn). Its diagnosis is
// that of an empty state (replay.NewState): verdict not_produced, with the
// continuity and heartbeat context every other batch gets.

// Absent evaluates batch k, which has no event, as an expected batch as of
// asOf, and reports whether it is reported as absent: the schedule
// expects it (c.Expected of its date holds it), no re-run of its date
// stands in for it, and its first missing boundary is overdue. The
// caller has checked that k's date is within the calendar (on or after the
// pipeline's first date).
func Absent(k model.BatchKey, c *contract.Contract, asOf time.Time, n Neighbours, alive []replay.Heartbeat) (replay.Diagnosis, bool) {
	if !expects(c, k) {
		return replay.Diagnosis{}, false
	}
	// A declared re-run of the date with events stands in for it: the
	// date arrived under another attempt.
	if !c.Reruns.Off() && len(n.Reruns(k)) > 0 {
		return replay.Diagnosis{}, false
	}
	st := replay.NewState(k)
	d := st.Evaluate(c, asOf, replay.Context{Previous: PreviousOf(k, c, n), Alive: alive})
	return d, Overdue(&d)
}

// Overdue reports whether the first missing boundary of d is past its
// deadline: for a batch with no event, the moment it is missing.
func Overdue(d *replay.Diagnosis) bool {
	for i := range d.Boundaries {
		if d.Boundaries[i].Name == d.FirstMissing {
			return d.Boundaries[i].Overdue
		}
	}
	return false
}

// expects reports whether c's calendar holds k.
func expects(c *contract.Contract, k model.BatchKey) bool {
	for _, o := range c.Expected(k.BusinessDate, k.BusinessDate) {
		if o == k {
			return true
		}
	}
	return false
}

// CalendarEnd is the last business date whose expected batches can be
// absent as of asOf: two days past asOf's UTC date (a business date can
// begin up to 14 hours before its UTC midnight, and no deadline of a later
// date can have passed). The streaming detector expands its calendar to
// the same date.
func CalendarEnd(asOf time.Time) model.Date {
	u := asOf.UTC()
	return model.Date{Year: u.Year(), Month: u.Month(), Day: u.Day()}.AddDays(2)
}

// calendarRange returns the dates whose expected batches a pipeline whose
// history starts at first reports, up to to (zero: CalendarEnd(asOf)), and
// false when there are none.
func calendarRange(first, to model.Date, asOf time.Time) (model.Date, model.Date, bool) {
	end := CalendarEnd(asOf)
	if !to.IsZero() && to.Compare(end) < 0 {
		end = to
	}
	if first.IsZero() || first.Compare(end) > 0 {
		return first, end, false
	}
	return first, end, true
}
