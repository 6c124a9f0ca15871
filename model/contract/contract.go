// Package contract describes a pipeline's delivery contract
// (docs/contracts.md): how names derive from a batch's identity, which boundaries are
// required, by when each is due, the row rules, the schedule and holidays
// that say which batches to expect and which came before, and the routing
// fields (owner, severity, labels) that alerts carry.
//
// Contracts are written as YAML, one file per pipeline (see Parse and
// LoadFS). A pipeline without a file gets Default: the whole ladder, the
// 24-hour default deadline, no schedule and no name templates.
package contract

import (
	"math"
	"sort"
	"time"

	"github.com/handoff-dev/handoff/model"
)

// DefaultDeadline is how long after the latest boundary event a missing
// boundary is due when the contract sets no deadline for it
// (docs/diagnosis.md, Deadlines).
const DefaultDeadline = 24 * time.Hour

// Schedule says how often a pipeline delivers a batch, and so which
// batches to expect and which precedes another for continuity checks. It is
// one of the named schedules below or a five-field cron expression as
// written in the contract (see Cron).
type Schedule string

// Schedules.
const (
	NoSchedule Schedule = ""
	Daily      Schedule = "daily"
	// Weekdays is a daily schedule that skips Saturdays and Sundays.
	Weekdays Schedule = "weekdays"
	// Hourly is 24 batches per business date, told apart by {hh}.
	Hourly Schedule = "hourly"
)

// Severities a contract may give its pipeline's alerts.
const (
	SeverityCritical = "critical"
	SeverityWarning  = "warning"
	SeverityInfo     = "info"
)

// DefaultSeverity is the severity of a contract that states none.
const DefaultSeverity = SeverityWarning

// Contract is one pipeline's delivery contract. The zero value is not
// useful; use Default or Parse.
type Contract struct {
	Pipeline string
	// Source names where the contract came from ("file.yaml"), or "" for
	// the default contract.
	Source string
	// Schedule is compiled by Parse; a contract built in code may set it
	// too (it is then compiled on use). Do not change it on a parsed one.
	Schedule Schedule
	// Location is the time zone of the schedule, batch starts and absolute
	// deadlines (UTC when unset).
	Location *time.Location
	// BatchID derives batch_id from the business date, such as
	// "{yyyymmdd}". The zero Template means batch ids are not derived.
	BatchID  Template
	Artifact Template // name of the data file, e.g. "x_{batch_id}.csv"
	Signal   Template // name of the completion signal, e.g. "x_{batch_id}.flag"
	// SignalContent says what the completion signal file holds: nothing
	// (SignalEmpty, the default) or a manifest of the batch's files, rows
	// and checksums (SignalManifest). Watchers read a manifest and compare
	// it with the files; restore-signal writes what the contract says.
	SignalContent SignalContent
	// OpenLineage maps a scheduler's OpenLineage run events to batches of
	// this pipeline; nil when the contract has no openlineage block.
	OpenLineage *OpenLineage
	Required    model.BoundarySet
	// Deadlines is indexed by boundary; a zero Deadline means the default
	// rule applies to that boundary.
	Deadlines [model.Consumed + 1]Deadline
	Rows      RowRule
	// Holidays are dates removed from the schedule's calendar: no batch is
	// expected on them and continuity skips them. Sorted, no repeats.
	Holidays []model.Date
	// Owner names who answers for the pipeline (a team or a person), for
	// alert routing; "" when the contract names none.
	Owner string
	// Severity is critical, warning or info; DefaultSeverity when unset.
	Severity string
	// Labels are free routing labels passed to every finding and alert.
	// Names match [a-zA-Z_][a-zA-Z0-9_]*; nil when the contract has none.
	Labels map[string]string
	// For is how long a finding of the pipeline must stay open before
	// notify pages for it, when HasFor (else notify's hold for the
	// severity applies; see docs/contracts.md, Routing). A finding
	// resolved within it never pages.
	For    time.Duration
	HasFor bool
	// Reruns says what a re-run's batch id looks like (zero:
	// DefaultReruns): such a batch is an attempt of its date (AttemptOf).
	Reruns Reruns
	// AllowedLateness is how much stream time an anomaly that depends on
	// the order of events must keep holding before it is reported, when
	// HasAllowedLateness (else DefaultAllowedLateness; see
	// AllowedLatenessOf). Deadlines are not delayed by it.
	AllowedLateness    time.Duration
	HasAllowedLateness bool
	// Upstreams are the pipelines whose batches this one waits for
	// (upstreams:, and openlineage.inputs once in a Set); nil when none.
	Upstreams []Upstream

	// cron is the compiled schedule of a parsed contract; a contract built
	// in code compiles its Schedule on use (see calendar).
	cron *Cron
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
	// Header says the artifact's first line is a header, not a row: file
	// probes (watch, restore-signal, verify) do not count it.
	Header bool
}

// SignalContent is what a completion signal file holds.
type SignalContent string

// Signal contents.
const (
	// SignalEmpty: the signal's existence is the declaration; it holds
	// nothing (a .flag or _SUCCESS file).
	SignalEmpty SignalContent = "empty"
	// SignalManifest: the signal holds a manifest (package model/manifest)
	// naming the batch, its files, rows and checksums.
	SignalManifest SignalContent = "manifest"
)

// Default returns the contract of a pipeline that has no contract file.
func Default(pipeline string) *Contract {
	return &Contract{
		Pipeline:      pipeline,
		Location:      time.UTC,
		Required:      model.AllBoundaries,
		Rows:          RowRule{Equal: true},
		Severity:      DefaultSeverity,
		SignalContent: SignalEmpty,
	}
}

// LabelNames returns the names of c.Labels, sorted, so that alerts and
// reports list labels in a stable order.
func (c *Contract) LabelNames() []string {
	if len(c.Labels) == 0 {
		return nil
	}
	names := make([]string, 0, len(c.Labels))
	for k := range c.Labels {
		names = append(names, k)
	}
	sort.Strings(names)
	return names
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

// ExpectedBatchID returns the batch id that derives from date, and false
// when the contract does not derive batch ids, or when the id names a time
// of day ({hh}, {mi}) and the schedule fires more than once a day: then the
// date alone does not say which batch (see Expected).
func (c *Contract) ExpectedBatchID(pipeline string, date model.Date) (string, bool) {
	if c.BatchID.IsZero() {
		return "", false
	}
	b, ok := c.AppendExpectedBatchID(make([]byte, 0, len(c.BatchID.text)+len(pipeline)+10), pipeline, date)
	if !ok {
		return "", false
	}
	return string(b), true
}

// AppendExpectedBatchID appends ExpectedBatchID(pipeline, date) to b, and
// returns b unchanged and false when there is none: the replay renders
// every name of a batch into one allocation.
func (c *Contract) AppendExpectedBatchID(b []byte, pipeline string, date model.Date) ([]byte, bool) {
	if c.BatchID.IsZero() {
		return b, false
	}
	if !c.BatchID.usesTime() {
		return c.BatchID.AppendRender(b, model.BatchKey{Pipeline: pipeline, BusinessDate: date}), true
	}
	cal, ok := c.calendar()
	if !ok {
		return b, false
	}
	hh, okH := cal.singleHour()
	mi, okM := cal.singleMinute()
	if !okH || !okM {
		return b, false
	}
	return c.BatchID.appendAt(b, model.BatchKey{Pipeline: pipeline, BusinessDate: date}, hh, mi), true
}

// ArtifactName returns the data file name that derives from key, and false
// when the contract has no artifact template, or the template names a time
// of day that key's batch id does not tell.
func (c *Contract) ArtifactName(key model.BatchKey) (string, bool) {
	return c.render(c.Artifact, key)
}

// SignalName returns the completion signal name that derives from key, and
// false when the contract has no signal template, or the template names a
// time of day that key's batch id does not tell.
func (c *Contract) SignalName(key model.BatchKey) (string, bool) {
	return c.render(c.Signal, key)
}

// AppendArtifactName appends ArtifactName(key) to b, and returns b
// unchanged and false when there is none.
func (c *Contract) AppendArtifactName(b []byte, key model.BatchKey) ([]byte, bool) {
	return c.appendRender(b, c.Artifact, key)
}

// AppendSignalName appends SignalName(key) to b, and returns b unchanged
// and false when there is none.
func (c *Contract) AppendSignalName(b []byte, key model.BatchKey) ([]byte, bool) {
	return c.appendRender(b, c.Signal, key)
}

func (c *Contract) render(t Template, key model.BatchKey) (string, bool) {
	if t.IsZero() {
		return "", false
	}
	if !t.usesTime() {
		return t.Render(key), true
	}
	hh, mi, ok := c.slotOf(key)
	if !ok {
		return "", false
	}
	return t.renderAt(key, hh, mi), true
}

func (c *Contract) appendRender(b []byte, t Template, key model.BatchKey) ([]byte, bool) {
	if t.IsZero() {
		return b, false
	}
	if !t.usesTime() {
		return t.AppendRender(b, key), true
	}
	hh, mi, ok := c.slotOf(key)
	if !ok {
		return b, false
	}
	return t.appendAt(b, key, hh, mi), true
}

// DeadlineKind says how a deadline is measured.
type DeadlineKind int8

// Deadline kinds.
const (
	// NoDeadline: the default rule, 24 hours after the latest boundary
	// event; for a batch with no events, 24 hours after its Start.
	NoDeadline DeadlineKind = iota
	// Absolute: a number of days after the business date, at a time of day,
	// in the contract's time zone ("business_date + 1d 06:00").
	Absolute
	// Relative: a duration after the previous required boundary was proven
	// (or, while it is not, after that boundary's own deadline).
	Relative
	// AfterStart: a duration after the batch's period starts (see Start):
	// "start + 90m". The form for hourly and cron batches, whose
	// business date alone does not say when they should run.
	AfterStart
)

// Deadline says by when a boundary is due.
type Deadline struct {
	Kind DeadlineKind
	// Days and TimeOfDay place an Absolute deadline: midnight of the
	// business date plus Days days, plus TimeOfDay.
	Days      int
	TimeOfDay time.Duration
	// After is a Relative deadline's distance from the previous boundary,
	// or an AfterStart deadline's from the batch's start.
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
	if !b.Valid() {
		return time.Time{}, false
	}
	due, ok := c.Dues(key, proven, latest)
	return due[b], ok[b]
}

// Dues is Due for every boundary at once, indexed by boundary (ok[b] is
// false where no deadline can be computed yet). It computes each deadline
// once, in ladder order, so a relative deadline reuses the one before it:
// the replay asks for all seven for every batch.
//
// For a batch with no events (proven always false, latest the zero time)
// the first required boundary still gets a deadline whenever the batch's
// Start is known: that is when an expected batch that never showed up is
// missing. The default rule then counts 24 hours from Start.
func (c *Contract) Dues(key model.BatchKey, proven ProvenAt, latest time.Time) (due [model.Consumed + 1]time.Time, ok [model.Consumed + 1]bool) {
	var days Days
	return c.DuesWith(&days, key, proven, latest)
}

// Days carries the midnights DuesWith works out from one call to the
// next: a caller that asks for the deadlines of batch after batch (a
// replay of a pipeline's history, date after date) reaches a date's
// midnight from the last one's by whole days while the zone's offset stays
// the same, instead of by the zone-aware arithmetic of WallClock. The
// zero Days is ready; a Days serves any contract (it remembers its zone);
// it is not safe for concurrent use.
type Days struct{ dc dayCache }

// DuesWith is Dues, with the midnights of days carried over: the
// deadlines are the same.
func (c *Contract) DuesWith(days *Days, key model.BatchKey, proven ProvenAt, latest time.Time) (due [model.Consumed + 1]time.Time, ok [model.Consumed + 1]bool) {
	loc := c.Location
	if loc == nil {
		loc = time.UTC
	}
	day := &days.dc
	// The start is worked out once, and only by the deadlines that need
	// it: an hourly batch reads it from its batch id.
	var (
		start             time.Time
		hasStart, started bool
	)
	startOf := func() (time.Time, bool) {
		if !started {
			start, hasStart = c.Start(key)
			started = true
		}
		return start, hasStart
	}
	// The default rule gives every boundary it applies to the same time:
	// added once.
	var latestDue time.Time
	if !latest.IsZero() {
		latestDue = latest.Add(DefaultDeadline)
	}
	for _, b := range model.Ladder {
		d := c.Deadlines[b]
		switch d.Kind {
		case Absolute:
			due[b], ok[b] = day.at(key.BusinessDate.AddDays(d.Days), d.TimeOfDay, loc), true
		case AfterStart:
			if s, has := startOf(); has {
				due[b], ok[b] = s.Add(d.After), true
			}
		case Relative:
			prev := c.previousRequired(b)
			if prev == model.NoBoundary {
				if s, has := startOf(); has {
					due[b], ok[b] = s.Add(d.After), true
				} else {
					due[b], ok[b] = day.at(key.BusinessDate, 0, loc).Add(d.After), true
				}
			} else if t, p := proven(prev); p {
				due[b], ok[b] = t.Add(d.After), true
			} else if ok[prev] {
				due[b], ok[b] = due[prev].Add(d.After), true
			}
		default:
			if !latest.IsZero() {
				due[b], ok[b] = latestDue, true
			} else if s, has := startOf(); has {
				due[b], ok[b] = s.Add(DefaultDeadline), true
			}
		}
	}
	return due, ok
}

// dayCache remembers the last midnight it computed: a contract's absolute
// deadlines mostly fall on one day, and a zone-aware time.Date is the
// costly part of a deadline.
type dayCache struct {
	loc      *time.Location
	date     model.Date
	midnight time.Time
	// exact is false where midnight does not exist (a zone that skips
	// 00:00 on a daylight-saving day): then every time is built by hand.
	exact bool
	set   bool
	// [from, to) is the span, in Unix seconds, in which loc keeps
	// midnight's offset off (to is meaningless without hasTo: no later
	// change is known).
	from, to int64
	hasTo    bool
	off      int
}

// at returns the wall-clock time tod after midnight of date in loc, by
// WallClock's rule. The fast path adds tod to midnight when the offset at
// the result is midnight's: then the clock reads tod there, and it is the
// first instant that does (a repeated time under the offset before the
// change).
func (dc *dayCache) at(date model.Date, tod time.Duration, loc *time.Location) time.Time {
	if !dc.set || dc.date != date || dc.loc != loc {
		dc.move(date, loc)
	}
	t := dc.midnight.Add(tod)
	if loc == time.UTC {
		return t
	}
	if dc.exact && dc.keeps(t.Unix()) {
		return t // midnight's offset, known without a look-up
	}
	_, off0 := dc.midnight.Zone()
	if _, off := t.Zone(); off == off0 && dc.exact {
		return t
	}
	return WallClock(date, tod, loc)
}

// keeps reports whether loc has midnight's offset at Unix second sec.
func (dc *dayCache) keeps(sec int64) bool {
	return sec >= dc.from && (!dc.hasTo || sec < dc.to)
}

// move makes date, in loc, the day dc remembers. From a remembered exact
// midnight, the new one is whole days away when the offset holds from 30
// hours (and the offset) before it to as long after: WallClock reads the
// zone only there, finds that one offset everywhere, and so returns that
// very instant.
func (dc *dayCache) move(date model.Date, loc *time.Location) {
	if dc.set && dc.loc == loc && dc.exact && loc != time.UTC {
		t := dc.midnight.Add(time.Duration(date.DaysSinceEpoch()-dc.date.DaysSinceEpoch()) * 24 * time.Hour)
		margin := int64(30*60*60) + int64(max(dc.off, -dc.off))
		if sec := t.Unix(); dc.keeps(sec-margin) && dc.keeps(sec+margin) {
			dc.date, dc.midnight = date, t
			return
		}
	}
	dc.loc, dc.date, dc.midnight, dc.set = loc, date, WallClock(date, 0, loc), true
	h, m, s := dc.midnight.Clock()
	dc.exact = h == 0 && m == 0 && s == 0
	start, end := dc.midnight.ZoneBounds()
	_, dc.off = dc.midnight.Zone()
	dc.from, dc.to, dc.hasTo = math.MinInt64, end.Unix(), !end.IsZero()
	if !start.IsZero() {
		dc.from = start.Unix()
	}
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
