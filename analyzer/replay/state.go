// Package replay is handoff's analyzer core: a pure fold from one batch's
// delivery events to a Diagnosis, following the rules of docs/diagnosis.md.
//
// It is built as a step function and an evaluation:
//
//	var s replay.State
//	s.Step(&event)             // for each event, in any order, any number of times
//	d := s.Evaluate(c, asOf, continuity)
//
// Replay is the fold of Step over a slice followed by Evaluate. The state
// keeps each distinct event once (by event_id) and Evaluate sorts what it
// reads, so arrival order and duplicates never change a diagnosis. That is
// what lets a caller that keeps states alive and calls Step as events
// arrive (the planned streaming detector) reach the same answer as a
// replay of the whole history (handoff diagnose today, a backfill later).
//
// A loop over many batches reuses its memory: State.Reset between batches
// and an Evaluator, whose diagnosis is valid until its next Evaluate.
package replay

import (
	"time"
	"unsafe"

	"github.com/handoff-dev/handoff/model"
)

// fields is the part of an event the replay reads, as Step gets it; the
// State stores it as a record (pack.go). Attrs are left out: no rule reads
// them, and a batch's state should stay small.
type fields struct {
	id         string
	ms         int64 // event time, Unix milliseconds
	ti         int8  // index of the event type in model.EventTypes
	side       int8  // index of the emitting system in sideOrder
	component  string
	object     string
	checksum   string
	err        string
	rows       int64
	bytes      int64
	attempt    int64
	hasRows    bool
	hasBytes   bool
	hasAttempt bool
}

// less is a total order on events' fields. Two events with one event_id
// but other contents (a producer bug) must resolve to the same survivor
// whatever order they arrived in, so the state keeps the least.
func (r *fields) less(o *fields) bool {
	switch {
	case r.ms != o.ms:
		return r.ms < o.ms
	case r.id != o.id:
		return r.id < o.id
	case r.ti != o.ti:
		return r.ti < o.ti
	case r.side != o.side:
		return r.side < o.side
	case r.component != o.component:
		return r.component < o.component
	case r.object != o.object:
		return r.object < o.object
	case r.checksum != o.checksum:
		return r.checksum < o.checksum
	case r.err != o.err:
		return r.err < o.err
	case r.hasRows != o.hasRows:
		return !r.hasRows
	case r.rows != o.rows:
		return r.rows < o.rows
	case r.hasBytes != o.hasBytes:
		return !r.hasBytes
	case r.bytes != o.bytes:
		return r.bytes < o.bytes
	case r.hasAttempt != o.hasAttempt:
		return !r.hasAttempt
	}
	return r.attempt < o.attempt
}

// indexThreshold is the batch size from which the state indexes event ids
// with a map; below it a linear scan is cheaper than hashing.
const indexThreshold = 24

// State is the folded evidence of one batch: each distinct event once. The
// zero State is empty and ready; its key is taken from the first event.
// A State is not safe for concurrent use, and must not be copied once it
// holds events: copies would share one arena (see pack.go).
//
// The state is kept compact, because the streaming detector holds one per
// open batch (the target: under 2 KiB each, docs/performance.md): records are 56 bytes with no
// pointers, and their strings live in one arena per batch, copied out of
// the events, so that a decoder's per-event buffers are not kept alive by
// the state. Compact trims both to their length.
type State struct {
	key     model.BatchKey
	records []record
	arena   []byte
	index   map[string]int32 // event_id -> position, once len(records) >= indexThreshold
	// keyLen is the length of the key's text at the start of the arena
	// (0: the key is not in the arena).
	keyLen int32
	// garbage: the arena holds strings of a replaced record.
	garbage bool
	// reused: Reset emptied the state; its arena grows by arenaChunk.
	reused bool
	// tags has bit tag%16 set for the idTag of every record: find scans
	// the records only for an id whose bit is set (a new event's, about
	// half the time in a batch of a dozen). It fits the struct's padding.
	tags uint16
}

// Reset empties s for another batch (its key is taken from the next
// Step, as for the zero State) and keeps its memory: the records' room,
// and the arena's room past the strings of the batch before, which it
// fills from there on. The arena's bytes are never written twice, so the
// strings of diagnoses evaluated before Reset, and the key Key returned,
// stay valid. A caller that folds batch after batch (a loop over a file,
// a backfill) resets one State instead of allocating one per batch.
func (s *State) Reset() {
	*s = State{records: s.records[:0], arena: s.arena[len(s.arena):], reused: true}
}

// Recycle empties s for another batch as Reset does, but fills its arena
// from the start again: the key Key returned and every string of a
// diagnosis evaluated from s before (evidence ids, timeline names, the
// batch's name) are overwritten by the next batch's. It is for a loop
// that keeps nothing of a diagnosis, strings included, once the next
// batch is stepped in (batches.Ordered, whose caller renders each
// diagnosis at once): a batch's strings then take no new memory, where
// with Reset they were most of the replay's allocations and of its
// garbage collection (a quarter of a batch loop's instructions,
// 2026-12-02).
func (s *State) Recycle() {
	*s = State{records: s.records[:0], arena: s.arena[:0], reused: true}
}

// Key returns the batch key of the state (zero before the first Step).
// When the key came from the first event (not NewState), its strings share
// the state's arena: a caller that keeps the key longer than the state, or
// across Compact, keeps that arena alive too.
func (s *State) Key() model.BatchKey { return s.key }

// Len returns the number of distinct events folded in.
func (s *State) Len() int { return len(s.records) }

// FirstEventAt returns the time of the earliest event folded in.
func (s *State) FirstEventAt() time.Time {
	if len(s.records) == 0 {
		return time.Time{}
	}
	ms := s.records[0].ms
	for i := range s.records {
		ms = min(ms, s.records[i].ms)
	}
	return time.UnixMilli(ms).UTC()
}

// LastEventAt returns the time of the latest event folded in.
func (s *State) LastEventAt() time.Time {
	var ms int64
	for i := range s.records {
		ms = max(ms, s.records[i].ms)
	}
	if len(s.records) == 0 {
		return time.Time{}
	}
	return time.UnixMilli(ms).UTC()
}

// Step folds one event into the state. Heartbeats (no batch identity) and
// events of another batch are ignored and reported as false, so a caller
// that routes events by key can detect a routing bug.
func (s *State) Step(e *model.Event) bool {
	ti := e.Type.LookupIndex()
	if ti < 0 || !typeInfos[ti].batch {
		// Heartbeats carry no batch; an unknown type proves nothing (and
		// never passes validation).
		return false
	}
	side := sideIndex(e.System)
	if len(s.records) == 0 && s.key.IsZero() {
		s.keyInArena(e)
	} else if e.Pipeline != s.key.Pipeline || e.BusinessDate != s.key.BusinessDate || e.BatchID != s.key.BatchID {
		return false
	}
	if i, ok := s.find(e.ID); ok {
		in := fields{
			id: e.ID, ms: e.Time.UnixMilli(),
			component: e.Component, object: e.Object, checksum: e.Checksum, err: e.Error,
			rows: e.Rows, bytes: e.Bytes, attempt: e.Attempt,
			hasRows: e.HasRows, hasBytes: e.HasBytes, hasAttempt: e.HasAttempt,
			ti: int8(ti), side: int8(side),
		}
		var old fields
		s.unpack(&s.records[i], &old)
		if in.less(&old) {
			// The old record's strings stay in the arena until Compact.
			var p record
			s.pack(&p, e, ti, side)
			s.records[i] = p
			s.garbage = true
		}
		return true
	}
	if len(s.records) == cap(s.records) {
		// Most batches have 10 to 15 events: grow in small steps rather
		// than doubling, since diagnose holds every batch's records at
		// once, and a compacted batch of the detector grows again by an
		// event or two.
		grown := make([]record, len(s.records), len(s.records)+growBy(len(s.records)))
		copy(grown, s.records)
		s.records = grown
	}
	// Packed in place, into the room past the records: counted in once
	// whole, so a pack that panics (a batch past 4 GiB) leaves no half
	// record behind.
	n := len(s.records)
	p := &s.records[:n+1][n]
	s.pack(p, e, ti, side)
	s.records = s.records[:n+1]
	s.tags |= tagBit(p.tag)
	if s.index != nil {
		s.index[s.str(p.strs[sID])] = int32(len(s.records) - 1)
	} else if len(s.records) >= indexThreshold {
		s.buildIndex()
	}
	return true
}

// growBy is how many records a full slice of n makes room for: 12 for a
// new batch, then 4, or a quarter for a long batch (so a batch of
// thousands is not copied at every fourth event).
func growBy(n int) int {
	if n == 0 {
		return 12
	}
	return max(4, n/4)
}

// buildIndex indexes every record's event id. The keys are strings over
// the arena, so Compact, which moves the arena, builds it again.
func (s *State) buildIndex() {
	s.index = make(map[string]int32, 2*len(s.records))
	for i := range s.records {
		s.index[s.str(s.records[i].strs[sID])] = int32(i)
	}
}

// tagBit is the bit of State.tags for an idTag.
func tagBit(tag uint8) uint16 { return 1 << (tag % 16) }

func (s *State) find(id string) (int, bool) {
	if s.index != nil {
		i, ok := s.index[id]
		return int(i), ok
	}
	tag := idTag(id)
	if s.tags&tagBit(tag) == 0 {
		return 0, false
	}
	for i := range s.records {
		if r := &s.records[i]; r.tag == tag && s.str(r.strs[sID]) == id {
			return i, true
		}
	}
	return 0, false
}

// cloneKey copies k's strings into one allocation of the state's own: a
// key taken from a decoded event would keep that event's whole string
// buffer alive for as long as the batch is open.
func cloneKey(k model.BatchKey) model.BatchKey {
	n := len(k.Pipeline)
	if n+len(k.BatchID) == 0 {
		return k
	}
	b := make([]byte, n+len(k.BatchID))
	copy(b, k.Pipeline)
	copy(b[n:], k.BatchID)
	both := unsafe.String(&b[0], len(b))
	k.Pipeline, k.BatchID = both[:n], both[n:]
	return k
}
