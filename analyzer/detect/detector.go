package detect

import (
	"errors"
	"fmt"
	"hash/fnv"
	"slices"
	"strings"
	"time"

	"github.com/handoff-dev/handoff/analyzer/batches"
	"github.com/handoff-dev/handoff/analyzer/replay"
	"github.com/handoff-dev/handoff/analyzer/upstream"
	"github.com/handoff-dev/handoff/model"
	"github.com/handoff-dev/handoff/model/contract"
)

// Contracts gives the delivery contract of a pipeline and lists the
// pipelines that have one (whose schedules make the expected-batch
// calendar). contract.Set implements it.
type Contracts interface {
	// For must return a non-nil contract (the default one for a pipeline
	// without a file). It is asked often, so it should not build a
	// contract per call: contract.Set keeps each pipeline's default.
	For(pipeline string) *contract.Contract
	Pipelines() []string
}

// DefaultRetain is how many days, by business date before the safe time's
// date, a closed batch is remembered when Config.Retain is 0.
const DefaultRetain = 35

// Config is what a Detector needs. Only Contracts is required.
type Config struct {
	Contracts Contracts
	// From is the first business date of the expected-batch calendar: from
	// it on, every batch the contracts' schedules expect is watched, events
	// or not. The zero Date turns the calendar off (only batches with
	// events are watched). The calendar never starts before the retention
	// horizon (Retain days before the safe time's date).
	From model.Date
	// Owns selects the batches this instance watches (nil: all). The wiring
	// derives it from the Kafka partitions it is assigned, with the
	// partitioner of the batch key, so that instances split the work as
	// they split the events topic.
	Owns func(model.BatchKey) bool
	// Retain is how many days closed batches are remembered (their verdict
	// for continuity, their event ids to tell a redelivery from a new
	// event); 0 means DefaultRetain.
	Retain int
	// Baselines, when not nil, turns on the early warning (Unusual) and,
	// for pipelines without a contract, the learned calendar.
	Baselines *Baselines
}

// Detector is the streaming detector's engine: the folded state of every
// open batch, a deadline timer per batch, the expected-batch calendar and
// the findings' lifecycle. It does no I/O and reads no clock: events come
// in through Observe, time through Advance. It is not safe for concurrent
// use; one goroutine owns it.
//
// The contract with the wiring:
//
//   - Observe every event read from the events topic (heartbeats too), in
//     any order, duplicates allowed.
//   - Call Advance(now, safe) regularly (say every second), with now the
//     wall clock and safe the latest time T such that every event that was
//     in the topic at T has been observed (from the committed positions
//     against the log end offsets). Publish the findings it returns, in
//     order, keyed by batch key; commit the consumed offsets only after
//     they are acknowledged.
//   - On start: Floor the detector at the clock (no Advance will come with
//     an earlier safe time), Observe the stored history of the retention
//     window (events read back from ClickHouse), Restore the latest
//     published record of each fingerprint, then resume the consumer at
//     its committed offsets and Advance. Conditions that held and were published are not
//     published again; deadlines that passed while down fire once.
//   - When Observe reports false, the event reopened a batch that was
//     closed: Observe its stored history, then Resume it.
//   - On a rebalance: Release the batches of revoked partitions, SetOwns
//     the new predicate, and Observe the stored history of assigned
//     partitions plus Restore their findings, as on start.
type Detector struct {
	contracts Contracts
	owns      func(model.BatchKey) bool
	from      model.Date
	retain    int

	open   openSet
	closed map[model.BatchKey]closedBatch
	// reruns lists the declared re-runs with events (open or closed) of
	// each scheduled batch: the attempts of a date.
	reruns batches.RerunIndex
	// first is each pipeline's earliest business date with events: the
	// start of what is known, as in batches.Set.
	first map[string]model.Date
	procs batches.Processes
	// early holds what was folded ahead of the safe time (a producer's
	// clock ahead, or events read before the rest of their moment): a
	// heartbeat joins procs, and a batch event's batch is evaluated again,
	// once the safe time reaches it, as diagnose as of that time would
	// read it.
	early []early

	timers timers
	wakes  wakes
	dirty  []*batch
	// last is the batch of the last event Observe folded (nil: none, or
	// forgotten): a restore's history comes a batch's events in a row (a
	// part's rows in its key's order), and a producer's batch its events
	// close together, so most events find their batch without the open
	// set's hash and lookup. It is checked against the event's key, and a
	// batch closed or released is no longer taken (slotGone).
	last *batch
	// touched is the batch step last touched, while that touch still
	// stands: no batch opened and no dirty mark cleared since (newBatch,
	// Release and AdvanceEach forget it). Touching it again would mark
	// nothing, so the next events of its run skip touch's lookups of the
	// batch's neighbours (downstream, attempts of its date).
	touched *batch
	// waiting lists the batches suspended since the last Suspended call
	// (some may have been resumed or released since): Suspended and Stats
	// run at every Advance and must not walk every open batch.
	waiting []*batch
	// evaluated lists the batches evaluated at the last Advance; those
	// that got no event since have gone quiet, and the next Advance
	// freezes their state (cold.go; freezing after every evaluation would
	// pack and unpack a busy batch at every event).
	evaluated []*batch
	// calendar is the last business date expanded per pipeline.
	calendar map[string]model.Date
	horizon  model.Date // closed batches before it are forgotten
	// pipelines interns the pipeline names of batches; names and nameList
	// are the names frozen batches share (cold.go); scratch, enc and table
	// are freeze's and thaw's buffers.
	pipelines map[string]*pipeline
	names     map[string]uint32
	nameList  []string
	// words are the kinds, names and statuses of restored findings, one
	// string each (word).
	words   map[string]string
	scratch []model.Event
	enc     []byte
	table   []string

	safe time.Time
	// floor is the earliest safe time an Advance may come with (Floor):
	// before the first Advance, heartbeats up to it are as good as folded.
	floor    time.Time
	verdicts map[model.BatchKey]outcome // per evaluation round
	// out is the findings of the batch being evaluated (AdvanceEach).
	out  []Finding
	base *baseState // nil: no early warning
	// graph is the reverse of the contracts' upstreams (nil: none listed);
	// upstreams answers the blocked rule for one evaluation round.
	graph     *upstream.Graph
	upstreams *upstream.Resolver
}

// outcome is a cached replay.State.Outcome.
type outcome struct {
	verdict model.Hypothesis
	seen    bool
}

type early struct {
	ms        int64
	b         *batch       // a batch event's batch
	heartbeat *model.Event // or a heartbeat
}

// batch is one open batch: its folded state (live while it changes or is
// read, frozen once it has gone quiet: cold.go), its timer and the records
// of its findings. No raw event is kept. Its key is kept in parts: the
// pipeline interned, the date in 6 bytes (model.Date takes 24; business
// dates have 4-digit years, model.ParseDate).
type batch struct {
	pipe *pipeline
	id   string
	// live is the state while the batch changes or is read (nil: frozen
	// in cold, the empty string for a batch without events).
	live *replay.State
	cold string
	// fs holds the records of the batch's findings (nil: none yet): most
	// open batches have none, and a pointer takes 16 bytes less than a
	// slice, a size class less for every open batch.
	fs       *[]tracked
	due      int64 // next timer, Unix ms; 0 when not armed
	slot     int32 // position in the timer heap, -1 when not armed, slotGone once closed or released
	year     int32
	month    uint8
	day      uint8
	dirty    bool
	expected bool // put there by the calendar, not by an event
	// suspended: the batch was closed, an event reopened it, and its
	// earlier events are gone until the wiring folds its history back in.
	suspended bool
	// delivered: the batch was closed as delivered; while suspended, that
	// is its verdict for continuity.
	delivered bool
}

func (b *batch) date() model.Date {
	return model.Date{Year: int(b.year), Month: time.Month(b.month), Day: int(b.day)}
}

// key returns b's batch key; its strings are the detector's (the
// pipeline) and b's own.
func (b *batch) key() model.BatchKey {
	return model.BatchKey{Pipeline: b.pipe.name, BusinessDate: b.date(), BatchID: b.id}
}

// is reports whether b is batch k.
func (b *batch) is(k model.BatchKey) bool {
	return b.id == k.BatchID && int(b.day) == k.BusinessDate.Day && time.Month(b.month) == k.BusinessDate.Month &&
		int(b.year) == k.BusinessDate.Year && b.pipe.name == k.Pipeline
}

// findings returns the records of b's findings; they may be changed in
// place, not appended to (see track).
func (b *batch) findings() []tracked {
	if b.fs == nil {
		return nil
	}
	return *b.fs
}

// track appends t to b's findings records.
func (b *batch) track(t tracked) {
	if b.fs == nil {
		b.fs = new([]tracked)
	}
	*b.fs = append(*b.fs, t)
}

// len is the number of distinct events folded into b.
func (b *batch) len() int {
	if b.live != nil {
		return b.live.Len()
	}
	return coldLen(b.cold)
}

// slotGone marks a batch no longer open (closed or released): a flag in
// the slot rather than a field. The batch struct is 80 bytes, 2 short of
// the next size class (TestBatchSize), for every open batch.
const slotGone = -2

// tracked is what the detector remembers of one fingerprint between
// evaluations: enough to know what was published, not the diagnosis. Times
// are Unix milliseconds (0: none), the precision of a finding's JSON: 104
// bytes rather than 152, in every open batch with a finding.
type tracked struct {
	fp       uint64
	kind     Kind
	name     string
	state    State
	status   replay.Status
	raised   int64
	resolved int64
	deadline int64
	seq      int32
	// root is the incident the finding was last published under
	// (RootFingerprint of its root batch, hashed): a change of cause is
	// an update of an open finding.
	root uint64
}

// msOf is t in Unix milliseconds, 0 for the zero time.
func msOf(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMilli()
}

// timeOf is the UTC time of Unix milliseconds ms, the zero time for 0.
func timeOf(ms int64) time.Time {
	if ms == 0 {
		return time.Time{}
	}
	return time.UnixMilli(ms).UTC()
}

// closedBatch is what remains of a delivered batch with no open finding:
// its verdict is delivered (which continuity needs), the 64-bit hashes of
// its event ids, sorted, so that a redelivered event is recognised, and
// the fingerprints and sequence numbers of its resolved findings, so that
// a reopened batch publishes none of them again.
type closedBatch struct {
	ids  []uint64
	done []doneFinding
}

type doneFinding struct {
	fp  uint64
	seq int32
}

// New returns a Detector for cfg.
func New(cfg Config) (*Detector, error) {
	if cfg.Contracts == nil {
		return nil, errors.New("detect: Config.Contracts is nil: give the contract set (contract.LoadFS)")
	}
	if cfg.Retain < 0 {
		return nil, fmt.Errorf("detect: Config.Retain is %d: want days >= 0 (0 means %d)", cfg.Retain, DefaultRetain)
	}
	d := &Detector{
		contracts: cfg.Contracts,
		owns:      cfg.Owns,
		from:      cfg.From,
		retain:    cfg.Retain,
		open:      newOpenSet(),
		pipelines: make(map[string]*pipeline),
		names:     make(map[string]uint32),
		closed:    make(map[model.BatchKey]closedBatch),
		first:     make(map[string]model.Date),
		calendar:  make(map[string]model.Date),
		base:      newBaseState(cfg.Baselines),
	}
	if d.retain == 0 {
		d.retain = DefaultRetain
	}
	if g := upstream.NewGraph(cfg.Contracts); !g.Empty() {
		d.graph = g
	}
	return d, nil
}

func (d *Detector) owned(k model.BatchKey) bool { return d.owns == nil || d.owns(k) }

// Observe folds event e into its batch's state. Heartbeats go to the
// pipeline's latest-heartbeat table; events of batches this instance does
// not own are ignored. Nothing is evaluated here: Advance evaluates the
// batches that changed.
//
// It reports false when e's batch is suspended: e belongs to a batch that
// was closed (or forgotten, before the retention horizon) and is not a
// redelivery of an event already folded, so the batch's earlier events are
// no longer held; or Restore suspended it. A suspended batch is not
// evaluated until the caller has observed its stored history (the results
// of those calls do not matter) and called Resume.
func (d *Detector) Observe(e *model.Event) bool {
	d.learnEvent(e)
	if !e.Type.HasBatch() {
		// A heartbeat counts once the safe time reaches it, as diagnose as
		// of that time counts it: one stamped later (a clock ahead, or a
		// history read back before the first Advance, whose safe time is
		// not known yet) waits, so that the latest heartbeat kept of its
		// process is not one later than the evaluation.
		if bound := d.known(); bound.IsZero() || e.Time.After(bound) {
			hb := *e
			hb.Attrs = nil
			d.early = append(d.early, early{ms: e.Time.UnixMilli(), heartbeat: &hb})
		} else {
			d.procs.Add(e)
		}
		return true
	}
	if !e.Type.Known() {
		return true
	}
	k := e.Key()
	// An open batch is owned: Release forgets the batches a new predicate
	// leaves out, and nothing opens one that is not owned. Looking it up
	// first spares the predicate (a hash of the key's text in the wiring)
	// for every event but a batch's first: a restore folds millions.
	if b := d.openBatch(k); b != nil {
		d.step(b, e)
		return !b.suspended
	}
	if !d.owned(k) {
		return true
	}
	if cb, ok := d.closed[k]; ok {
		if _, dup := slices.BinarySearch(cb.ids, hashID(e.ID)); dup {
			return true
		}
		d.step(d.reopen(k, cb), e)
		return false
	}
	b := d.newBatch(k)
	if !d.horizon.IsZero() && k.BusinessDate.Compare(d.horizon) < 0 {
		d.suspend(b)
	}
	d.last = b
	d.step(b, e)
	return !b.suspended
}

// openBatch returns the open batch k (nil: none), the last one Observe
// folded into when it is k (see Detector.last).
func (d *Detector) openBatch(k model.BatchKey) *batch {
	if b := d.last; b != nil && b.slot != slotGone && b.is(k) {
		return b
	}
	b := d.open.get(k)
	if b != nil {
		d.last = b
	}
	return b
}

// known is the time up to which a heartbeat may be kept at once: the safe
// time of the last Advance, or the floor when later (zero: none yet).
func (d *Detector) known() time.Time {
	if d.floor.After(d.safe) {
		return d.floor
	}
	return d.safe
}

// Floor tells the detector that no Advance will come with a safe time
// before t (a safe time before it is taken as t). The wiring calls it with
// its clock before it reads history back: the watermark's first safe time
// is taken after that, on the same clock. Heartbeats stamped up to t are
// then kept as they are observed, only the latest of each process; without
// a floor, every heartbeat observed before the first Advance is held until
// that Advance knows which of them are as of its safe time.
func (d *Detector) Floor(t time.Time) {
	t = t.UTC().Truncate(time.Millisecond)
	if t.After(d.floor) {
		d.floor = t
	}
}

// reopen turns closed batch k back into an open one, suspended until its
// history is folded in, remembering its resolved findings.
func (d *Detector) reopen(k model.BatchKey, cb closedBatch) *batch {
	delete(d.closed, k)
	b := d.newBatch(k)
	d.suspend(b)
	b.delivered = true
	for _, f := range cb.done {
		b.track(tracked{fp: f.fp, state: Resolved, seq: f.seq})
	}
	return b
}

func (d *Detector) newBatch(k model.BatchKey) *batch {
	// The key's strings are copies: k may point into a decoded event's
	// buffer, which the batch would then keep alive. The state comes with
	// the first event (an expected batch may never have one).
	b := &batch{pipe: d.pipelineOf(k.Pipeline), id: strings.Clone(k.BatchID), slot: -1,
		year: int32(k.BusinessDate.Year), month: uint8(k.BusinessDate.Month), day: uint8(k.BusinessDate.Day)}
	d.open.put(b)
	// A batch opened may be a neighbour the last touch did not find.
	d.touched = nil
	return b
}

func (d *Detector) step(b *batch, e *model.Event) {
	had := b.len() > 0
	if !d.liveOf(b).Step(e) {
		return
	}
	if !d.safe.IsZero() && e.Time.After(d.safe) {
		// Before the first Advance (a restore) every event is ahead of the
		// zero safe time; those batches fall back on settle's timer.
		d.early = append(d.early, early{ms: e.Time.UnixMilli(), b: b})
	}
	if !had {
		k := b.key()
		d.reruns.Add(d.contractOf(b), k)
		if f, ok := d.first[k.Pipeline]; !ok || k.BusinessDate.Compare(f) < 0 {
			d.first[k.Pipeline] = k.BusinessDate
		}
	}
	if d.touched != b {
		d.touch(b)
		d.touched = b
	}
}

// touch marks b for evaluation with the other attempts of its date (its
// scheduled batch and the declared re-runs of it): an event of one attempt
// can supersede another, end a missing one, or hand the date back.
func (d *Detector) touch(b *batch) {
	d.markDirty(b)
	k := b.key()
	// The batches waiting on this one: their blocked cause may change.
	for _, dk := range d.graph.Downstream(k) {
		if o := d.open.get(dk); o != nil {
			d.markDirty(o)
		}
	}
	c := d.contractOf(b)
	if c.Reruns.Off() {
		return
	}
	base, _, _ := c.AttemptOf(k)
	if base != k {
		if o := d.open.get(base); o != nil {
			d.markDirty(o)
		}
	}
	sib := base
	for _, id := range d.reruns.Ids(base) {
		if sib.BatchID = id; id != k.BatchID {
			if o := d.open.get(sib); o != nil {
				d.markDirty(o)
			}
		}
	}
}

func (d *Detector) markDirty(b *batch) {
	if !b.dirty {
		b.dirty = true
		d.dirty = append(d.dirty, b)
	}
}

// Resume ends the suspension of batch k once its stored history has been
// observed; it is evaluated at the next Advance. It reports whether k was
// suspended.
func (d *Detector) Resume(k model.BatchKey) bool {
	b := d.open.get(k)
	if b == nil || !b.suspended {
		return false
	}
	b.suspended = false
	d.touch(b)
	return true
}

// Suspended lists the batches waiting for their history (see Observe), in
// key order.
func (d *Detector) Suspended() []model.BatchKey {
	d.pruneWaiting()
	if len(d.waiting) == 0 {
		return nil
	}
	out := make([]model.BatchKey, len(d.waiting))
	for i, b := range d.waiting {
		out[i] = b.key()
	}
	return out
}

func (d *Detector) suspend(b *batch) {
	if !b.suspended {
		b.suspended = true
		d.waiting = append(d.waiting, b)
	}
}

// pruneWaiting keeps in waiting only the batches still open and
// suspended, once each.
func (d *Detector) pruneWaiting() {
	kept := d.waiting[:0]
	for _, b := range d.waiting {
		if b.suspended && b.slot != slotGone && d.open.get(b.key()) == b {
			kept = append(kept, b)
		}
	}
	clear(d.waiting[len(kept):])
	// In key order, once each (a batch resumed and suspended again is
	// listed twice).
	slices.SortFunc(kept, func(a, b *batch) int { return a.key().Compare(b.key()) })
	d.waiting = slices.Compact(kept)
}

// Restore loads findings published before a restart (or by the instance
// that owned a partition before a rebalance): the latest record of each
// fingerprint, in any order (for one fingerprint the highest Seq wins).
// Call it after observing the stored history and before the first
// Advance. An open finding keeps firing without being published again as
// long as its condition holds; a condition that ended while the detector
// was down is resolved at the next Advance; a resolved one is not
// published again. Findings of batches this instance does not own are
// ignored. An open finding of a batch with no stored events (other than
// missing) suspends the batch: its history is needed (see Suspended).
func (d *Detector) Restore(fs ...Finding) error {
	for i := range fs {
		f := &fs[i]
		if f.State != Open && f.State != Resolved {
			return fmt.Errorf("detect: restore: finding %s of %s: state %q: want open or resolved", f.Fingerprint, f.Batch, f.State)
		}
		fp := fingerprint(f.Batch, f.Kind, f.Name)
		var hex [16]byte // compared, not kept: no string per finding
		if f.Fingerprint != string(appendFingerprint(hex[:0], fp)) {
			return fmt.Errorf("detect: restore: finding of %s (%s %s): fingerprint %q, want %s: not a record this detector wrote", f.Batch, f.Kind, f.Name, f.Fingerprint, fmtFingerprint(fp))
		}
		if !d.owned(f.Batch) {
			continue
		}
		b := d.openBatch(f.Batch)
		if b == nil {
			if f.State == Resolved {
				// Nothing of the batch is open: its conditions have ended
				// and would not be raised again from a closed batch.
				continue
			}
			if cb, ok := d.closed[f.Batch]; ok {
				b = d.reopen(f.Batch, cb)
			} else if b = d.newBatch(f.Batch); f.Kind == Missing {
				b.expected = true
			} else {
				d.suspend(b)
			}
		}
		t := tracked{fp: fp, kind: Kind(d.word(string(f.Kind))), name: d.word(f.Name), state: Open, status: replay.Status(d.word(string(f.Status))),
			seq: int32(f.Seq), raised: msOf(f.RaisedAt), resolved: msOf(f.ResolvedAt), deadline: msOf(f.Deadline)}
		if f.State == Resolved {
			t.state = Resolved
		}
		if j := b.find(fp); j >= 0 {
			if b.findings()[j].seq >= t.seq {
				continue
			}
			b.findings()[j] = t
		} else {
			b.track(t)
		}
		d.markDirty(b)
	}
	return nil
}

// maxWords bounds the words Restore shares (Detector.words): the kinds,
// names and statuses of findings number a few dozen.
const maxWords = 1024

// word returns s, or the string equal to it that a finding restored before
// kept: the kind, name and status of a record read back are strings of
// their own, and a takeover keeps hundreds of thousands of records for
// the batches' lifetime, four small objects each for the collector to
// mark at every cycle.
func (d *Detector) word(s string) string {
	if w, ok := d.words[s]; ok {
		return w
	}
	if d.words == nil {
		d.words = make(map[string]string)
	}
	if len(d.words) < maxWords {
		d.words[s] = s
	}
	return s
}

// SetOwns replaces the ownership predicate after a rebalance (nil: all).
// The calendar is expanded again for newly owned batches at the next
// Advance; batches no longer owned must be released with Release.
func (d *Detector) SetOwns(owns func(model.BatchKey) bool) {
	d.owns = owns
	clear(d.calendar)
}

// Release forgets every batch (open or closed) for which pred is true, with
// its timer and findings, and returns how many it forgot: the hand-over of
// a rebalance (the new owner restores them from history and the published
// findings). Nothing is published for them.
func (d *Detector) Release(pred func(model.BatchKey) bool) int {
	d.last, d.touched = nil, nil
	n := 0
	for b := range d.open.all() {
		if k := b.key(); pred(k) {
			d.timers.disarm(b)
			b.dirty, b.slot = false, slotGone
			d.open.del(b)
			d.forgetDate(k)
			n++
		}
	}
	for k := range d.closed {
		if pred(k) {
			delete(d.closed, k)
			d.forgetDate(k)
			n++
		}
	}
	d.dirty = slices.DeleteFunc(d.dirty, func(b *batch) bool { return !b.dirty })
	return n
}

func (d *Detector) forgetDate(k model.BatchKey) {
	d.reruns.Remove(d.contracts.For(k.Pipeline), k)
}

// Stats counts what the detector holds, for metrics.
type Stats struct {
	Open, Closed, Armed, Suspended int
	// Safe is the safe time of the last Advance.
	Safe time.Time
}

// Stats returns the current counts.
func (d *Detector) Stats() Stats {
	d.pruneWaiting()
	return Stats{Open: d.open.len(), Closed: len(d.closed), Armed: len(d.timers), Suspended: len(d.waiting), Safe: d.safe}
}

// Safe returns the safe time of the last Advance (zero before the first):
// Stats().Safe without counting what the detector holds.
func (d *Detector) Safe() time.Time { return d.safe }

// Advance moves the detector's time to now, with evidence complete up to
// safe, and returns the findings to publish, in batch key order.
//
// Only deadlines at or before safe fire: a deadline between safe and now
// waits until the events that were in the topic by then have been folded,
// so the detector's own lag (or ingest's) never raises a finding. Every
// batch that changed or whose timer fired is evaluated as of safe; the
// findings carry now as raised_at or resolved_at and safe as
// evidence_as_of. safe later than now is taken as now; a safe earlier than
// the previous one is taken as the previous one, and one earlier than the
// floor (Floor) as the floor; a zero safe (no evidence yet) evaluates
// nothing.
func (d *Detector) Advance(now, safe time.Time) []Finding {
	var out []Finding
	d.AdvanceEach(now, safe, func(f *Finding) { out = append(out, *f) })
	return out
}

// AdvanceEach is Advance handing each finding to fn as soon as it is made,
// in the order Advance returns them, instead of collecting them: after a
// fault or a restart one Advance can raise hundreds of thousands of
// findings, each with its batch's diagnosis, and the caller can encode
// and publish them as they come rather than hold them all. *f is valid
// only during the call (copy it to keep it); fn must not call d.
func (d *Detector) AdvanceEach(now, safe time.Time, fn func(f *Finding)) {
	now = now.UTC().Truncate(time.Millisecond)
	safe = safe.UTC().Truncate(time.Millisecond)
	if safe.After(now) {
		safe = now
	}
	if safe.Before(d.safe) {
		safe = d.safe
	}
	if safe.IsZero() {
		// No evidence yet (a stream before its first watermark): a
		// judgement as of nothing would resolve every restored finding and
		// carry no evidence_as_of. The batches stay dirty for the first
		// Advance with evidence.
		return
	}
	if safe.Before(d.floor) && !d.floor.After(now) {
		safe = d.floor
	}
	d.safe = safe
	// Every dirty mark is cleared below: the next event touches again.
	d.touched = nil
	d.compactQuiet()
	d.moveHorizon(safe)
	d.expand(safe)
	d.refreshBaselines(safe)
	for b := d.timers.pop(safe.UnixMilli()); b != nil; b = d.timers.pop(safe.UnixMilli()) {
		d.markDirty(b)
	}
	d.reach(safe.UnixMilli())
	work := d.dirty
	d.dirty = nil
	slices.SortFunc(work, func(a, b *batch) int { return a.key().Compare(b.key()) })
	d.verdicts = make(map[model.BatchKey]outcome)
	d.round()
	for _, b := range work {
		if b.suspended {
			// Evaluated once resumed; Resume marks it dirty again.
			b.dirty = false
			continue
		}
		b.dirty = false
		if b.slot == slotGone {
			continue // released meanwhile
		}
		d.out = d.evaluate(b, now, safe, d.out[:0])
		for i := range d.out {
			fn(&d.out[i])
		}
		// The diagnoses are the caller's now: not kept alive by the
		// scratch until the next batch with findings overwrites them.
		clear(d.out)
		d.evaluated = append(d.evaluated, b)
	}
	d.verdicts, d.upstreams = nil, nil
	// After the evaluations, which add the instants they armed.
	d.wakes.drop(safe.UnixMilli())
}

// round starts an evaluation round of the upstream rule: one resolver,
// so a chain's root is worked out once per round.
func (d *Detector) round() {
	if d.graph != nil {
		d.upstreams = upstream.New(d.contracts, neighbours{d})
	}
}

// compactQuiet freezes the state of every batch evaluated at the last
// Advance that has had no event since and is still open: an open batch
// waits for its next event or deadline, often for hours, at the size of
// what it holds.
func (d *Detector) compactQuiet() {
	for _, b := range d.evaluated {
		if !b.dirty && b.slot != slotGone {
			d.freeze(b)
		}
	}
	// Dropped rather than cleared: a round can evaluate every open batch,
	// and the next one a few.
	d.evaluated = nil
}

// reach folds the early heartbeats the safe time has reached and marks
// the batches of early events it reached for evaluation.
func (d *Detector) reach(safeMs int64) {
	kept := d.early[:0]
	for _, x := range d.early {
		switch {
		case x.ms > safeMs:
			kept = append(kept, x)
		case x.heartbeat != nil:
			d.procs.Add(x.heartbeat)
		case d.open.get(x.b.key()) == x.b:
			d.touch(x.b)
		}
	}
	clear(d.early[len(kept):])
	if cap(kept) > 64 && cap(kept) > 4*len(kept) {
		kept = slices.Clone(kept)
	}
	d.early = kept
}

// moveHorizon forgets closed batches older than the retention window.
func (d *Detector) moveHorizon(safe time.Time) {
	if safe.IsZero() {
		return
	}
	h := dateOf(safe).AddDays(-d.retain)
	if h.Compare(d.horizon) <= 0 {
		return
	}
	d.horizon = h
	for k := range d.closed {
		if k.BusinessDate.Compare(h) < 0 {
			delete(d.closed, k)
			d.forgetDate(k)
		}
	}
}

func dateOf(t time.Time) model.Date {
	y, m, day := t.UTC().Date()
	return model.Date{Year: y, Month: m, Day: day}
}

// hashID is the 64-bit FNV-1a hash of an event id: what a closed batch
// keeps of each event to recognise a redelivery.
func hashID(id string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(id))
	return h.Sum64()
}

// Neighbours for the continuity rule (batches.PreviousOf), as of the
// evaluation round's safe time.

type neighbours struct{ d *Detector }

func (n neighbours) First(pipeline string) (model.Date, bool) {
	f, ok := n.d.first[pipeline]
	return f, ok
}

func (n neighbours) Verdict(k model.BatchKey) (model.Hypothesis, bool) {
	d := n.d
	if b := d.open.get(k); b != nil && b.suspended && b.delivered {
		return model.Delivered, true
	} else if b != nil && b.len() > 0 {
		o, ok := d.verdicts[k]
		if !ok {
			o.verdict, o.seen = d.thaw(b).Outcome(d.contracts.For(k.Pipeline), d.safe)
			d.verdicts[k] = o
		}
		return o.verdict, o.seen
	}
	if _, ok := d.closed[k]; ok {
		return model.Delivered, true
	}
	return 0, false
}

// Brief answers upstream.Batches: a closed batch was delivered; an open
// one is replayed as of the round's safe time.
func (n neighbours) Brief(k model.BatchKey) (model.Hypothesis, model.Boundary, bool) {
	d := n.d
	if !d.horizon.IsZero() && k.BusinessDate.Compare(d.horizon) < 0 {
		// Forgotten with the closed batches past retention: not known to
		// block anything, as diagnose over that window would not know it.
		return model.Delivered, model.NoBoundary, true
	}
	if b := d.open.get(k); b != nil && b.suspended && b.delivered {
		return model.Delivered, model.NoBoundary, true
	} else if b != nil && b.len() > 0 {
		v, fm, seen := d.thaw(b).Brief(d.contracts.For(k.Pipeline), d.safe)
		return v, fm, seen
	}
	if _, ok := d.closed[k]; ok {
		return model.Delivered, model.NoBoundary, true
	}
	return model.NotProduced, model.NoBoundary, false
}

func (n neighbours) Reruns(base model.BatchKey) []model.BatchKey { return n.d.reruns.Of(base) }

// Diagnosis returns the diagnosis of open batch k as of the safe time of
// the last Advance, with the context the detector evaluates it with (what
// a `handoff detect` status page would show). It reports false when k is
// not open: closed (delivered, nothing open), released or never seen.
func (d *Detector) Diagnosis(k model.BatchKey) (replay.Diagnosis, bool) {
	b := d.open.get(k)
	if b == nil {
		return replay.Diagnosis{}, false
	}
	d.verdicts = make(map[model.BatchKey]outcome)
	d.round()
	defer func() { d.verdicts, d.upstreams = nil, nil }()
	return d.diagnose(b, d.contracts.For(k.Pipeline), d.safe), true
}

// diagnose evaluates b as of safe with its continuity and heartbeat
// context, as batches.Set does for `handoff diagnose`.
func (d *Detector) diagnose(b *batch, c *contract.Contract, safe time.Time) replay.Diagnosis {
	k := b.key()
	ctx := replay.Context{
		Previous: batches.PreviousOf(k, c, neighbours{d}),
		Attempt:  batches.AttemptContext(k, c, neighbours{d}),
		Alive:    d.procs.Alive(k.Pipeline, func(h replay.Heartbeat) bool { return !h.At.After(safe) }),
	}
	if d.upstreams != nil {
		ctx.Blocked = d.upstreams.Blocked(k)
	}
	diag := d.thaw(b).Evaluate(c, safe, ctx)
	d.annotate(&diag, k)
	return diag
}
