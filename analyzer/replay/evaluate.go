package replay

import (
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/handoff-dev/handoff/model"
	"github.com/handoff-dev/handoff/model/contract"
)

// Context is what the caller knows beyond the batch's own events: its
// neighbours and the processes of its pipeline. The zero Context is valid
// and means "nothing known"; a pure per-batch replay uses it.
type Context struct {
	Previous Previous
	// Alive lists the latest heartbeat (as of the evaluation) of each
	// process of the pipeline. A heartbeat proves a process runs, not that
	// it handled this batch.
	Alive []Heartbeat
}

// Previous is what is known of the batch before this one under the
// pipeline's schedule. When Checked is false (no schedule, or nothing known
// before this batch) no continuity_gap is reported.
type Previous struct {
	Checked bool
	Key     model.BatchKey
	// Seen is whether the previous batch has any events; Delivered whether
	// its verdict is delivered.
	Seen      bool
	Delivered bool
	// Verdict is the previous batch's verdict, when Seen.
	Verdict string
}

// Heartbeat is the latest process.heartbeat of one process.
type Heartbeat struct {
	System    model.System
	Component string
	At        time.Time
	EventID   string
}

// Replay folds events into a State and evaluates it: the diagnosis of one
// batch as of asOf. Events of other batches and heartbeats are ignored.
func Replay(events []model.Event, c *contract.Contract, asOf time.Time, ctx Context) Diagnosis {
	var s State
	for i := range events {
		s.Step(&events[i])
	}
	return s.Evaluate(c, asOf, ctx)
}

// view is a State as of a time: its records up to as-of, sorted, and
// indexed by type.
type view struct {
	key    model.BatchKey
	c      *contract.Contract
	asOf   time.Time
	recs   []*record
	byType [len(model.EventTypes)][]*record
	proven [model.Consumed + 1][]*record
	latest int64 // ms of the latest boundary event, or of the latest event
}

func typeIndex(t model.EventType) int {
	for i, et := range model.EventTypes {
		if et == t {
			return i
		}
	}
	return -1
}

func (v *view) of(t model.EventType) []*record { return v.byType[typeIndex(t)] }

func newView(s *State, c *contract.Contract, asOf time.Time) *view {
	v := &view{key: s.key, c: c, asOf: asOf}
	limit := asOf.UnixMilli()
	v.recs = make([]*record, 0, len(s.records))
	for i := range s.records {
		if s.records[i].ms <= limit {
			v.recs = append(v.recs, &s.records[i])
		}
	}
	sort.Slice(v.recs, func(i, j int) bool {
		a, b := v.recs[i], v.recs[j]
		if a.ms != b.ms {
			return a.ms < b.ms
		}
		return a.id < b.id
	})
	var latestAny int64
	for _, r := range v.recs {
		if ti := typeIndex(r.typ); ti >= 0 {
			v.byType[ti] = append(v.byType[ti], r)
		}
		if b := r.typ.Proves(); b != model.NoBoundary {
			v.proven[b] = append(v.proven[b], r)
			v.latest = max(v.latest, r.ms)
		}
		latestAny = max(latestAny, r.ms)
	}
	if v.latest == 0 {
		v.latest = latestAny
	}
	return v
}

func ids(rs ...[]*record) []string {
	n := 0
	for _, l := range rs {
		n += len(l)
	}
	out := make([]string, 0, n)
	for _, l := range rs {
		for _, r := range l {
			out = append(out, r.id)
		}
	}
	return out
}

func (v *view) provenAt(b model.Boundary) (time.Time, bool) {
	if !b.Valid() || len(v.proven[b]) == 0 {
		return time.Time{}, false
	}
	return v.proven[b][0].at(), true
}

// Evaluate returns the diagnosis of the state's batch as of asOf under
// contract c. Events later than asOf are not read: a diagnosis as of a past
// time says what could have been known then. c must not be nil; use
// contract.Default for a pipeline without a contract file.
func (s *State) Evaluate(c *contract.Contract, asOf time.Time, ctx Context) Diagnosis {
	asOf = asOf.UTC().Truncate(time.Millisecond)
	v := newView(s, c, asOf)
	d := Diagnosis{
		Batch:        s.key.String(),
		Pipeline:     s.key.Pipeline,
		BusinessDate: s.key.BusinessDate.String(),
		BatchID:      s.key.BatchID,
		AsOf:         asOf,
		Contract:     c.Name(),
		Events:       len(v.recs),
	}
	if len(v.recs) > 0 {
		d.FirstEventAt = v.recs[0].at()
		d.LastEventAt = v.recs[len(v.recs)-1].at()
	}
	verdict := v.hypotheses(&d)
	first := v.boundaries(&d)
	v.anomalies(&d, first, ctx.Previous)
	d.Status = v.status(&d, verdict, first)
	v.sides(&d, ctx)
	d.NextStep = v.nextStep(&d, verdict, first)
	return d
}

// Verdict returns only the verdict of the state's batch as of asOf: the
// cheap part of Evaluate, for callers that need a neighbour's verdict to
// build a Context.
func (s *State) Verdict(c *contract.Contract, asOf time.Time) model.Hypothesis {
	v := newView(s, c, asOf.UTC().Truncate(time.Millisecond))
	var d Diagnosis
	return v.hypotheses(&d)
}

// hypotheses fills d.Hypotheses and d.Verdict by the rule of design.md
// section 2, and returns the verdict.
func (v *view) hypotheses(d *Diagnosis) model.Hypothesis {
	verdict := model.Delivered
	d.Hypotheses = make([]Hypothesis, 0, len(model.Hypotheses))
	for _, h := range model.Hypotheses {
		hb := h.Boundary()
		hyp := Hypothesis{Name: h.String()}
		switch {
		case !v.c.Requires(hb):
			hyp.Verdict = Excluded
			hyp.Evidence = []string{}
			hyp.Reason = "the contract does not require the " + hb.String() + " boundary"
		case verdict != model.Delivered:
			// A later stretch than the one where delivery stopped: nothing
			// speaks for or against it yet.
			hyp.Verdict = NoEvidence
			hyp.Evidence = []string{}
			hyp.Reason = "downstream of " + verdict.String() + ": no evidence either way"
		default:
			var ex [][]*record
			var names []string
			for b := hb; b <= model.Consumed; b++ {
				if h.ExcludedBy(b) && len(v.proven[b]) > 0 {
					ex = append(ex, v.proven[b])
					names = append(names, b.String())
				}
			}
			if len(ex) > 0 {
				hyp.Verdict = Excluded
				hyp.Evidence = ids(ex...)
				hyp.Reason = "excluded by proof of " + strings.Join(names, ", ")
				break
			}
			verdict = h
			hyp.Verdict = Supported
			hyp.Evidence, hyp.Reason = v.support(h)
		}
		d.Hypotheses = append(d.Hypotheses, hyp)
	}
	d.Verdict = verdict.String()
	return verdict
}

// support returns the evidence for the hypothesis where delivery stopped:
// proof of the stretch before it, and the context events of its own step.
func (v *view) support(h model.Hypothesis) ([]string, string) {
	switch h {
	case model.NotProduced:
		ev := ids(v.of(model.JobStarted), v.of(model.JobFailed))
		if len(v.of(model.JobFailed)) > 0 {
			return ev, "no job SUCCESS and no later evidence; the job failed"
		}
		if len(ev) > 0 {
			return ev, "the job started but no SUCCESS and no later evidence is recorded"
		}
		return ev, "no producer evidence at all for this batch"
	case model.NotFinal:
		return ids(v.proven[model.Produced], v.of(model.ArtifactStaged)),
			"the job reported SUCCESS but no final artifact is recorded"
	case model.NotTransferred:
		return ids(v.proven[model.Finalized], v.proven[model.Signaled]),
			"the final artifact exists at the source but is not recorded at the receiver"
	case model.NotIdentified:
		return ids(v.proven[model.Transferred], v.proven[model.SignalDelivered]),
			"the data file is at the receiver but the receiver has not identified the batch"
	case model.NotConsumed:
		return ids(v.proven[model.Identified], v.of(model.ConsumeStarted), v.of(model.ConsumeFailed)),
			"the batch was identified but no successful consumption is recorded"
	}
	return []string{}, ""
}

// boundaries fills d.Boundaries and d.FirstMissing and returns the first
// missing required boundary (NoBoundary when all are proven).
func (v *view) boundaries(d *Diagnosis) model.Boundary {
	first := model.NoBoundary
	for _, b := range model.Ladder {
		if v.c.Requires(b) && len(v.proven[b]) == 0 {
			first = b
			break
		}
	}
	if first != model.NoBoundary {
		d.FirstMissing = first.String()
	}
	latest := time.UnixMilli(v.latest).UTC()
	if v.latest == 0 {
		latest = time.Time{}
	}
	d.Boundaries = make([]BoundaryState, 0, len(model.Ladder))
	for _, b := range model.Ladder {
		bs := BoundaryState{Name: b.String(), Required: v.c.Requires(b), Evidence: ids(v.proven[b])}
		if t, ok := v.provenAt(b); ok {
			bs.Proven = true
			bs.At = t
			bs.OutOfOrder = first != model.NoBoundary && b > first
		}
		if bs.Required {
			if due, ok := v.c.Due(b, v.key, v.provenAt, latest); ok {
				bs.Due = due.UTC()
				if bs.Proven {
					bs.Overdue = v.c.Deadlines[b].Kind != contract.NoDeadline && bs.At.After(bs.Due)
				} else {
					bs.Overdue = v.asOf.After(bs.Due)
				}
			}
		}
		d.Boundaries = append(d.Boundaries, bs)
	}
	return first
}

// status applies the rules of design.md section 5, first that applies.
func (v *view) status(d *Diagnosis, verdict model.Hypothesis, first model.Boundary) Status {
	for _, a := range d.Anomalies {
		if a.Kind.Breaks() {
			return StatusBroken
		}
	}
	if verdict == model.Delivered {
		return StatusDelivered
	}
	if v.stalledOnFailure(verdict) {
		return StatusFailed
	}
	if first != model.NoBoundary && d.Boundaries[first-1].Overdue {
		return StatusLate
	}
	return StatusInProgress
}

// stalledOnFailure reports whether the latest event of the step where the
// delivery stopped is a *.failed with no later success.
func (v *view) stalledOnFailure(verdict model.Hypothesis) bool {
	var step [3]model.EventType
	switch verdict {
	case model.NotProduced, model.NotFinal:
		step = [3]model.EventType{model.JobStarted, model.JobSucceeded, model.JobFailed}
	case model.NotIdentified, model.NotConsumed:
		step = [3]model.EventType{model.ConsumeStarted, model.ConsumeSucceeded, model.ConsumeFailed}
	default:
		return false
	}
	var last *record
	for _, t := range step {
		for _, r := range v.of(t) {
			if last == nil || last.ms < r.ms || (last.ms == r.ms && last.id < r.id) {
				last = r
			}
		}
	}
	return last != nil && last.typ.IsFailure()
}

func fmtTime(t time.Time) string { return t.UTC().Format(model.TimeLayout) }

func fmtDuration(d time.Duration) string {
	d = d.Round(time.Minute)
	days := d / (24 * time.Hour)
	d -= days * 24 * time.Hour
	h := d / time.Hour
	m := (d - h*time.Hour) / time.Minute
	var b strings.Builder
	if days > 0 {
		b.WriteString(strconv.Itoa(int(days)) + "d ")
	}
	if days > 0 || h > 0 {
		b.WriteString(strconv.Itoa(int(h)) + "h ")
	}
	b.WriteString(strconv.Itoa(int(m)) + "m")
	return b.String()
}
