package batches

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/handoff-dev/handoff/analyzer/replay"
	"github.com/handoff-dev/handoff/analyzer/upstream"
	"github.com/handoff-dev/handoff/model"
	"github.com/handoff-dev/handoff/model/contract"
)

// Ordered diagnoses the batches of one pipeline from events that arrive in
// business-date order (every event of a date before the first of a later
// date; within a date any order), as ClickHouse's sort key gives them. It
// holds the folded states of one business date only: when an event of a
// later date arrives, the batches of the earlier one are diagnosed, handed
// to the caller and dropped, and only their verdicts stay (a few bytes a
// batch), because continuity needs nothing else of a past batch. So a
// pipeline of years of history is diagnosed in the memory of one day.
//
// Its diagnoses equal those of a Set holding every event of the pipeline,
// given the same first business date and the same heartbeats: the Set
// answers continuity from its states, Ordered from the verdicts it kept;
// both through PreviousOf, which looks only backwards in time.
type Ordered struct {
	contracts Contracts
	up        *upstream.Resolver // built on first use, over opts.Upstreams
	c         *contract.Contract
	pipeline  string
	asOf      time.Time
	opts      OrderedOptions
	yield     func(*replay.Diagnosis) error

	cur     model.Date
	started bool
	open    map[string]*replay.State // batch id -> state, of cur
	// spare holds the states of a diagnosed date, Reset for the next one;
	// ev evaluates into one reused diagnosis (yield keeps nothing of it).
	spare []*replay.State
	ev    replay.Evaluator
	// past holds the verdicts of the dates already diagnosed, batch ids
	// sorted within a date.
	past map[model.Date][]pastBatch
	// reruns lists the declared re-runs of each scheduled batch read.
	reruns RerunIndex
	events int
	count  int
	// calNext is the first date whose absent expected batches are not
	// handed over yet (zero: none handed over).
	calNext model.Date
	// ids and all are flush's buffers, empty between flushes.
	ids, all []string
}

type pastBatch struct {
	id      string
	verdict model.Hypothesis
}

// OrderedOptions says what an Ordered knows beyond its events.
type OrderedOptions struct {
	// First is the pipeline's earliest business date with a batch event in
	// the whole history (not only in what is read): continuity is checked
	// from it on, as a Set over the whole history would. Zero: the first
	// date read.
	First model.Date
	// From: batches of earlier dates are folded for continuity only; they
	// are not evaluated nor handed to yield. Zero: every batch is.
	From model.Date
	// Alive is the latest heartbeat of each process of the pipeline up to
	// the as-of time (Processes.Alive), given to every diagnosis.
	Alive []replay.Heartbeat
	// To is the last business date the events read cover: absent expected
	// batches (Absent) are handed over up to it (zero: CalendarEnd of the
	// as-of time, which bounds it anyway), from First (or From, when
	// later) on, in key order among the batches with events.
	To model.Date
	// Upstreams, when not nil, answers the upstream rule (analyzer/upstream)
	// for the batches handed over: what was read beforehand of the
	// pipelines this one waits for.
	Upstreams upstream.Batches
}

// NewOrdered returns an Ordered for pipeline under contracts, diagnosing
// as of asOf; yield receives each diagnosis, in batch key order, and may
// keep nothing of it after returning, not even a string (the caller
// renders it, and copies what it keeps): the memory of its strings
// serves the batches after it.
func NewOrdered(contracts Contracts, pipeline string, asOf time.Time, opts OrderedOptions, yield func(*replay.Diagnosis) error) *Ordered {
	return &Ordered{
		contracts: contracts, c: contracts.For(pipeline), pipeline: pipeline, asOf: asOf.UTC().Truncate(time.Millisecond), opts: opts, yield: yield,
		open: make(map[string]*replay.State), past: make(map[model.Date][]pastBatch),
	}
}

// Add folds one batch event in. The first event of a later business date
// diagnoses the batches of the current one first. An event of another
// pipeline, a heartbeat, or an event of an earlier date is an error: the
// input is not what Ordered needs, and a diagnosis built on it would be
// wrong.
func (o *Ordered) Add(e *model.Event) error {
	if e.Pipeline != o.pipeline || !e.Type.HasBatch() {
		return fmt.Errorf("ordered fold of pipeline %q: event %s (%s of pipeline %q) does not belong here: give it batch events of this pipeline only",
			o.pipeline, e.ID, e.Type, e.Pipeline)
	}
	if !o.started || e.BusinessDate != o.cur {
		if o.started && e.BusinessDate.Compare(o.cur) < 0 {
			return fmt.Errorf("ordered fold of pipeline %q: event %s of business date %s comes after date %s: the input is not in business-date order",
				o.pipeline, e.ID, e.BusinessDate, o.cur)
		}
		if err := o.flush(); err != nil {
			return err
		}
		o.cur, o.started = e.BusinessDate, true
		if o.opts.First.IsZero() {
			o.opts.First = e.BusinessDate
		}
	}
	st := o.open[e.BatchID]
	if st == nil {
		if n := len(o.spare); n > 0 {
			st, o.spare = o.spare[n-1], o.spare[:n-1]
		} else {
			st = new(replay.State)
		}
		o.open[e.BatchID] = st
		o.reruns.Add(o.c, e.Key())
	}
	st.Step(e)
	o.events++
	return nil
}

// Finish diagnoses the batches of the last date and hands over the absent
// expected batches up to OrderedOptions.To. Call it once, after the last
// Add; without any Add it reports the calendar of OrderedOptions.First on.
func (o *Ordered) Finish() error {
	if err := o.flush(); err != nil {
		return err
	}
	_, end, ok := o.calendar()
	if !ok {
		return nil
	}
	return o.absentThrough(end)
}

// calendar returns the dates whose absent expected batches Ordered hands
// over.
func (o *Ordered) calendar() (model.Date, model.Date, bool) {
	first := o.opts.First
	if o.opts.From.Compare(first) > 0 {
		first = o.opts.From
	}
	return calendarRange(first, o.opts.To, o.asOf)
}

// absentThrough hands over the absent expected batches of the dates from
// calNext through end that have no event (the dates before the open one,
// or after the last), and moves calNext past end.
func (o *Ordered) absentThrough(end model.Date) error {
	from, last, ok := o.calendar()
	if !ok {
		return nil
	}
	if o.calNext.Compare(from) > 0 {
		from = o.calNext
	}
	if end.Compare(last) > 0 {
		end = last
	}
	if from.Compare(end) > 0 {
		return nil
	}
	n := orderedNeighbours{o}
	for _, k := range o.c.Expected(from, end) {
		if k.BusinessDate == o.cur && o.open[k.BatchID] != nil {
			continue
		}
		if d, ok := Absent(k, o.c, o.asOf, n, o.opts.Alive); ok {
			o.block(&d, k)
			if err := o.yield(&d); err != nil {
				return err
			}
			o.count++
		}
	}
	o.calNext = end.AddDays(1)
	return nil
}

// blocked is the upstream rule's answer for k (nil without Upstreams).
func (o *Ordered) blocked(k model.BatchKey) *replay.Blocked {
	if o.opts.Upstreams == nil || len(o.c.Upstreams) == 0 {
		return nil
	}
	if o.up == nil {
		o.up = upstream.New(o.contracts, o.opts.Upstreams)
	}
	return o.up.Blocked(k)
}

// block adds the upstream rule's answer to d, an absent batch's diagnosis
// (never delivered), as Evaluate does through replay.Context.
func (o *Ordered) block(d *replay.Diagnosis, k model.BatchKey) {
	if b := o.blocked(k); b != nil && !d.Delivered() {
		d.Blocked = b
	}
}

// Events returns how many events were added.
func (o *Ordered) Events() int { return o.events }

// Diagnosed returns how many batches were handed to yield.
func (o *Ordered) Diagnosed() int { return o.count }

// flush diagnoses the open date in batch id order, keeps the verdicts and
// drops the states.
func (o *Ordered) flush() error {
	if len(o.open) == 0 {
		return nil
	}
	// The absent expected batches of the dates before this one.
	if err := o.absentThrough(o.cur.AddDays(-1)); err != nil {
		return err
	}
	// ids and all reuse the buffers of the flush before (one flush a
	// date of every pipeline: two allocations each were a tenth of a
	// flush's own cost), emptied at the end so that they keep no batch id
	// alive.
	ids := o.ids[:0]
	for id := range o.open {
		ids = append(ids, id)
	}
	defer func() { clear(ids); o.ids = ids[:0] }()
	emit := o.opts.From.IsZero() || o.cur.Compare(o.opts.From) >= 0
	var absent []string // this date's absent expected batches, handed over among the others
	if emit {
		if from, end, ok := o.calendar(); ok && o.cur.Compare(from) >= 0 && o.cur.Compare(end) <= 0 && o.cur.Compare(o.calNext) >= 0 {
			for _, k := range o.c.Expected(o.cur, o.cur) {
				if o.open[k.BatchID] == nil {
					absent = append(absent, k.BatchID)
				}
			}
		}
		o.calNext = o.cur.AddDays(1)
	}
	slices.Sort(ids)
	all := ids
	if len(absent) > 0 {
		all = append(append(o.all[:0], ids...), absent...)
		slices.Sort(all)
		defer func() { clear(all); o.all = all[:0] }()
	}
	// The verdicts kept for the dates after this one: an evaluated batch's
	// are its diagnosis' (Outcome is the same view of the same state as of
	// the same time), so only the batches folded for context alone are
	// looked at again.
	past := make([]pastBatch, 0, len(ids))
	if emit {
		n := orderedNeighbours{o}
		for _, id := range all {
			k := model.BatchKey{Pipeline: o.pipeline, BusinessDate: o.cur, BatchID: id}
			st := o.open[id]
			if st == nil {
				d, ok := Absent(k, o.c, o.asOf, n, o.opts.Alive)
				if !ok {
					continue
				}
				o.block(&d, k)
				if err := o.yield(&d); err != nil {
					return err
				}
				o.count++
				continue
			}
			d := o.ev.Evaluate(st, o.c, o.asOf, replay.Context{Previous: PreviousOf(k, o.c, n), Attempt: AttemptContext(k, o.c, n), Alive: o.opts.Alive, Blocked: o.blocked(k)})
			if d.Events > 0 {
				past = append(past, pastBatch{id: id, verdict: d.Verdict})
			}
			if err := o.yield(d); err != nil {
				return err
			}
			o.count++
		}
	} else {
		for _, id := range ids {
			if v, seen := o.open[id].Outcome(o.c, o.asOf); seen {
				past = append(past, pastBatch{id: id, verdict: v})
			}
		}
	}
	o.past[o.cur] = past
	// The states serve the next date's batches: their diagnoses are
	// handed over, and yield keeps nothing of them (NewOrdered), so
	// their arenas are filled again from the start.
	for _, st := range o.open {
		st.Recycle()
		o.spare = append(o.spare, st)
	}
	clear(o.open)
	return nil
}

// orderedNeighbours answers Neighbours from the open date's states and the
// verdicts of the dates before it.
type orderedNeighbours struct{ o *Ordered }

func (n orderedNeighbours) First(pipeline string) (model.Date, bool) {
	return n.o.opts.First, pipeline == n.o.pipeline && !n.o.opts.First.IsZero()
}

func (n orderedNeighbours) Verdict(k model.BatchKey) (model.Hypothesis, bool) {
	if k.Pipeline != n.o.pipeline {
		return 0, false
	}
	// The open date's batches are in open until flush moves them to past
	// (the absent batches after the last date are judged after it).
	if k.BusinessDate == n.o.cur && len(n.o.open) > 0 {
		st := n.o.open[k.BatchID]
		if st == nil {
			return 0, false
		}
		return st.Outcome(n.o.c, n.o.asOf)
	}
	past := n.o.past[k.BusinessDate]
	if i, ok := slices.BinarySearchFunc(past, k.BatchID, func(b pastBatch, id string) int { return strings.Compare(b.id, id) }); ok {
		return past[i].verdict, true
	}
	return 0, false
}

func (n orderedNeighbours) Reruns(base model.BatchKey) []model.BatchKey {
	if base.Pipeline != n.o.pipeline {
		return nil
	}
	return n.o.reruns.Of(base)
}

// ContextStart returns the earliest business date whose batches the
// diagnoses of the batches on or after from may need: the date of the
// schedule's last firing before from (holidays skipped), where the
// previous batch of the first batch in range lives. A read that starts
// there and an Ordered with From = from give the same diagnoses as a Set
// over the whole history. Without a schedule (no continuity check) it is
// from itself.
func ContextStart(c *contract.Contract, pipeline string, from model.Date) model.Date {
	// A schedule that fires once a day: the key of from itself leads back
	// to the last firing before it, whether from fires or not.
	if k, ok := c.Previous(model.BatchKey{Pipeline: pipeline, BusinessDate: from, BatchID: from.Compact()}); ok && k.BusinessDate.Compare(from) < 0 {
		return k.BusinessDate
	}
	// Several firings a day: the first batch of the first firing date
	// from on, whose previous batch is the last one before that date.
	for d, n := from, 0; n < 400; d, n = d.AddDays(1), n+1 {
		keys := c.Expected(d, d)
		if len(keys) == 0 {
			continue
		}
		if k, ok := c.Previous(keys[0]); ok && k.BusinessDate.Compare(from) < 0 {
			return k.BusinessDate
		}
		break
	}
	return from
}
