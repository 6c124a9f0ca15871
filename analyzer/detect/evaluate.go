package detect

import (
	"slices"
	"strings"
	"time"

	"github.com/handoff-dev/handoff/analyzer/batches"
	"github.com/handoff-dev/handoff/analyzer/replay"
	"github.com/handoff-dev/handoff/model"
)

// condition is one alertable condition a diagnosis shows.
type condition struct {
	kind     Kind
	name     string
	deadline time.Time
}

func (b *batch) find(fp uint64) int {
	for i := range b.findings() {
		if b.findings()[i].fp == fp {
			return i
		}
	}
	return -1
}

// evaluate diagnoses b as of safe, moves its findings through their
// lifecycle, re-arms its timer and closes it when it is done. It appends
// the findings to publish to out.
func (d *Detector) evaluate(b *batch, now, safe time.Time, out []Finding) []Finding {
	k := b.key()
	c := d.contractOf(b)
	diag := d.diagnose(b, c, safe)
	// A batch with no event as of safe whose date another attempt reached
	// (a declared re-run of it, or the scheduled batch a re-run re-runs):
	// nothing of it is missing.
	var arrived model.BatchKey
	if diag.Events == 0 && !c.Reruns.Off() {
		_, atts := batches.AttemptsOf(k, c, neighbours{d})
		for _, a := range atts {
			if a.Key != k {
				arrived = a.Key
				break
			}
		}
	}
	rerun := !arrived.IsZero()
	conds := conditions(b, &diag, rerun)
	if cd, ok := unusual(&diag, conds, rerun, safe); ok {
		conds = append(conds, cd)
	}
	if diag.Superseded() {
		// Another attempt speaks for the date: this one raises nothing,
		// and what it had open ends, naming the attempt that replaced it.
		conds = nil
	}

	root, rootBatch := rootOf(k, &diag)
	rootHash := hashID(root)
	emit := func(t *tracked, r resolution) {
		f := Finding{
			Root: root, RootBatch: rootBatch,
			Fingerprint: fmtFingerprint(t.fp), State: t.state, Kind: t.kind, Name: t.name, Batch: k,
			Status: diag.Status, Verdict: diag.Verdict.String(), Seq: int(t.seq),
			RaisedAt: timeOf(t.raised), ResolvedAt: timeOf(t.resolved), Deadline: timeOf(t.deadline), Lateness: r.lateness,
			ReportingDelay: r.delay, Resolution: r.note, EvidenceAsOf: safe, Diagnosis: diag,
		}
		if t.state == Resolved {
			switch {
			case diag.Superseded():
				f.SupersededBy = diag.Attempt.SupersededBy
				f.Resolution = "superseded by " + f.SupersededBy
			case rerun:
				f.SupersededBy = arrived.String()
				f.Resolution = "superseded by " + f.SupersededBy + ", an attempt of the same date"
			}
		}
		f.Severity, f.Owner, f.Labels = routing(c)
		f.Severity = severityOf(t.kind, c)
		f.For, f.HasFor = c.For, c.HasFor
		out = append(out, f)
	}
	start := len(out)
	active := make([]bool, len(b.findings()), len(b.findings())+len(conds))
	for _, cd := range conds {
		fp := fingerprint(k, cd.kind, cd.name)
		j := b.find(fp)
		if j < 0 {
			b.track(tracked{fp: fp, kind: cd.kind, name: cd.name})
			active = append(active, false)
			j = len(b.findings()) - 1
		}
		active[j] = true
		t := &b.findings()[j]
		switch {
		case t.state != Open:
			// New, or back after it was resolved: a new open record. (A
			// record remembered by a closed batch keeps only its
			// fingerprint and seq: the condition names it again.)
			t.kind, t.name = cd.kind, cd.name
			t.state, t.status, t.seq = Open, diag.Status, t.seq+1
			t.raised, t.resolved, t.deadline = msOf(now), 0, msOf(cd.deadline)
			emit(t, resolution{lateness: lateSince(safe, t.deadline)})
		case t.status != diag.Status || (t.root != 0 && t.root != rootHash):
			// Still open, the batch's status or its cause (the root it
			// is blocked by, or none) changed: an update.
			t.status, t.seq, t.root = diag.Status, t.seq+1, rootHash
			emit(t, resolution{lateness: lateSince(safe, t.deadline)})
		}
		t.root = rootHash
	}
	for j := range b.findings() {
		t := &b.findings()[j]
		if active[j] || t.state != Open {
			continue
		}
		t.state, t.status, t.seq, t.resolved = Resolved, diag.Status, t.seq+1, msOf(now)
		emit(t, resolvedLateness(t, &diag, safe))
	}
	// A boundary proven after its deadline leaves a resolved overdue
	// finding with its lateness, even when no evaluation saw it overdue
	// (a backlog, a restart): the record of lateness does not depend on
	// how often the detector looked.
	for i := range diag.Boundaries {
		bs := &diag.Boundaries[i]
		if !bs.Proven || !bs.Overdue {
			continue
		}
		fp := fingerprint(k, Overdue, bs.Name)
		if b.find(fp) >= 0 {
			continue
		}
		b.track(tracked{fp: fp, kind: Overdue, name: bs.Name, state: Resolved,
			status: diag.Status, seq: 1, raised: msOf(now), resolved: msOf(now), deadline: msOf(bs.Due)})
		emit(&b.findings()[len(b.findings())-1], resolution{lateness: bs.At.Sub(bs.Due)})
	}
	slices.SortFunc(out[start:], func(x, y Finding) int {
		if c := strings.Compare(string(x.Kind), string(y.Kind)); c != 0 {
			return c
		}
		return strings.Compare(x.Name, y.Name)
	})
	d.settle(b, &diag, rerun)
	return out
}

// rootOf is the incident a finding of batch k belongs to: the first root
// (in key order) of what blocks its diagnosis, or k itself when nothing
// does. It returns the incident's fingerprint and the root batch.
func rootOf(k model.BatchKey, diag *replay.Diagnosis) (string, string) {
	if diag.Blocked != nil && len(diag.Blocked.Roots) > 0 {
		rb := diag.Blocked.Roots[0].Batch
		if rk, err := model.ParseBatchKey(rb); err == nil {
			return RootFingerprint(rk), rb
		}
	}
	return RootFingerprint(k), k.String()
}

// conditions lists the alertable conditions of a diagnosis, in a fixed
// order: missing or overdue, failed, then the breaking anomalies in the
// replay's order. late is the overdue finding's business and
// continuity_gap the previous batch's: neither raises a finding of its own.
func conditions(b *batch, diag *replay.Diagnosis, rerun bool) []condition {
	var out []condition
	var first *replay.BoundaryState
	for i := range diag.Boundaries {
		if diag.Boundaries[i].Name == diag.FirstMissing {
			first = &diag.Boundaries[i]
		}
	}
	if diag.Events == 0 {
		// A batch the schedule expects, with no event at all: missing once
		// its first deadline passed, unless the date was delivered under
		// another batch id (a re-run).
		if b.expected && !rerun && first != nil && first.Overdue {
			out = append(out, condition{kind: Missing, name: diag.Verdict.String(), deadline: first.Due})
		}
		return out
	}
	if first != nil && first.Overdue {
		out = append(out, condition{kind: Overdue, name: first.Name, deadline: first.Due})
	}
	if diag.Status == replay.StatusFailed {
		out = append(out, condition{kind: Failed, name: diag.FirstMissing})
	}
	for _, a := range diag.Anomalies {
		if !a.Kind.Breaks() {
			continue
		}
		kind := Kind(a.Kind)
		if !slices.ContainsFunc(out, func(c condition) bool { return c.kind == kind }) {
			out = append(out, condition{kind: kind})
		}
	}
	return out
}

// lateSince is how late a batch is as of asOf against deadline (ms):
// never negative.
func lateSince(asOf time.Time, deadline int64) time.Duration {
	if deadline == 0 {
		return 0
	}
	return max(0, asOf.Sub(timeOf(deadline)))
}

// resolution is what a resolved record says of how late the batch was.
type resolution struct {
	lateness time.Duration
	// delay is the reporting delay of evidence that proved the boundary
	// (or the batch's first event) in time but reached the detector after
	// the deadline: the evidence time of the evaluation that folded it
	// minus the event's own time.
	delay time.Duration
	note  string
}

// resolvedLateness is how late the batch was when finding t ends: until
// the boundary was proven (overdue) or the first event came (missing);
// until the evidence time when the condition ended otherwise (a deadline
// that moved, a re-run under another batch id). Lateness is never
// negative: evidence whose own time is before the deadline, observed
// after it, was delivered on time and reported late, and the record says
// so with the reporting delay as its own figure.
func resolvedLateness(t *tracked, diag *replay.Diagnosis, safe time.Time) resolution {
	if t.deadline == 0 {
		return resolution{}
	}
	deadline := timeOf(t.deadline)
	proven := time.Time{}
	switch t.kind {
	case Overdue, Unusual:
		for i := range diag.Boundaries {
			if bs := &diag.Boundaries[i]; bs.Name == t.name && bs.Proven {
				proven = bs.At
			}
		}
	case Missing:
		if diag.Events > 0 {
			proven = diag.FirstEventAt
		}
	}
	switch {
	case proven.IsZero():
		return resolution{lateness: lateSince(safe, t.deadline)}
	case proven.After(deadline):
		return resolution{lateness: proven.Sub(deadline)}
	}
	delay := max(0, safe.Sub(proven))
	what := t.name
	if t.kind == Missing {
		what = "first event"
	}
	return resolution{delay: delay, note: "on time (" + what + " at " + proven.Format(time.RFC3339) +
		", deadline " + deadline.Format(time.RFC3339) + "), reported late by " + replay.FormatDuration(delay)}
}

// settle re-arms b's timer after an evaluation, or closes b: a delivered
// batch with no open finding and nothing folded beyond the evaluation
// keeps only its event-id hashes; an expected batch whose date was
// delivered under another batch id is dropped.
func (d *Detector) settle(b *batch, diag *replay.Diagnosis, rerun bool) {
	openFindings := slices.ContainsFunc(b.findings(), func(t tracked) bool { return t.state == Open })
	k := b.key()
	// Status, not verdict: a superseded attempt with a delivered verdict
	// and broken evidence stays open, as diagnose shows it.
	// An anomaly waiting for the allowed lateness keeps the batch open
	// until it is confirmed or undone.
	// A delivered batch with a required boundary still missing (a signal
	// that never reached the receiver, restored by an operator) stays
	// open too: its deadline can still pass, and diagnose will say so.
	done := diag.Status == replay.StatusDelivered && diag.FirstMissing == ""
	if !openFindings && diag.Events == b.len() && diag.Pending.IsZero() && (done || rerun) {
		d.timers.disarm(b)
		b.slot = slotGone
		d.open.del(b)
		if rerun {
			return
		}
		ids := make([]uint64, len(diag.Timeline))
		for i := range diag.Timeline {
			ids[i] = hashID(diag.Timeline[i].EventID)
		}
		slices.Sort(ids)
		cb := closedBatch{ids: slices.Compact(ids)}
		for _, t := range b.findings() {
			cb.done = append(cb.done, doneFinding{fp: t.fp, seq: t.seq})
		}
		d.closed[k] = cb
		return
	}
	// The next instant at which time alone changes the diagnosis: a
	// missing boundary becoming overdue, or the latest event folded ahead
	// of the evidence time (events folded ahead after the first Advance
	// are also in d.early, which fires at each of them).
	var next int64
	for i := range diag.Boundaries {
		bs := &diag.Boundaries[i]
		if !bs.Required || bs.Proven || bs.Overdue || bs.Due.IsZero() {
			continue
		}
		if ms := bs.Due.UnixMilli() + 1; next == 0 || ms < next {
			next = ms
		}
	}
	if ms := nextUnusual(diag, d.safe); ms != 0 && (next == 0 || ms < next) {
		next = ms
	}
	if !diag.Pending.IsZero() {
		// An anomaly waits for the allowed lateness to pass.
		if ms := diag.Pending.UnixMilli(); next == 0 || ms < next {
			next = ms
		}
	}
	d.wakes.add(next)
	if diag.Events < b.len() {
		if ms := d.thaw(b).LastEventAt().UnixMilli(); next == 0 || ms < next {
			next = ms
		}
	}
	d.timers.arm(b, next)
}

// expand puts the batches the contracts' schedules expect, from the
// calendar start to two days past safe's date (a business date can begin
// up to 14 hours before its UTC midnight), on the watch list. A batch
// already known (open, or closed) is left as it is.
func (d *Detector) expand(safe time.Time) {
	if safe.IsZero() {
		return
	}
	lo, to, ok := d.expectWindow(safe)
	if !ok {
		return
	}
	for _, p := range d.contracts.Pipelines() {
		d.expectPipeline(d.calendar, p, lo, to, d.contracts.For(p).Expected)
	}
}

// expectWindow is the business dates whose expected batches are watched
// as of safe, for contracts' calendars and learned ones alike: from the
// calendar start (or the retention horizon, when later) to two days past
// safe's date. It reports false before a calendar start is set.
func (d *Detector) expectWindow(safe time.Time) (lo, to model.Date, ok bool) {
	if d.from.IsZero() {
		return model.Date{}, model.Date{}, false
	}
	lo = d.from
	if d.horizon.Compare(lo) > 0 {
		lo = d.horizon
	}
	return lo, dateOf(safe).AddDays(2), true
}

// expectPipeline opens, as expected, the batches of pipeline p that
// expected lists from the day after the last date cal walked for p (lo at
// the earliest) through to, but for those another instance owns, held open
// or closed; cal then records that p was walked through to.
func (d *Detector) expectPipeline(cal map[string]model.Date, p string, lo, to model.Date, expected func(from, to model.Date) []model.BatchKey) {
	start := lo
	if last, ok := cal[p]; ok && last.AddDays(1).Compare(start) > 0 {
		start = last.AddDays(1)
	}
	if start.Compare(to) > 0 {
		return
	}
	for _, k := range expected(start, to) {
		if !d.owned(k) || d.open.get(k) != nil {
			continue
		}
		if _, ok := d.closed[k]; ok {
			continue
		}
		b := d.newBatch(k)
		b.expected = true
		d.markDirty(b)
	}
	cal[p] = to
}
