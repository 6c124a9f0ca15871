// Package batches folds a stream of delivery events into one replay.State
// per batch and diagnoses them together, adding what only the set of
// batches knows: continuity with the previous batch of the schedule and
// the heartbeats of each pipeline's processes.
//
// A Set holds what it is given; analyzer/fold keeps one Set per pipeline,
// diagnoses them in parallel, and frees each as soon as its pipeline is
// done when the input comes grouped by pipeline.
package batches

import (
	"slices"
	"strings"
	"time"

	"github.com/handoff-dev/handoff/analyzer/replay"
	"github.com/handoff-dev/handoff/analyzer/upstream"
	"github.com/handoff-dev/handoff/model"
	"github.com/handoff-dev/handoff/model/contract"
)

// Contracts gives the delivery contract of a pipeline. contract.Set
// implements it; For must return a non-nil contract (the default one for a
// pipeline without a file).
type Contracts interface {
	For(pipeline string) *contract.Contract
}

// Set is a set of batches being replayed. The zero Set is not usable; call
// New. A Set is not safe for concurrent use.
type Set struct {
	contracts Contracts
	asOf      time.Time
	asOfMs    int64
	// states is keyed by each state's own key (replay.State.Key, copied
	// into its arena), never by an event's: an event's strings share the
	// decoder's allocation for the whole event (attrs included), which a
	// map key would keep alive for the run.
	states map[model.BatchKey]*batch
	// last is the batch of the previous batch event: when an event of
	// another batch comes, last has gone quiet and is compacted, as the
	// detector compacts its quiet batches.
	last *batch
	// pipes is what the set knows of each pipeline (pipeOf): its
	// earliest business date, the start of what the set knows, before
	// which no batch is expected (kept up to date by Add, so that
	// diagnosing one batch never scans them all), and its contract, asked
	// of contracts once. byName indexes pipes. A page of 10,000 pipelines
	// looked each pipeline's name up in a map of first dates and in the
	// contracts' maps several times, as it folded, listed and diagnosed
	// its batches, each look-up a few misses of the caches; now a batch
	// keeps its pipeline's index and asks no map again.
	pipes  []pipe
	byName map[string]int32
	// reruns lists the declared re-runs of each scheduled batch.
	reruns RerunIndex
	// alive holds the latest heartbeat of each process, by pipeline.
	alive Processes
	// covers is the range of business dates the set was told it holds
	// every event of (Covers); zero sides: each pipeline's first date,
	// and CalendarEnd of the as-of time.
	coverFrom, coverTo model.Date
	events             int
	ignored            int
	// up answers the upstream rule (Upstreams); nil: not applied.
	up upstream.Batches
	// brief: the set is dropped once diagnosed (Brief), so quiet
	// batches are not compacted.
	brief bool
	// order, in a brief set, holds the keys of states in the order
	// their batches came: a read's order, mostly the keys' own (the
	// table's sort key), so that KeysFrom sorts a list already nearly
	// sorted rather than one in the map's order. A brief set's keys
	// never change (no compaction re-keys them).
	order []Listed
}

// Upstreams turns the upstream rule (analyzer/upstream) on for the
// diagnoses of the set, with b answering for the other batches: nil
// means the set itself, when it holds every pipeline the contracts'
// upstreams name (a file's whole history). A set of one pipeline is
// given what was read beforehand of its upstreams (an upstream.Table).
func (s *Set) Upstreams(b upstream.Batches) {
	if b == nil {
		b = setBriefs{s}
	}
	s.up = b
}

// First returns the earliest business date of pipeline the set knows.
func (s *Set) First(pipeline string) (model.Date, bool) {
	if i := s.pipeOf(pipeline); i >= 0 {
		return s.pipes[i].first, true
	}
	return model.Date{}, false
}

// setBriefs answers upstream.Batches from the set's own batches.
type setBriefs struct{ s *Set }

func (b setBriefs) First(pipeline string) (model.Date, bool) { return b.s.First(pipeline) }

func (b setBriefs) Brief(k model.BatchKey) (model.Hypothesis, model.Boundary, bool) {
	st := b.s.states[k]
	if st == nil {
		return model.NotProduced, model.NoBoundary, false
	}
	return st.st.Brief(b.s.contract(st.pipe), b.s.asOf)
}

// resolver is a fresh upstream resolver for one call (nil: rule off).
func (s *Set) resolver() *upstream.Resolver {
	if s.up == nil {
		return nil
	}
	return upstream.New(s.contracts, s.up)
}

func blockedOf(r *upstream.Resolver, k model.BatchKey, c *contract.Contract) *replay.Blocked {
	if r == nil || len(c.Upstreams) == 0 {
		return nil
	}
	return r.Blocked(k)
}

// New returns an empty Set that will diagnose as of asOf. Heartbeats later
// than asOf are ignored, as Evaluate ignores later batch events.
func New(contracts Contracts, asOf time.Time) *Set {
	asOf = asOf.UTC().Truncate(time.Millisecond)
	return &Set{
		contracts: contracts,
		asOf:      asOf,
		asOfMs:    asOf.UnixMilli(),
		states:    make(map[model.BatchKey]*batch),
		byName:    make(map[string]int32),
	}
}

// pipe is what a Set knows of one pipeline.
type pipe struct {
	// name is the set's own copy of the pipeline's name (a state's key's,
	// or a clone): never a piece of an event's.
	name  string
	first model.Date
	// c is the pipeline's contract, asked of the set's contracts once:
	// For gives a pipeline the same contract whenever it is asked, so
	// the first answer stands for the set's life. Asked as the pipeline
	// is recorded (Add, Known), so that diagnoses, which may run at the
	// same time, only read it.
	c *contract.Contract
}

// pipeOf returns the index in s.pipes of pipeline, -1 when the set knows
// nothing of it.
func (s *Set) pipeOf(pipeline string) int32 {
	if i, ok := s.byName[pipeline]; ok {
		return i
	}
	return -1
}

// addPipe records pipeline (name: the set's own copy of it) with first
// date first and returns its index.
func (s *Set) addPipe(name string, first model.Date) int32 {
	i := int32(len(s.pipes))
	s.pipes = append(s.pipes, pipe{name: name, first: first, c: s.contracts.For(name)})
	s.byName[name] = i
	return i
}

// contract returns the contract of pipeline i.
func (s *Set) contract(i int32) *contract.Contract { return s.pipes[i].c }

// contractFor is the contract of pipeline: its pipe's when the set knows
// the pipeline, the contracts' answer otherwise.
func (s *Set) contractFor(pipeline string) *contract.Contract {
	if i := s.pipeOf(pipeline); i >= 0 {
		return s.contract(i)
	}
	return s.contracts.For(pipeline)
}

// Brief says the set lives only until its batches are diagnosed (a page
// of a server), holding about batches batches of about pipelines
// pipelines (0: unknown): its tables are made that large at once rather
// than grown through copies, and a batch that goes quiet is not
// compacted (Compact frees room for a long fold; here it was a copy of
// every batch for nothing). The diagnoses are the same. Call it before
// Add.
func (s *Set) Brief(batches, pipelines int) {
	s.brief = true
	if len(s.states) == 0 && batches > 0 {
		s.states = make(map[model.BatchKey]*batch, batches)
		s.order = make([]Listed, 0, batches)
	}
	if len(s.pipes) == 0 && pipelines > 0 {
		s.pipes = make([]pipe, 0, pipelines)
		s.byName = make(map[string]int32, pipelines)
	}
}

// Add folds one event in: a batch event into its batch's state, a heartbeat
// into the latest-heartbeat table.
func (s *Set) Add(e *model.Event) {
	s.events++
	if !e.Type.HasBatch() {
		if e.Time.UnixMilli() > s.asOfMs {
			s.ignored++
			return
		}
		s.alive.Add(e)
		return
	}
	k := e.Key()
	var b *batch
	if s.last != nil && s.last.st.Key() == k {
		b = s.last // most events follow one of their batch: no map look-up
		b.st.Step(e)
		return
	}
	if s.last != nil {
		s.quiet(s.last)
	}
	// The pipeline first: the pipeline of the batch before, most often
	// (a pipeline's batches come together), otherwise a look-up of its
	// name. A pipeline the set does not know has no batch in it yet
	// (every batch's pipeline is recorded with it, and none is
	// forgotten), so its batch needs no look-up: at 10,000 pipelines of
	// a batch each, that was a look-up of a key a pipeline.
	var pi int32
	if s.last != nil && s.pipes[s.last.pipe].name == k.Pipeline {
		pi = s.last.pipe
	} else {
		pi = s.pipeOf(k.Pipeline)
	}
	if pi >= 0 {
		b = s.states[k]
	}
	if b == nil {
		b = new(batch)
		b.st.Step(e)
		key := b.st.Key()
		if key.IsZero() { // an event Step refused (unknown type): the state has no key of its own
			key = model.BatchKey{Pipeline: strings.Clone(k.Pipeline), BusinessDate: k.BusinessDate, BatchID: strings.Clone(k.BatchID)}
		}
		s.states[key] = b
		if s.brief {
			s.order = append(s.order, Listed{Key: key, b: b})
		}
		if pi < 0 {
			pi = s.addPipe(key.Pipeline, k.BusinessDate)
		}
		b.pipe = pi
		s.reruns.Add(s.contract(b.pipe), key)
		if p := &s.pipes[b.pipe]; k.BusinessDate.Compare(p.first) < 0 {
			p.first = k.BusinessDate
		}
	} else {
		b.st.Step(e)
	}
	s.last = b
}

// batch is one batch's state and its length when it was last compacted.
type batch struct {
	st        replay.State
	compacted int
	pipe      int32 // the index of its pipeline in the set's pipes
}

// quiet compacts b, whose batch had an event of another batch come after
// its own: a batch's events mostly come together (ClickHouse's sort key,
// a producer's run), so it is likely done, and it would otherwise hold
// the room its arena and records keep for more events until the set is
// dropped. Compaction waits until the batch has doubled since the last
// one, so that interleaved batches cost amortised linear time, not a copy
// per event. The map is keyed again with the compacted state's key, whose
// strings moved to the new arena (the old key would keep the old one).
func (s *Set) quiet(b *batch) {
	if n := b.st.Len(); s.brief || n == 0 || n < 2*b.compacted {
		return
	}
	old := b.st.Key()
	b.st.Compact()
	b.compacted = b.st.Len()
	if k := b.st.Key(); !k.IsZero() {
		delete(s.states, old)
		s.states[k] = b
	}
}

// Known declares that pipeline's history starts at first, a date before
// the events the set is given (a read of a range of dates that starts
// with the context of its first batch: ContextStart): continuity is then
// checked from first on, as a set holding the whole history would. An
// event of an earlier date lowers it, as it would without the call.
func (s *Set) Known(pipeline string, first model.Date) {
	if i := s.pipeOf(pipeline); i < 0 {
		s.addPipe(strings.Clone(pipeline), first)
	} else if p := &s.pipes[i]; first.Compare(p.first) < 0 {
		p.first = first
	}
}

// Covers declares that the set holds every batch event of business dates
// [from, to] (a zero side: open) of the pipelines it is given, as a read
// of a range does: expected batches with no event are reported within it
// only (and never before a pipeline's first date, nor after CalendarEnd).
// Without it the set is a whole history: every pipeline's calendar runs
// from its first date to CalendarEnd.
func (s *Set) Covers(from, to model.Date) { s.coverFrom, s.coverTo = from, to }

// Len returns the number of batches with events.
func (s *Set) Len() int { return len(s.states) }

// Span returns what the set holds of batch k's own events: how many
// (each event id once, however many copies were added), the earliest and
// the latest event time; ok is false when it holds none. A list of batches
// reads it instead of counting the events it passes, which would count
// copies that came apart (a read in no particular order).
func (s *Set) Span(k model.BatchKey) (n int, first, last time.Time, ok bool) {
	return s.SpanOf(Listed{Key: k, b: s.states[k]})
}

// Events returns how many events were added (heartbeats included).
func (s *Set) Events() int { return s.events }

// Keys returns the batch keys in order: the batches with events and the
// expected batches that are absent (Absent).
func (s *Set) Keys() []model.BatchKey { return s.KeysFrom(model.Date{}) }

// KeysFrom is Keys without the batches of business dates before from (a
// zero from: none left out), which are not sorted: a page reads the
// dates before its range for their context only, and sorting their keys
// to drop them was half of its sort.
func (s *Set) KeysFrom(from model.Date) []model.BatchKey {
	keys := make([]model.BatchKey, 0, len(s.states))
	if s.brief && len(s.order) == len(s.states) { // Brief before any Add, as it asks
		for _, l := range s.order {
			if l.Key.BusinessDate.Compare(from) >= 0 {
				keys = append(keys, l.Key)
			}
		}
	} else {
		for k := range s.states {
			if k.BusinessDate.Compare(from) >= 0 {
				keys = append(keys, k)
			}
		}
	}
	for _, k := range s.absent() {
		if k.BusinessDate.Compare(from) >= 0 {
			keys = append(keys, k)
		}
	}
	slices.SortFunc(keys, model.BatchKey.Compare)
	return keys
}

// Listed is a batch of a list (ListFrom): its key and the set's state of
// it, nil for an absent expected batch. A list asks several things of
// each of its batches (its span, its diagnosis, the verdict of the one
// before): asked of a Listed, they need no look-up of its key, which
// hashes and compares two strings and a date (at 10,000 pipelines the
// look-ups of a day page were a tenth of its CPU).
type Listed struct {
	Key model.BatchKey
	b   *batch
}

// ListFrom is KeysFrom with each key's batch.
func (s *Set) ListFrom(from model.Date) []Listed {
	out := make([]Listed, 0, len(s.states))
	if s.brief && len(s.order) == len(s.states) { // Brief before any Add, as it asks
		for _, l := range s.order {
			if l.Key.BusinessDate.Compare(from) >= 0 {
				out = append(out, l)
			}
		}
	} else {
		for k, b := range s.states {
			if k.BusinessDate.Compare(from) >= 0 {
				out = append(out, Listed{Key: k, b: b})
			}
		}
	}
	for _, k := range s.absent() {
		if k.BusinessDate.Compare(from) >= 0 {
			out = append(out, Listed{Key: k})
		}
	}
	slices.SortFunc(out, func(a, b Listed) int { return a.Key.Compare(b.Key) })
	return out
}

// SpanOf is Span of a listed batch.
func (s *Set) SpanOf(l Listed) (n int, first, last time.Time, ok bool) {
	if l.b == nil || l.b.st.Len() == 0 {
		return 0, time.Time{}, time.Time{}, false
	}
	return l.b.st.Len(), l.b.st.FirstEventAt(), l.b.st.LastEventAt(), true
}

// EachSummaryOf is EachSummary of listed batches (ListFrom's, in its
// order or any other).
func (s *Set) EachSummaryOf(ls []Listed, fn func(*replay.Diagnosis)) {
	var ev replay.Evaluator
	w := s.walker(true, func(b *batch, c *contract.Contract, ctx replay.Context) {
		fn(ev.Summary(&b.st, c, s.asOf, ctx.Previous))
	}, fn)
	for _, l := range ls {
		w.one(l.Key, l.b)
	}
}

// absent returns the expected batches of every pipeline of the set that
// have no event and are absent as of the set's time.
func (s *Set) absent() []model.BatchKey {
	var out []model.BatchKey
	n := setNeighbours{s: s, verdicts: verdictCache{}, pipe: -1}
	for i := range s.pipes {
		from, to, ok := s.calendar(s.pipes[i].name, s.pipes[i].first)
		if !ok {
			continue
		}
		c := s.contract(int32(i))
		for _, k := range c.Expected(from, to) {
			if s.states[k] != nil {
				continue
			}
			if _, ok := Absent(k, c, s.asOf, n, nil); ok {
				out = append(out, k)
			}
		}
	}
	return out
}

// calendar returns the range of dates whose expected batches pipeline p
// (first: its first date) may report.
func (s *Set) calendar(p string, first model.Date) (model.Date, model.Date, bool) {
	if s.coverFrom.Compare(first) > 0 {
		first = s.coverFrom
	}
	return calendarRange(first, s.coverTo, s.asOf)
}

// absentOne diagnoses k, which has no event, if it is an absent expected
// batch.
func (s *Set) absentOne(k model.BatchKey, c *contract.Contract, verdicts verdictCache) (replay.Diagnosis, bool) {
	first, known := s.First(k.Pipeline)
	if !known {
		return replay.Diagnosis{}, false
	}
	from, to, ok := s.calendar(k.Pipeline, first)
	if !ok || k.BusinessDate.Compare(from) < 0 || k.BusinessDate.Compare(to) > 0 {
		return replay.Diagnosis{}, false
	}
	return Absent(k, c, s.asOf, setNeighbours{s: s, verdicts: verdicts, pipe: -1}, s.aliveFor(k.Pipeline))
}

// Diagnose evaluates every batch and returns the diagnoses sorted by batch
// key. keep, when not nil, selects which batches to evaluate; the others
// still count as neighbours for continuity.
func (s *Set) Diagnose(keep func(model.BatchKey) bool) []replay.Diagnosis {
	keys := s.Keys()
	if keep != nil {
		keys = slices.DeleteFunc(keys, func(k model.BatchKey) bool { return !keep(k) })
	}
	return s.DiagnoseKeys(keys)
}

// DiagnoseKeys evaluates the batches of keys, in the order given (Keys
// gives them sorted, so that a caller cutting a large set into windows
// sorts once); a key with no events is diagnosed if it is an absent
// expected batch (Absent), skipped otherwise. Every other batch still
// counts as a neighbour for continuity. It only reads the set: calls may
// run concurrently with each other, not with Add.
func (s *Set) DiagnoseKeys(keys []model.BatchKey) []replay.Diagnosis {
	out := make([]replay.Diagnosis, 0, len(keys))
	s.diagnoseKeys(keys, func(b *batch, c *contract.Contract, ctx replay.Context) {
		out = append(out, b.st.Evaluate(c, s.asOf, ctx))
	}, func(d *replay.Diagnosis) { out = append(out, *d) })
	return out
}

// EachDiagnosis passes fn the diagnosis of each batch of keys, as
// DiagnoseKeys would return them, one at a time: the diagnosis is valid
// until fn returns (its slices are reused for the next batch; its strings
// stay valid). For a caller that keeps a few fields of each, this spares
// building every diagnosis' lists anew. Like DiagnoseKeys, it only reads
// the set.
func (s *Set) EachDiagnosis(keys []model.BatchKey, fn func(*replay.Diagnosis)) {
	var ev replay.Evaluator
	s.diagnoseKeys(keys, func(b *batch, c *contract.Contract, ctx replay.Context) {
		fn(ev.Evaluate(&b.st, c, s.asOf, ctx))
	}, fn)
}

// EachSummary is EachDiagnosis with each batch with events evaluated
// only as far as its status (replay.Evaluator.Summary: identity, as-of,
// events, hypotheses and verdict, boundaries and first missing,
// anomalies and status are EachDiagnosis's; the rest is left empty),
// and its context made only of what that needs (the previous batch). An
// absent expected batch's diagnosis is whole. For a list that shows a
// few fields of each batch. Like DiagnoseKeys, it only reads the set.
func (s *Set) EachSummary(keys []model.BatchKey, fn func(*replay.Diagnosis)) {
	var ev replay.Evaluator
	s.walkKeys(keys, true, func(b *batch, c *contract.Contract, ctx replay.Context) {
		fn(ev.Summary(&b.st, c, s.asOf, ctx.Previous))
	}, fn)
}

// diagnoseKeys is the walk of DiagnoseKeys and EachDiagnosis: the context
// of each batch with events goes to eval, the diagnosis of each absent
// expected one to absent.
func (s *Set) diagnoseKeys(keys []model.BatchKey, eval func(*batch, *contract.Contract, replay.Context), absent func(*replay.Diagnosis)) {
	s.walkKeys(keys, false, eval, absent)
}

// walkKeys is diagnoseKeys; with previousOnly, the context given to eval
// holds the previous batch only (EachSummary).
func (s *Set) walkKeys(keys []model.BatchKey, previousOnly bool, eval func(*batch, *contract.Contract, replay.Context), absent func(*replay.Diagnosis)) {
	w := s.walker(previousOnly, eval, absent)
	for _, k := range keys {
		w.one(k, s.states[k])
	}
}

// walk is one walk of walkKeys: the verdicts of the neighbours it asked
// for, kept for the batches after.
type walk struct {
	s            *Set
	verdicts     verdictCache
	up           *upstream.Resolver
	previousOnly bool
	eval         func(*batch, *contract.Contract, replay.Context)
	absent       func(*replay.Diagnosis)
}

func (s *Set) walker(previousOnly bool, eval func(*batch, *contract.Contract, replay.Context), absent func(*replay.Diagnosis)) *walk {
	return &walk{s: s, verdicts: make(verdictCache), up: s.resolver(), previousOnly: previousOnly, eval: eval, absent: absent}
}

// one diagnoses batch k, whose state is b (nil: no event).
func (w *walk) one(k model.BatchKey, b *batch) {
	s := w.s
	if b == nil {
		c := s.contractFor(k.Pipeline)
		if d, ok := s.absentOne(k, c, w.verdicts); ok {
			d.Blocked = blockedOf(w.up, k, c)
			w.absent(&d)
		}
		return
	}
	c := s.contract(b.pipe)
	if w.previousOnly {
		w.eval(b, c, replay.Context{Previous: PreviousOf(k, c, setNeighbours{s: s, verdicts: w.verdicts, pipe: b.pipe})})
		return
	}
	ctx := s.context(k, c, w.verdicts, b.pipe)
	ctx.Blocked = blockedOf(w.up, k, c)
	w.eval(b, c, ctx)
}

// DiagnoseOne evaluates a single batch, with the same context Diagnose
// would give it. It reports false when the batch has no events and is not
// an absent expected batch.
func (s *Set) DiagnoseOne(k model.BatchKey) (replay.Diagnosis, bool) {
	c := s.contractFor(k.Pipeline)
	b := s.states[k]
	up := s.resolver()
	if b == nil {
		d, ok := s.absentOne(k, c, verdictCache{})
		if ok {
			d.Blocked = blockedOf(up, k, c)
		}
		return d, ok
	}
	ctx := s.context(k, c, verdictCache{}, b.pipe)
	ctx.Blocked = blockedOf(up, k, c)
	return b.st.Evaluate(c, s.asOf, ctx), true
}

// context builds the context of batch k: continuity (PreviousOf), the
// attempts of its date (AttemptContext) and the heartbeats, with the
// neighbours' verdicts cached in verdicts (pipe: the index of k's
// pipeline).
func (s *Set) context(k model.BatchKey, c *contract.Contract, verdicts verdictCache, pipe int32) replay.Context {
	n := setNeighbours{s: s, verdicts: verdicts, pipe: pipe}
	return replay.Context{Previous: PreviousOf(k, c, n), Attempt: AttemptContext(k, c, n), Alive: s.aliveFor(k.Pipeline)}
}

// outcome is a cached replay.State.Outcome.
type outcome struct {
	verdict model.Hypothesis
	seen    bool
}

// verdictCache holds the outcomes of the batches a walk asked for, by
// their state: a pointer is hashed and compared at once, where a key's
// two strings and date were most of a look-up (a day page asks it of
// every batch's previous one).
type verdictCache map[*batch]outcome

// setNeighbours answers Neighbours from a Set as of its as-of time.
type setNeighbours struct {
	s        *Set
	verdicts verdictCache
	// pipe is the index of the pipeline of the batch asked about, -1 when
	// not known: its first date is then read without a look-up of its
	// name.
	pipe int32
}

func (n setNeighbours) First(pipeline string) (model.Date, bool) {
	if n.pipe >= 0 && n.s.pipes[n.pipe].name == pipeline {
		return n.s.pipes[n.pipe].first, true
	}
	return n.s.First(pipeline)
}

func (n setNeighbours) Verdict(k model.BatchKey) (model.Hypothesis, bool) {
	b := n.s.states[k]
	if b == nil {
		return 0, false
	}
	o, ok := n.verdicts[b]
	if !ok {
		o.verdict, o.seen = b.st.Outcome(n.s.contract(b.pipe), n.s.asOf)
		n.verdicts[b] = o
	}
	return o.verdict, o.seen
}

func (n setNeighbours) Reruns(base model.BatchKey) []model.BatchKey { return n.s.reruns.Of(base) }

func (s *Set) aliveFor(pipeline string) []replay.Heartbeat { return s.alive.Alive(pipeline, nil) }
