// Package contract describes a pipeline's delivery contract (design.md
// section 4): how names derive from a batch's identity, which boundaries are
// required, by when each is due, the row rules, and the schedule that says
// which batch came before.
//
// Contracts are written as YAML, one file per pipeline (see Parse and
// LoadFS). A pipeline without a file gets Default: the whole ladder, the
// 24-hour default deadline, no schedule and no name templates.
package contract

import (
	"time"

	"github.com/handoff-dev/handoff/model"
)

// DefaultDeadline is how long after the latest boundary event a missing
// boundary is due when the contract sets no deadline for it (design.md
// section 5).
const DefaultDeadline = 24 * time.Hour

// Schedule says how often a pipeline delivers a batch, and so which batch
// precedes another for continuity checks.
type Schedule string

// Schedules.
const (
	NoSchedule Schedule = ""
	Daily      Schedule = "daily"
	// Weekdays is a daily schedule that skips Saturdays and Sundays.
	Weekdays Schedule = "weekdays"
)

// Contract is one pipeline's delivery contract. The zero value is not
// useful; use Default or Parse.
type Contract struct {
	Pipeline string
	// Source names where the contract came from ("file.yaml"), or "" for
	// the default contract.
	Source   string
	Schedule Schedule
	// Location is the time zone of absolute deadlines (UTC when unset).
	Location *time.Location
	// BatchID derives batch_id from the business date, such as
	// "{yyyymmdd}". The zero Template means batch ids are not derived.
	BatchID  Template
	Artifact Template // name of the data file, e.g. "x_{batch_id}.csv"
	Signal   Template // name of the completion signal, e.g. "x_{batch_id}.flag"
	Required model.BoundarySet
	// Deadlines is indexed by boundary; a zero Deadline means the default
	// rule applies to that boundary.
	Deadlines [model.Consumed + 1]Deadline
	Rows      RowRule
}

// RowRule states the row checks of a contract.
type RowRule struct {
	// Min is the fewest rows a finalized artifact may have, when HasMin.
	Min    int64
	HasMin bool
	// Equal requires the finalized, declared (signal, transfer,
	// identification) and consumed row counts to agree. It is on by default:
	// a delivery that loses rows is not a delivery.
	Equal bool
}

// Default returns the contract of a pipeline that has no contract file.
func Default(pipeline string) *Contract {
	return &Contract{
		Pipeline: pipeline,
		Location: time.UTC,
		Required: model.AllBoundaries,
		Rows:     RowRule{Equal: true},
	}
}

// IsDefault reports whether c is a default contract (no file behind it).
func (c *Contract) IsDefault() bool { return c.Source == "" }

// Name returns how reports refer to the contract: its source, or "default".
func (c *Contract) Name() string {
	if c.Source == "" {
		return "default"
	}
	return c.Source
}

// Requires reports whether boundary b is required by the contract.
func (c *Contract) Requires(b model.Boundary) bool { return c.Required.Has(b) }

// ExpectedBatchID returns the batch id that derives from date, and false when
// the contract does not derive batch ids.
func (c *Contract) ExpectedBatchID(pipeline string, date model.Date) (string, bool) {
	if c.BatchID.IsZero() {
		return "", false
	}
	return c.BatchID.Render(model.BatchKey{Pipeline: pipeline, BusinessDate: date}), true
}

// ArtifactName returns the data file name that derives from key, and false
// when the contract has no artifact template.
func (c *Contract) ArtifactName(key model.BatchKey) (string, bool) {
	if c.Artifact.IsZero() {
		return "", false
	}
	return c.Artifact.Render(key), true
}

// SignalName returns the completion signal name that derives from key, and
// false when the contract has no signal template.
func (c *Contract) SignalName(key model.BatchKey) (string, bool) {
	if c.Signal.IsZero() {
		return "", false
	}
	return c.Signal.Render(key), true
}

// Previous returns the batch that precedes key under the schedule, and false
// when the contract has no schedule (so continuity cannot be checked) or the
// batch id of the previous date cannot be derived.
func (c *Contract) Previous(key model.BatchKey) (model.BatchKey, bool) {
	var d model.Date
	switch c.Schedule {
	case Daily:
		d = key.BusinessDate.AddDays(-1)
	case Weekdays:
		d = key.BusinessDate.AddDays(-1)
		for {
			wd := d.In(time.UTC).Weekday()
			if wd != time.Saturday && wd != time.Sunday {
				break
			}
			d = d.AddDays(-1)
		}
	default:
		return model.BatchKey{}, false
	}
	id, ok := c.ExpectedBatchID(key.Pipeline, d)
	if !ok {
		// Without a derivation the batch id of a daily pipeline is taken to
		// be its compact date, the convention of the seed case.
		id = d.Compact()
	}
	return model.BatchKey{Pipeline: key.Pipeline, BusinessDate: d, BatchID: id}, true
}

// DeadlineKind says how a deadline is measured.
type DeadlineKind int8

// Deadline kinds.
const (
	// NoDeadline: the default rule, 24 hours after the latest boundary event.
	NoDeadline DeadlineKind = iota
	// Absolute: a number of days after the business date, at a time of day,
	// in the contract's time zone ("business_date + 1d 06:00").
	Absolute
	// Relative: a duration after the previous required boundary was proven
	// (or, while it is not, after that boundary's own deadline).
	Relative
)

// Deadline says by when a boundary is due.
type Deadline struct {
	Kind DeadlineKind
	// Days and TimeOfDay place an Absolute deadline: midnight of the
	// business date plus Days days, plus TimeOfDay.
	Days      int
	TimeOfDay time.Duration
	// After is a Relative deadline's distance from the previous boundary.
	After time.Duration
	// Text is the deadline as written in the contract, for reports.
	Text string
}

// ProvenAt reports when a boundary was first proven for a batch.
type ProvenAt func(model.Boundary) (time.Time, bool)

// Due returns when boundary b of the batch key is due, and false when no
// deadline can be computed yet (default rule with no events at all).
//
// latest is the time of the batch's latest boundary event (or of its latest
// event, when no boundary is proven), the anchor of the default rule.
func (c *Contract) Due(b model.Boundary, key model.BatchKey, proven ProvenAt, latest time.Time) (time.Time, bool) {
	return c.due(b, key, proven, latest, 0)
}

func (c *Contract) due(b model.Boundary, key model.BatchKey, proven ProvenAt, latest time.Time, depth int) (time.Time, bool) {
	if !b.Valid() || depth > len(model.Ladder) {
		return time.Time{}, false
	}
	d := c.Deadlines[b]
	switch d.Kind {
	case Absolute:
		loc := c.Location
		if loc == nil {
			loc = time.UTC
		}
		// Build the wall-clock time rather than adding TimeOfDay to midnight:
		// on a daylight-saving day, midnight + 6h is not 06:00.
		day := key.BusinessDate.AddDays(d.Days)
		tod := d.TimeOfDay
		h, m, sec := tod/time.Hour, tod%time.Hour/time.Minute, tod%time.Minute/time.Second
		return time.Date(day.Year, day.Month, day.Day, int(h), int(m), int(sec), int(tod%time.Second), loc), true
	case Relative:
		prev := c.previousRequired(b)
		if prev == model.NoBoundary {
			loc := c.Location
			if loc == nil {
				loc = time.UTC
			}
			return key.BusinessDate.In(loc).Add(d.After), true
		}
		if t, ok := proven(prev); ok {
			return t.Add(d.After), true
		}
		t, ok := c.due(prev, key, proven, latest, depth+1)
		if !ok {
			return time.Time{}, false
		}
		return t.Add(d.After), true
	}
	if latest.IsZero() {
		return time.Time{}, false
	}
	return latest.Add(DefaultDeadline), true
}

// previousRequired returns the required boundary before b, or NoBoundary.
func (c *Contract) previousRequired(b model.Boundary) model.Boundary {
	for p := b - 1; p >= model.Produced; p-- {
		if c.Required.Has(p) {
			return p
		}
	}
	return model.NoBoundary
}
