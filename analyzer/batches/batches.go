// Package batches folds a stream of delivery events into one replay.State
// per batch and diagnoses them together, adding what only the set of
// batches knows: continuity with the previous batch of the schedule and
// the heartbeats of each pipeline's processes.
//
// diagnose (over a file or ClickHouse) and backfill use it directly; the
// streaming detector keeps the same structure alive and evaluates batches
// as their deadlines pass.
package batches

import (
	"sort"
	"time"

	"github.com/handoff-dev/handoff/analyzer/replay"
	"github.com/handoff-dev/handoff/model"
	"github.com/handoff-dev/handoff/model/contract"
)

// Contracts gives the delivery contract of a pipeline. contract.Set
// implements it; For must return a non-nil contract (the default one for a
// pipeline without a file).
type Contracts interface {
	For(pipeline string) *contract.Contract
}

type procKey struct {
	system    model.System
	component string
}

// Set is a set of batches being replayed. The zero Set is not usable; call
// New. A Set is not safe for concurrent use.
type Set struct {
	contracts Contracts
	asOf      time.Time
	asOfMs    int64
	states    map[model.BatchKey]*replay.State
	// first is each pipeline's earliest business date: the start of what
	// the set knows, before which no batch is expected. Kept up to date by
	// Add, so that diagnosing one batch never scans them all.
	first map[string]model.Date
	// alive holds the latest heartbeat of each process, by pipeline.
	alive   map[string]map[procKey]replay.Heartbeat
	events  int
	ignored int
}

// New returns an empty Set that will diagnose as of asOf. Heartbeats later
// than asOf are ignored, as Evaluate ignores later batch events.
func New(contracts Contracts, asOf time.Time) *Set {
	asOf = asOf.UTC().Truncate(time.Millisecond)
	return &Set{
		contracts: contracts,
		asOf:      asOf,
		asOfMs:    asOf.UnixMilli(),
		states:    make(map[model.BatchKey]*replay.State),
		first:     make(map[string]model.Date),
		alive:     make(map[string]map[procKey]replay.Heartbeat),
	}
}

// Add folds one event in: a batch event into its batch's state, a heartbeat
// into the latest-heartbeat table.
func (s *Set) Add(e *model.Event) {
	s.events++
	if !e.Type.HasBatch() {
		ms := e.Time.UnixMilli()
		if ms > s.asOfMs {
			s.ignored++
			return
		}
		procs := s.alive[e.Pipeline]
		if procs == nil {
			procs = make(map[procKey]replay.Heartbeat)
			s.alive[e.Pipeline] = procs
		}
		k := procKey{e.System, e.Component}
		h, ok := procs[k]
		if !ok || h.At.UnixMilli() < ms || (h.At.UnixMilli() == ms && h.EventID < e.ID) {
			procs[k] = replay.Heartbeat{System: e.System, Component: e.Component, At: e.Time.UTC(), EventID: e.ID}
		}
		return
	}
	k := e.Key()
	st := s.states[k]
	if st == nil {
		st = new(replay.State)
		s.states[k] = st
		if d, ok := s.first[k.Pipeline]; !ok || k.BusinessDate.Compare(d) < 0 {
			s.first[k.Pipeline] = k.BusinessDate
		}
	}
	st.Step(e)
}

// Len returns the number of batches.
func (s *Set) Len() int { return len(s.states) }

// Events returns how many events were added (heartbeats included).
func (s *Set) Events() int { return s.events }

// Keys returns the batch keys in order.
func (s *Set) Keys() []model.BatchKey {
	keys := make([]model.BatchKey, 0, len(s.states))
	for k := range s.states {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i].Compare(keys[j]) < 0 })
	return keys
}

// Diagnose evaluates every batch and returns the diagnoses sorted by batch
// key. keep, when not nil, selects which batches to evaluate; the others
// still count as neighbours for continuity.
func (s *Set) Diagnose(keep func(model.BatchKey) bool) []replay.Diagnosis {
	keys := s.Keys()
	out := make([]replay.Diagnosis, 0, len(keys))
	verdicts := make(map[model.BatchKey]model.Hypothesis)
	for _, k := range keys {
		if keep != nil && !keep(k) {
			continue
		}
		c := s.contracts.For(k.Pipeline)
		ctx := replay.Context{Previous: s.previous(k, c, verdicts), Alive: s.aliveFor(k.Pipeline)}
		out = append(out, s.states[k].Evaluate(c, s.asOf, ctx))
	}
	return out
}

// DiagnoseOne evaluates a single batch, with the same context Diagnose
// would give it. It reports false when the batch has no events.
func (s *Set) DiagnoseOne(k model.BatchKey) (replay.Diagnosis, bool) {
	st := s.states[k]
	if st == nil {
		return replay.Diagnosis{}, false
	}
	c := s.contracts.For(k.Pipeline)
	ctx := replay.Context{Previous: s.previous(k, c, map[model.BatchKey]model.Hypothesis{}), Alive: s.aliveFor(k.Pipeline)}
	return st.Evaluate(c, s.asOf, ctx), true
}

// previous builds the continuity context of batch k: the previous batch of
// the schedule, if the set knows the pipeline from before k's date.
func (s *Set) previous(k model.BatchKey, c *contract.Contract, verdicts map[model.BatchKey]model.Hypothesis) replay.Previous {
	pk, ok := c.Previous(k)
	if !ok || pk.BusinessDate.Compare(s.first[k.Pipeline]) < 0 {
		return replay.Previous{}
	}
	p := replay.Previous{Checked: true, Key: pk}
	st := s.states[pk]
	if st == nil {
		// A re-run may have used another batch id for the same date.
		for _, o := range s.sameDate(pk) {
			st, pk = s.states[o], o
			break
		}
	}
	if st == nil {
		return p
	}
	p.Key = pk
	v, ok := verdicts[pk]
	if !ok {
		v = st.Verdict(s.contracts.For(pk.Pipeline), s.asOf)
		verdicts[pk] = v
	}
	p.Seen, p.Delivered, p.Verdict = true, v == model.Delivered, v
	return p
}

func (s *Set) sameDate(k model.BatchKey) []model.BatchKey {
	var out []model.BatchKey
	for o := range s.states {
		if o.Pipeline == k.Pipeline && o.BusinessDate == k.BusinessDate {
			out = append(out, o)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].BatchID < out[j].BatchID })
	return out
}

func (s *Set) aliveFor(pipeline string) []replay.Heartbeat {
	procs := s.alive[pipeline]
	if len(procs) == 0 {
		return nil
	}
	out := make([]replay.Heartbeat, 0, len(procs))
	for _, h := range procs {
		out = append(out, h)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].System != out[j].System {
			return out[i].System < out[j].System
		}
		return out[i].Component < out[j].Component
	})
	return out
}
