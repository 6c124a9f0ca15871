package replay

import (
	"cmp"
	"slices"
	"strconv"
	"strings"
	"time"
	"unsafe"

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
	// Attempt is what is known of the other attempts of the batch's date
	// (its scheduled id and its declared re-runs); the zero Attempt means
	// the batch is its date's only attempt.
	Attempt Attempts
	// Blocked is what analyzer/upstream found of the batch's upstreams
	// (nil: none listed, or all delivered); the diagnosis carries it when
	// the batch itself is not delivered.
	Blocked *Blocked
}

// Attempts is what the other attempts of a batch's date say of it
// (analyzer/batches.AttemptsOf builds it). A date's attempts are its
// scheduled batch and the declared re-runs of it (contract.AttemptOf);
// the one that speaks for the date is the latest delivered attempt, or,
// when none is delivered, the latest attempt with events: every other
// attempt is superseded by it.
type Attempts struct {
	// Of is the scheduled batch the attempts are of; zero when the batch
	// has no other attempt and is not a re-run.
	Of model.BatchKey
	// Seen lists the attempts with events as of the evaluation, in
	// re-run order (the scheduled id first).
	Seen []model.BatchKey
	// SupersededBy is the attempt that speaks for the date when it is not
	// this batch; zero when this batch does.
	SupersededBy model.BatchKey
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
	Verdict model.Hypothesis
}

// Heartbeat is the latest process.heartbeat of one process.
type Heartbeat struct {
	System    model.System `json:"system"`
	Component string       `json:"component"`
	At        time.Time    `json:"at"`
	EventID   string       `json:"event_id"`
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
	// provenData is the set of data boundaries with proof.
	provenData model.BoundarySet
	// arena is the state's: the records' strings (see the accessors).
	arena []byte
	// provenIDs holds the ids of every proving event, boundary by boundary
	// in ladder order; provenFrom[b] is where boundary b's ids start. Every
	// evidence list of boundaries and exclusions is a subslice of it.
	provenIDs  []string
	provenFrom [model.Consumed + 2]int
	// dataIDs is the same for the data path only (1, 2, 4, 6, 7): the
	// evidence that excludes a hypothesis is a suffix of it.
	dataIDs  []string
	dataFrom [model.Consumed + 2]int

	// The names that derive from the batch's identity, rendered once.
	// dueBy[b] is the boundary whose deadline applies to b: b itself, or a
	// later missing boundary whose earlier deadline caps b's.
	dueBy [model.Consumed + 1]model.Boundary
	// firstProven[b] is when b was first proven (zero when not).
	firstProven [model.Consumed + 1]time.Time

	// batch is the key's text, date its business date's ("" when zero).
	batch, date                           string
	wantBatchID, wantArtifact, wantSignal string
	hasBatchID, hasArtifact, hasSignal    bool
	// A declared re-run (rerun > 0) is checked against its date's names
	// (want*) and may also carry names rendered from its own id (alt*).
	rerun                   int
	altArtifact, altSignal  string
	hasAltArtifact, hasAltS bool
	// key* are the names rendered from the key itself: alt* for a
	// re-run, want* otherwise.
	keyArtifact, keySignal       string
	hasKeyArtifact, hasKeySignal bool
	// sc is the Evaluator's memory (nil for State.Evaluate).
	sc *scratch
	// lateness is the contract's allowed lateness in ms; pending the
	// earliest time (ms) at which a withheld anomaly would be confirmed.
	lateness int64
	pending  int64
}

func (v *view) of(t model.EventType) []*record { return v.byType[t.Index()] }

// The strings of a record, shared with the state's arena: no copy.

func (v *view) id(r *record) string        { return str(v.arena, r.strs[sID]) }
func (v *view) component(r *record) string { return str(v.arena, r.strs[sComponent]) }
func (v *view) object(r *record) string    { return str(v.arena, r.strs[sObject]) }
func (v *view) checksum(r *record) string  { return str(v.arena, r.strs[sChecksum]) }
func (v *view) errText(r *record) string   { return str(v.arena, r.strs[sErr]) }

// init fills v, zero, from s. A view lives on its caller's stack: it is a
// kilobyte, and a replay makes one per batch (declared zero there, it is
// not cleared a second time here). full is for Evaluate: the names that
// derive from the batch's identity and the evidence lists, which the
// verdict alone (Outcome, Verdict, Brief) does not read.
func (v *view) init(s *State, c *contract.Contract, asOf time.Time, full bool, sc *scratch) {
	v.key, v.c, v.asOf, v.arena, v.sc = s.key, c, asOf, s.arena, sc
	v.lateness = c.AllowedLatenessOf().Milliseconds()
	limit := asOf.UnixMilli()
	// One allocation for recs and the lists carved out below.
	var ptrs []*record
	if sc != nil && cap(sc.ptrs) >= 3*len(s.records) {
		ptrs = sc.ptrs[:3*len(s.records)]
	} else {
		ptrs = make([]*record, 3*len(s.records))
		if sc != nil {
			sc.ptrs = ptrs
		}
	}
	// Every list is filled by index and its header set once: a pointer
	// stored through v costs a write barrier while the collector marks,
	// and appending would store each header again for every record.
	// The lists' lengths are counted on the way: they do not depend on
	// the order.
	var nType [len(model.EventTypes)]int
	var nProven [model.Consumed + 1]int
	var latestAny int64
	m := 0
	for i := range s.records {
		r := &s.records[i]
		if r.ms > limit {
			continue
		}
		ptrs[m] = r
		m++
		if ti := r.ti; ti >= 0 {
			nType[ti]++
		}
		if b := r.proves(); b != model.NoBoundary {
			nProven[b]++
			v.latest = max(v.latest, r.ms)
		}
		latestAny = max(latestAny, r.ms)
	}
	v.recs = ptrs[:m:m]
	// By time, then id: a total order, ids being distinct. A batch's
	// dozen records mostly come in time order, where an insertion sort
	// only compares each with the one before.
	if recs := v.recs; len(recs) <= 32 {
		for i := 1; i < len(recs); i++ {
			for j := i; j > 0 && (recs[j].ms < recs[j-1].ms || recs[j].ms == recs[j-1].ms && v.id(recs[j]) < v.id(recs[j-1])); j-- {
				recs[j], recs[j-1] = recs[j-1], recs[j]
			}
		}
	} else {
		slices.SortFunc(recs, func(a, b *record) int {
			if a.ms != b.ms {
				return cmp.Compare(a.ms, b.ms)
			}
			return strings.Compare(v.id(a), v.id(b))
		})
	}
	// Carve the per-type and per-boundary lists out of one backing array:
	// a batch has a dozen events, and a dozen small growing slices would
	// cost more than the replay itself.
	// atType[ti] and atProven[b] are where the next record of each list
	// goes in ptrs.
	var atType [len(model.EventTypes)]int
	var atProven [model.Consumed + 1]int
	k := len(s.records)
	for ti, n := range nType {
		if n > 0 {
			v.byType[ti] = ptrs[k : k+n : k+n]
			atType[ti] = k
			k += n
		}
	}
	for b, n := range nProven {
		if n > 0 {
			v.proven[b] = ptrs[k : k+n : k+n]
			atProven[b] = k
			k += n
		}
	}
	for _, r := range v.recs {
		if ti := r.ti; ti >= 0 {
			ptrs[atType[ti]] = r
			atType[ti]++
		}
		if b := r.proves(); b != model.NoBoundary {
			ptrs[atProven[b]] = r
			atProven[b]++
		}
	}
	if v.latest == 0 {
		v.latest = latestAny
	}
	for b := model.Produced; b <= model.Consumed; b++ {
		if b.OnDataPath() && len(v.proven[b]) > 0 {
			v.provenData = v.provenData.With(b)
		}
	}
	if !full {
		return
	}
	v.names(s, c)
	n := 0
	for _, l := range v.proven {
		n += len(l)
	}
	var all []string
	if sc != nil && sc.ids != nil && cap(sc.ids) >= 2*n {
		all = sc.ids[:0]
	} else {
		all = make([]string, 0, 2*n)
		if sc != nil {
			sc.ids = all
		}
	}
	for b := model.Produced; b <= model.Consumed; b++ {
		v.provenFrom[b] = len(all)
		for _, r := range v.proven[b] {
			all = append(all, v.id(r))
		}
	}
	v.provenFrom[model.Consumed+1] = len(all)
	v.provenIDs = all[:len(all):len(all)]
	data := all[len(all):]
	for b := model.Produced; b <= model.Consumed; b++ {
		v.dataFrom[b] = len(data)
		if b.OnDataPath() {
			for _, r := range v.proven[b] {
				data = append(data, v.id(r))
			}
		}
	}
	v.dataFrom[model.Consumed+1] = len(data)
	v.dataIDs = data
	for b := model.Produced; b <= model.Consumed; b++ {
		if len(v.proven[b]) > 0 {
			v.firstProven[b] = v.proven[b][0].at()
		}
	}
}

// provenOf returns the ids of the events proving b, sharing v's backing.
func (v *view) provenOf(b model.Boundary) []string {
	lo, hi := v.provenFrom[b], v.provenFrom[b+1]
	return v.provenIDs[lo:hi:hi]
}

var noIDs = []string{}

func (v *view) ids(rs ...[]*record) []string {
	n := 0
	for _, l := range rs {
		n += len(l)
	}
	out := make([]string, 0, n)
	for _, l := range rs {
		for _, r := range l {
			out = append(out, v.id(r))
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
	var d Diagnosis
	s.evaluate(&d, c, asOf, ctx, nil)
	return d
}

// Evaluator evaluates states one after another into one Diagnosis whose
// memory it reuses: the way to diagnose batches in a loop (a backfill, a
// replay of a file) where each diagnosis is rendered or stored before the
// next. Its diagnoses equal Evaluate's. The zero Evaluator is ready; it is
// not safe for concurrent use.
type Evaluator struct {
	d  Diagnosis
	sc scratch
}

// scratch is the memory of a view that an Evaluator keeps between
// evaluations: the record lists and the evidence ids, and the room left
// in its text chunk.
type scratch struct {
	ptrs []*record
	ids  []string
	// text holds the names and sentences of the diagnoses, appended and
	// never written again, so that their strings stay valid: a new chunk
	// is taken when it is full.
	text []byte
	// days carries the midnights of the deadlines from one batch to the
	// next (a date's from the date before's).
	days contract.Days
	// prev is the diagnosis' Previous, alive the room of its Alive.
	prev  PreviousBatch
	alive []Heartbeat
}

// key returns k's text as k.String gives it, in the text chunk with an
// Evaluator.
func (sc *scratch) key(k model.BatchKey) string {
	if sc == nil {
		return k.String()
	}
	// Room for the date's 10 bytes and more: a longer year only makes
	// the append move on to a new chunk, whose old one stays as it is.
	n := len(k.Pipeline) + len(k.BatchID) + 2 + 16
	if cap(sc.text)-len(sc.text) < n {
		sc.text = make([]byte, 0, max(textChunk, n))
	}
	start := len(sc.text)
	sc.text = appendKeyText(sc.text, k.Pipeline, k.BusinessDate, k.BatchID)
	return unsafe.String(unsafe.SliceData(sc.text[start:]), len(sc.text)-start)
}

// time returns t as fmtTime does, in the text chunk with an Evaluator.
func (sc *scratch) time(t time.Time) string {
	if sc == nil {
		return fmtTime(t)
	}
	const room = 32 // more than any time AppendTime writes
	if cap(sc.text)-len(sc.text) < room {
		sc.text = make([]byte, 0, textChunk)
	}
	start := len(sc.text)
	sc.text = model.AppendTime(sc.text, t)
	return unsafe.String(unsafe.SliceData(sc.text[start:]), len(sc.text)-start)
}

// duration returns d as FormatDuration does, in the text chunk with an
// Evaluator.
func (sc *scratch) duration(d time.Duration) string {
	if sc == nil {
		return FormatDuration(d)
	}
	const room = 32 // more than any duration appendDuration writes
	if cap(sc.text)-len(sc.text) < room {
		sc.text = make([]byte, 0, textChunk)
	}
	start := len(sc.text)
	sc.text = appendDuration(sc.text, d)
	return unsafe.String(unsafe.SliceData(sc.text[start:]), len(sc.text)-start)
}

// textChunk is how many bytes of text an Evaluator takes at a time.
const textChunk = 4096

// str returns b as a string of its own: in the text chunk with an
// Evaluator, an allocation of its own without one.
func (sc *scratch) str(b []byte) string {
	if sc == nil {
		return string(b)
	}
	if cap(sc.text)-len(sc.text) < len(b) {
		sc.text = make([]byte, 0, max(textChunk, len(b)))
	}
	start := len(sc.text)
	sc.text = append(sc.text, b...)
	return unsafe.String(unsafe.SliceData(sc.text[start:]), len(b))
}

// join returns the concatenation of parts, as + would, in the text chunk
// with an Evaluator.
func (sc *scratch) join(parts ...string) string {
	n := 0
	for _, p := range parts {
		n += len(p)
	}
	if sc == nil {
		b := make([]byte, 0, n)
		for _, p := range parts {
			b = append(b, p...)
		}
		return unsafe.String(unsafe.SliceData(b), n)
	}
	if cap(sc.text)-len(sc.text) < n {
		sc.text = make([]byte, 0, max(textChunk, n))
	}
	start := len(sc.text)
	for _, p := range parts {
		sc.text = append(sc.text, p...)
	}
	return unsafe.String(unsafe.SliceData(sc.text[start:]), n)
}

// Evaluate returns the diagnosis of s's batch as of asOf under c, as
// State.Evaluate does. The diagnosis is valid until the next call: its
// slices (hypotheses, boundaries, evidence lists, timeline, alive) and
// its Previous are reused then. Its strings are not: they stay valid, so a caller may keep the
// batch key or a summary, but not a slice.
func (e *Evaluator) Evaluate(s *State, c *contract.Contract, asOf time.Time, ctx Context) *Diagnosis {
	s.evaluate(&e.d, c, asOf, ctx, &e.sc)
	return &e.d
}

// Summary evaluates s's batch as of asOf under c as Evaluate does, as
// far as the diagnosis' status: its identity, as-of, contract, zone,
// events and their span, hypotheses and verdict, boundaries and first
// missing boundary, anomalies and status are Evaluate's with a Context
// of Previous prev (the one part of a context they depend on); the
// timeline, the expected names, the context (previous batch, attempts,
// heartbeats, blocked), the next step and pending are left empty. A list
// that shows each batch's status, verdict and first missing boundary
// needs no more, and a page of 10,000 batches spent a fifth of their
// diagnoses on the rest. Valid until the next call, as Evaluate's.
func (e *Evaluator) Summary(s *State, c *contract.Contract, asOf time.Time, prev Previous) *Diagnosis {
	var v view
	s.evaluateStatus(&v, &e.d, c, asOf, prev, &e.sc)
	return &e.d
}

// evaluate fills d; with sc, d's slices and sc are reused.
func (s *State) evaluate(d *Diagnosis, c *contract.Contract, asOf time.Time, ctx Context, sc *scratch) {
	var v view
	verdict, first := s.evaluateStatus(&v, d, c, asOf, ctx.Previous, sc)
	v.context(d, ctx)
	if ctx.Blocked != nil && verdict != model.Delivered {
		d.Blocked = ctx.Blocked
	}
	if d.Superseded() {
		d.NextStep = NextStep{Action: ActionNone, Checks: []Check{},
			Summary: "superseded by " + d.Attempt.SupersededBy + ", the attempt that speaks for business date " + d.BusinessDate + ": nothing to do for this attempt"}
	} else {
		d.NextStep = v.nextStep(d, verdict, first)
	}
	if v.pending > 0 {
		d.Pending = time.UnixMilli(v.pending).UTC()
	}
}

// evaluateStatus fills d as far as its status (Summary), with v the
// view of s, and returns the verdict and the first missing boundary.
func (s *State) evaluateStatus(v *view, d *Diagnosis, c *contract.Contract, asOf time.Time, prev Previous, sc *scratch) (model.Hypothesis, model.Boundary) {
	asOf = asOf.UTC().Truncate(time.Millisecond)
	v.init(s, c, asOf, true, sc)
	hyps, bounds, timeline, anomalies := d.Hypotheses[:0], d.Boundaries[:0], d.Timeline[:0], d.Anomalies[:0]
	if sc == nil {
		hyps, bounds, timeline, anomalies = nil, nil, nil, nil
	}
	*d = Diagnosis{
		Batch:        v.batch,
		Pipeline:     s.key.Pipeline,
		BusinessDate: v.date,
		BatchID:      s.key.BatchID,
		AsOf:         asOf,
		Contract:     c.Name(),
		Zone:         c.Location,
		Events:       len(v.recs),
		Hypotheses:   hyps,
		Boundaries:   bounds,
		Timeline:     timeline,
		Anomalies:    anomalies,
	}
	if len(v.recs) > 0 {
		d.FirstEventAt = v.recs[0].at()
		d.LastEventAt = v.recs[len(v.recs)-1].at()
	}
	verdict := v.hypotheses(d)
	first := v.boundaries(d)
	v.anomalies(d, first, prev)
	d.Status = v.status(d, verdict, first)
	return verdict, first
}

// names renders the texts that derive from the batch's identity into one
// allocation: the batch key and its date (a part of the key's text), the
// expected batch id, and the expected artifact and signal names, of the
// date's and, for a declared re-run, of the re-run's own id.
func (v *view) names(s *State, c *contract.Contract) {
	k := s.key
	of := k
	base, n, rerun := c.AttemptOf(k)
	if rerun {
		v.rerun, of = n, base
	}
	// Rendered on the stack, then copied once: the rendered length is
	// known only after rendering.
	var stack [512]byte
	b := stack[:0]
	// The batch's name is the key's text, in the state's arena unless the
	// key is the state's own (NewState).
	text, inArena := s.keyText()
	if !inArena {
		b = appendKeyText(b, k.Pipeline, k.BusinessDate, k.BatchID)
	}
	// Offsets first, strings last: b may still move as it grows.
	var ends [6]int
	ends[0] = len(b)
	var has [5]bool
	b, has[0] = c.AppendExpectedBatchID(b, k.Pipeline, k.BusinessDate)
	ends[1] = len(b)
	b, has[1] = c.AppendArtifactName(b, of)
	ends[2] = len(b)
	b, has[2] = c.AppendSignalName(b, of)
	ends[3] = len(b)
	if rerun {
		b, has[3] = c.AppendArtifactName(b, k)
		ends[4] = len(b)
		b, has[4] = c.AppendSignalName(b, k)
		ends[5] = len(b)
	} else {
		ends[4], ends[5] = ends[3], ends[3]
	}
	// A name an event carries as it is (the final file, the signal) or
	// the key's own batch id is not copied: the state's string is the
	// same text, and stays valid as long (see Reset). The others are
	// moved down in b, then copied at once, in one string.
	var names [6]string
	var found [6]bool
	names[1], found[1] = k.BatchID, string(b[ends[0]:ends[1]]) == k.BatchID
	names[2], found[2] = v.carried(b[ends[1]:ends[2]], model.ArtifactFinalized, model.ArtifactTransferred)
	names[3], found[3] = v.carried(b[ends[2]:ends[3]], model.SignalPublished, model.SignalTransferred)
	if rerun {
		names[4], found[4] = v.carried(b[ends[3]:ends[4]], model.ArtifactFinalized, model.ArtifactTransferred)
		names[5], found[5] = v.carried(b[ends[4]:ends[5]], model.SignalPublished, model.SignalTransferred)
	}
	// at[i] is where name i starts in the copy, past its end for a name
	// not copied.
	var at [7]int
	w := ends[0]
	for i := 1; i < len(ends); i++ {
		at[i] = w
		if !found[i] {
			w += copy(b[w:], b[ends[i-1]:ends[i]])
		}
	}
	at[len(ends)] = w
	all := v.sc.str(b[:w])
	names[0] = text
	if !inArena {
		names[0] = all[:ends[0]]
	}
	for i := 1; i < len(ends); i++ {
		if !found[i] {
			names[i] = all[at[i]:at[i+1]]
		}
	}
	v.batch = names[0]
	if !k.BusinessDate.IsZero() {
		v.date = v.batch[len(k.Pipeline)+1 : len(v.batch)-len(k.BatchID)-1]
	}
	v.wantBatchID, v.hasBatchID = names[1], has[0]
	v.wantArtifact, v.hasArtifact = names[2], has[1]
	v.wantSignal, v.hasSignal = names[3], has[2]
	v.altArtifact, v.hasAltArtifact = names[4], has[3]
	v.altSignal, v.hasAltS = names[5], has[4]
	// The names of the key itself, as ArtifactName(key) and
	// SignalName(key) give them: the re-run's own, or the date's.
	v.keyArtifact, v.hasKeyArtifact = v.wantArtifact, v.hasArtifact
	v.keySignal, v.hasKeySignal = v.wantSignal, v.hasSignal
	if rerun {
		v.keyArtifact, v.hasKeyArtifact = v.altArtifact, v.hasAltArtifact
		v.keySignal, v.hasKeySignal = v.altSignal, v.hasAltS
	}
}

// Verdict returns only the verdict of the state's batch as of asOf: the
// cheap part of Evaluate, for callers that need a neighbour's verdict to
// build a Context.
func (s *State) Verdict(c *contract.Contract, asOf time.Time) model.Hypothesis {
	var v view
	v.init(s, c, asOf.UTC().Truncate(time.Millisecond), false, nil)
	return v.verdict()
}

// verdict is the verdict hypotheses reaches, from v's proofs alone: the
// first required hypothesis with no proof of its data boundary or of one
// above it on the data path.
func (v *view) verdict() model.Hypothesis {
	for _, h := range model.Hypotheses {
		hb := h.Boundary()
		if !v.c.Requires(hb) {
			continue
		}
		if v.provenDataFrom(hb) == 0 {
			return h
		}
	}
	return model.Delivered
}

// hypotheses fills d.Hypotheses and d.Verdict by the exclusion rule of
// docs/diagnosis.md, and returns the verdict.
func (v *view) hypotheses(d *Diagnosis) model.Hypothesis {
	verdict := model.Delivered
	if cap(d.Hypotheses) < len(model.Hypotheses) {
		d.Hypotheses = make([]Hypothesis, len(model.Hypotheses))
	}
	// In place, every field (see boundaries).
	d.Hypotheses = d.Hypotheses[:len(model.Hypotheses)]
	for i, h := range model.Hypotheses {
		hb := h.Boundary()
		hyp := &d.Hypotheses[i]
		hyp.Name = h
		switch {
		case !v.c.Requires(hb):
			hyp.Support = Excluded
			hyp.Evidence = noIDs
			hyp.Reason = notRequiredReason[h]
		case verdict != model.Delivered:
			// A later stretch than the one where delivery stopped: nothing
			// speaks for or against it yet.
			hyp.Support = NoEvidence
			hyp.Evidence = noIDs
			hyp.Reason = downstreamReason[verdict]
		default:
			ev := v.dataIDs[v.dataFrom[hb]:]
			if len(ev) > 0 {
				hyp.Support = Excluded
				hyp.Evidence = ev[:len(ev):len(ev)]
				hyp.Reason = exclusionReason(v, hb)
				break
			}
			verdict = h
			hyp.Support = Supported
			hyp.Evidence, hyp.Reason = v.support(h)
		}
	}
	d.Verdict = verdict
	return verdict
}

// Reasons are built once: a replay states them for every batch.
var (
	notRequiredReason = hypothesisReasons(func(h model.Hypothesis) string {
		return "the contract does not require the " + h.Boundary().String() + " boundary"
	})
	downstreamReason = hypothesisReasons(func(h model.Hypothesis) string {
		return "downstream of " + h.String() + ": no evidence either way"
	})
	// exclusionReasons is indexed by the set of proven data boundaries
	// (a BoundarySet is a byte).
	exclusionReasons = buildExclusionReasons()
)

func hypothesisReasons(f func(model.Hypothesis) string) (r [model.Delivered]string) {
	for _, h := range model.Hypotheses {
		r[h] = f(h)
	}
	return r
}

func buildExclusionReasons() *[1 << 8]string {
	m := new([1 << 8]string)
	var data []model.Boundary
	for _, b := range model.Ladder {
		if b.OnDataPath() {
			data = append(data, b)
		}
	}
	for mask := 1; mask < 1<<len(data); mask++ {
		var set model.BoundarySet
		var names []string
		for i, b := range data {
			if mask&(1<<i) != 0 {
				set = set.With(b)
				names = append(names, b.String())
			}
		}
		m[set] = "excluded by proof of " + strings.Join(names, ", ")
	}
	return m
}

func exclusionReason(v *view, from model.Boundary) string {
	return exclusionReasons[v.provenDataFrom(from)]
}

// provenDataFrom returns the proven data boundaries from b up.
func (v *view) provenDataFrom(b model.Boundary) model.BoundarySet {
	return v.provenData &^ (1<<uint(b) - 1)
}

// support returns the evidence for the hypothesis where delivery stopped,
// in time order: proof of the highest data boundary reached below it (and of
// the signals on the way), and the context events of its own step.
func (v *view) support(h model.Hypothesis) ([]string, string) {
	hb := h.Boundary()
	base := model.NoBoundary
	for b := hb - 1; b >= model.Produced; b-- {
		if b.OnDataPath() && len(v.proven[b]) > 0 {
			base = b
			break
		}
	}
	want := func(r *record) bool {
		p := r.proves()
		switch {
		case p == base && base != model.NoBoundary:
			return true
		case p == model.Signaled || p == model.SignalDelivered:
			return p > base && p < hb
		}
		switch h {
		case model.NotProduced:
			return r.typ() == model.JobStarted || r.typ() == model.JobFailed
		case model.NotFinal:
			return r.typ() == model.ArtifactStaged
		case model.NotIdentified, model.NotConsumed:
			return r.typ() == model.ConsumeStarted || r.typ() == model.ConsumeFailed
		}
		return false
	}
	ev := make([]string, 0, 4)
	for _, r := range v.recs {
		if want(r) {
			ev = append(ev, v.id(r))
		}
	}
	if h == model.NotProduced {
		switch {
		case v.stalledOnFailure(h):
			return ev, "no job SUCCESS and no later evidence; the latest attempt failed"
		case len(v.of(model.JobFailed)) > 0:
			return ev, "no job SUCCESS and no later evidence; an earlier attempt failed and a later one has not succeeded"
		case len(ev) > 0:
			return ev, "the job started but no SUCCESS and no later evidence is recorded"
		}
		return ev, "no producer evidence at all for this batch"
	}
	var reason string
	switch h {
	case model.NotFinal:
		reason = "the job reported SUCCESS but no final artifact is recorded"
	case model.NotTransferred:
		reason = "the final artifact exists at the source but is not recorded at the receiver"
	case model.NotIdentified:
		reason = "the data file is at the receiver but the receiver has not identified the batch"
	case model.NotConsumed:
		reason = "the batch was identified but no successful consumption is recorded"
	}
	if base != hb-1 && !(h == model.NotTransferred && base == model.Finalized) && !(h == model.NotIdentified && base == model.Transferred) {
		if base == model.NoBoundary {
			reason = "no data evidence below " + hb.String() + " either; nothing proves " + hb.String()
		} else {
			reason = "the latest data evidence is " + base.String() + "; nothing proves " + hb.String()
		}
	}
	return ev, reason
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
	// A closure over a copy, not a method value: a method value would move
	// the whole view to the heap.
	provenTimes := v.firstProven
	provenAt := func(b model.Boundary) (time.Time, bool) {
		if !b.Valid() || provenTimes[b].IsZero() {
			return time.Time{}, false
		}
		return provenTimes[b], true
	}
	latest := time.UnixMilli(v.latest).UTC()
	if v.latest == 0 {
		latest = time.Time{}
	}
	var dues [model.Consumed + 1]time.Time
	var hasDue [model.Consumed + 1]bool
	if v.sc != nil {
		dues, hasDue = v.c.DuesWith(&v.sc.days, v.key, provenAt, latest)
	} else {
		dues, hasDue = v.c.Dues(v.key, provenAt, latest)
	}
	if cap(d.Boundaries) < len(model.Ladder) {
		d.Boundaries = make([]BoundaryState, len(model.Ladder))
	}
	d.Boundaries = d.Boundaries[:len(model.Ladder)]
	for i, b := range model.Ladder {
		// In place, every field (the slice may hold the batch before's):
		// a struct built aside would be copied in with a bulk write
		// barrier.
		bs := &d.Boundaries[i]
		bs.Name, bs.Required, bs.Evidence = b.String(), v.c.Requires(b), v.provenOf(b)
		bs.At, bs.Due, bs.UsuallyBy = time.Time{}, time.Time{}, time.Time{}
		bs.Proven, bs.Overdue, bs.OutOfOrder = false, false, false
		if len(v.proven[b]) > 0 {
			bs.Proven = true
			bs.At = v.firstProven[b]
			bs.OutOfOrder = first != model.NoBoundary && b > first
		}
		if bs.Required && hasDue[b] {
			bs.Due = dues[b].UTC()
			v.dueBy[b] = b
		}
	}
	// A missing boundary is due no later than any missing boundary above
	// it: if consumption is due at 04:00, so is everything it needs.
	var capDue time.Time
	capBy := model.NoBoundary
	for b := model.Consumed; b >= model.Produced; b-- {
		bs := &d.Boundaries[b-1]
		if !bs.Required || bs.Proven {
			continue
		}
		if !capDue.IsZero() && (bs.Due.IsZero() || capDue.Before(bs.Due)) {
			bs.Due, v.dueBy[b] = capDue, capBy
		}
		// Only a deadline the contract states caps the ones below it: the
		// default rule is a fallback, not a promise, and must not pull a
		// stated deadline earlier (start + 24h before "business_date + 1d
		// 03:00" in a zone ahead of UTC).
		if !bs.Due.IsZero() && v.c.Deadlines[v.dueBy[b]].Kind != contract.NoDeadline && (capDue.IsZero() || bs.Due.Before(capDue)) {
			capDue, capBy = bs.Due, v.dueBy[b]
		}
	}
	for b := model.Produced; b <= model.Consumed; b++ {
		bs := &d.Boundaries[b-1]
		if bs.Due.IsZero() {
			continue
		}
		if bs.Proven {
			bs.Overdue = v.c.Deadlines[b].Kind != contract.NoDeadline && bs.At.After(bs.Due)
		} else {
			bs.Overdue = v.asOf.After(bs.Due)
		}
	}
	return first
}

// status applies the status rules of docs/diagnosis.md, first that applies.
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
			if last == nil || last.ms < r.ms || (last.ms == r.ms && v.id(last) < v.id(r)) {
				last = r
			}
		}
	}
	return last != nil && last.typ().IsFailure()
}

func fmtTime(t time.Time) string { return string(model.AppendTime(make([]byte, 0, 24), t)) }

// FormatDuration writes a duration to the minute as "1d 6h 40m" (negative
// durations with a leading "-"): the form of the replay's anomaly details,
// which reports reuse so that both read alike.
func FormatDuration(d time.Duration) string {
	return string(appendDuration(make([]byte, 0, 16), d))
}

// appendDuration appends d as FormatDuration writes it.
func appendDuration(b []byte, d time.Duration) []byte {
	neg := d < 0
	if neg {
		d = -d
	}
	d = d.Round(time.Minute)
	days := d / (24 * time.Hour)
	d -= days * 24 * time.Hour
	h := d / time.Hour
	m := (d - h*time.Hour) / time.Minute
	if neg {
		b = append(b, '-')
	}
	if days > 0 {
		b = append(strconv.AppendInt(b, int64(days), 10), "d "...)
	}
	if days > 0 || h > 0 {
		b = append(strconv.AppendInt(b, int64(h), 10), "h "...)
	}
	return append(strconv.AppendInt(b, int64(m), 10), 'm')
}

// Outcome returns the verdict of the state's batch as of asOf, and false
// when it has no event as of then (its events, if any, are all later):
// what a neighbour's verdict means to continuity and to the attempts of a
// date, the same in every mode.
func (s *State) Outcome(c *contract.Contract, asOf time.Time) (model.Hypothesis, bool) {
	var v view
	v.init(s, c, asOf.UTC().Truncate(time.Millisecond), false, nil)
	if len(v.recs) == 0 {
		return model.NotProduced, false
	}
	return v.verdict(), true
}
