package replay

import (
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"
	"unsafe"

	"github.com/handoff-dev/handoff/model"
)

// record is one event as a State stores it and Evaluate reads it: 56
// bytes and no pointers (the fields of an event as Step gets them take
// 128). Its strings are refs into the State's arena, its flags are bits.
// The detector holds a State per open batch, a million of them at scale,
// so every byte here is a megabyte there; and a record without pointers
// is memory the garbage collector never scans.
type record struct {
	ms, rows, bytes, attempt int64
	strs                     [nStrs]ref // by sID, sComponent, ...
	ti, side                 int8
	flags                    uint8
	tag                      uint8 // idTag of the event id: most ids a Step looks for differ in it
}

// idTag is a byte of the event id that find compares before the id
// itself, so that a scan reads the arena only for the id it is after.
func idTag(id string) uint8 {
	if id == "" {
		return 0
	}
	return byte(len(id)) ^ id[len(id)-1] ^ id[len(id)/2]<<3
}

// The string fields of a record, in the order of record.strs.
const (
	sID = iota
	sComponent
	sObject
	sChecksum
	sErr
	nStrs
)

const (
	flagRows uint8 = 1 << iota
	flagBytes
	flagAttempt
)

func (r *record) at() time.Time { return msTime(r.ms) }

// msTime is time.UnixMilli(ms).UTC(), with unsigned arithmetic for the
// times after 1970 that every event has: a diagnosis reads a time for
// every record of its timeline.
func msTime(ms int64) time.Time {
	if ms >= 0 {
		u := uint64(ms)
		return time.Unix(int64(u/1000), int64(u%1000)*1e6).UTC()
	}
	return time.UnixMilli(ms).UTC()
}

// typ returns the record's event type. Types and systems are kept as small
// indexes: a month of history is millions of records.
func (r *record) typ() model.EventType { return model.EventTypes[r.ti] }

// proves returns the boundary the record's event type proves.
func (r *record) proves() model.Boundary { return typeInfos[r.ti].proves }

// typeInfo is what the rules read of an event type, by its index in
// model.EventTypes: worked out once, so that a rule reads a table instead
// of comparing the type's name for every record.
type typeInfo struct {
	proves                  model.Boundary
	artifact, signal, isJob bool
	// batch: the type carries a batch key (every type but the heartbeat).
	batch bool
}

var typeInfos = func() (t [len(model.EventTypes)]typeInfo) {
	for i, et := range model.EventTypes {
		t[i] = typeInfo{proves: et.Proves(), artifact: et.IsArtifact(), signal: et.IsSignal(), isJob: strings.HasPrefix(string(et), "job."), batch: et.HasBatch()}
	}
	return t
}()

func (r *record) hasRows() bool    { return r.flags&flagRows != 0 }
func (r *record) hasBytes() bool   { return r.flags&flagBytes != 0 }
func (r *record) hasAttempt() bool { return r.flags&flagAttempt != 0 }

// ref locates a string in a State's arena: 0 is the empty string, any
// other value is 1 + the offset of the string's length followed by its
// bytes. The length is one byte, or for 255 bytes and more the byte 255
// and four bytes little-endian: a decoding small enough to inline
// everywhere a rule reads a name. Lengths are stored in the arena rather
// than in the record because most fields are short or empty.
type ref uint32

// longLen marks a length stored in four more bytes.
const longLen = 255

// maxArena bounds a batch's arena so that every offset fits a ref: 4 GiB
// of event ids and names in one batch.
const maxArena = math.MaxUint32 - 1

// arenaGuess is how many events' strings an arena first makes room for.
const arenaGuess = 12

// str returns the string r refers to. The string shares the arena's
// bytes: the arena only ever grows by appending, and Compact builds a new
// one instead of rewriting the old, so bytes a string covers never change.
func (s *State) str(r ref) string { return str(s.arena, r) }

func str(arena []byte, r ref) string {
	if r == 0 {
		return ""
	}
	// The length byte is bounds-checked; the bytes after it are not: put
	// wrote them whole, and no ref is made but by put.
	n := int(arena[r-1])
	if n == longLen {
		return strLong(arena, r)
	}
	return unsafe.String((*byte)(unsafe.Add(unsafe.Pointer(unsafe.SliceData(arena)), r)), n)
}

// strLong is str for a string of longLen bytes or more, apart so that str
// inlines.
func strLong(arena []byte, r ref) string {
	b := arena[r:]
	n := int(binary.LittleEndian.Uint32(b))
	return unsafe.String(&b[4], n)
}

// sizeOf is how many arena bytes v takes.
func sizeOf(v string) int {
	switch {
	case v == "":
		return 0
	case len(v) < longLen:
		return 1 + len(v)
	}
	return 5 + len(v)
}

// appendStr appends v, not empty, as str reads it.
func appendStr(arena []byte, v string) []byte {
	if len(v) < longLen {
		arena = append(arena, byte(len(v)))
	} else {
		arena = binary.LittleEndian.AppendUint32(append(arena, longLen), uint32(len(v)))
	}
	return append(arena, v...)
}

// put appends v to the arena, which must have room, and returns its ref.
func (s *State) put(v string) ref {
	if v == "" {
		return 0
	}
	off := len(s.arena)
	s.arena = appendStr(s.arena, v)
	return ref(off + 1)
}

// pack copies e's strings into the arena and fills p, e's record. A name
// one of the last few records carries in the same field (a component, a
// file name, a checksum repeat along the chain) is not stored again: the
// arena of a typical batch is a quarter smaller, one allocation.
func (s *State) pack(p *record, e *model.Event, ti, side int) {
	*p = record{ms: e.Time.UnixMilli(), rows: e.Rows, bytes: e.Bytes, attempt: e.Attempt, ti: int8(ti), side: int8(side), tag: idTag(e.ID)}
	if e.HasRows {
		p.flags |= flagRows
	}
	if e.HasBytes {
		p.flags |= flagBytes
	}
	if e.HasAttempt {
		p.flags |= flagAttempt
	}
	// When the arena has room for every string, repeats or not (nearly
	// always: it grows by a dozen events' worth), the strings go in at
	// once. The refs and the arena's bytes are what the exact reckoning
	// below gives: the same strings, put in the same order.
	// most bounds what the strings take (sizeOf is at most 5 more than
	// the length): one sum, no branch per string. Where the bound does not
	// fit but the strings would, the reckoning below puts them the same.
	if most := len(s.arena) + nStrs*5 + len(e.ID) + len(e.Component) + len(e.Object) + len(e.Checksum) + len(e.Error); s.arena != nil && most <= cap(s.arena) && most <= maxArena {
		p.strs[sID] = s.put(e.ID)
		// The latest records, looked through for each field in one place:
		// a Step stores four names, most of them empty or a repeat.
		rs := s.records
		if len(rs) > recentWindow {
			rs = rs[len(rs)-recentWindow:]
		}
		if e.Component != "" {
			p.strs[sComponent] = s.putIn(rs, sComponent, e.Component)
		}
		if e.Object != "" {
			p.strs[sObject] = s.putIn(rs, sObject, e.Object)
		}
		if e.Checksum != "" {
			p.strs[sChecksum] = s.putIn(rs, sChecksum, e.Checksum)
		}
		if e.Error != "" {
			p.strs[sErr] = s.putIn(rs, sErr, e.Error)
		}
		return
	}
	vals := [nStrs]string{sID: e.ID, sComponent: e.Component, sObject: e.Object, sChecksum: e.Checksum, sErr: e.Error}
	need := sizeOf(e.ID)
	for f := sComponent; f < nStrs; f++ {
		if vals[f] == "" {
			continue // most events leave a field or two empty: no call
		}
		if p.strs[f] = s.recent(f, vals[f]); p.strs[f] == 0 {
			need += sizeOf(vals[f])
		}
	}
	if s.arena == nil {
		s.reserve(arenaGuess * need)
	}
	s.reserve(need)
	for f := range vals {
		if p.strs[f] == 0 {
			p.strs[f] = s.put(vals[f])
		}
	}
}

// putIn returns the ref of v, not empty, in field f of one of rs (the
// latest records, as recent looks through them), or puts it in the arena,
// which must have room.
func (s *State) putIn(rs []record, f int, v string) ref {
	if len(v) < longLen {
		a, n := s.arena, byte(len(v))
		for i := len(rs) - 1; i >= 0; i-- {
			// The length byte first: names of other lengths are not read.
			if r := rs[i].strs[f]; r != 0 && a[r-1] == n && string(a[r:int(r)+len(v)]) == v {
				return r
			}
		}
	}
	return s.put(v)
}

// reserve makes room for need more bytes in the arena, doubling it when it
// grows. The first reservation (keyInArena, or NewState's first event in
// pack) is a dozen times the first event's strings: a typical batch, as
// the records grow, so that a batch takes one or two allocations.
func (s *State) reserve(need int) {
	if len(s.arena)+need > maxArena {
		// Beyond any real batch (a Kafka message is at most 1 MiB, so this
		// is thousands of maximal events under one batch key); folding on
		// would corrupt refs, and dropping the event would change the
		// diagnosis silently.
		panic(fmt.Sprintf("replay: batch %s: more than 4 GiB of event ids and names in one batch: split the batch or shorten its error texts", s.key))
	}
	if cap(s.arena)-len(s.arena) < need {
		grow := max(cap(s.arena), need)
		if s.reused {
			// A reset state's arena serves batch after batch: one
			// allocation for a dozen of them.
			grow = max(grow, arenaChunk)
		}
		s.arena = slices.Grow(s.arena, grow)
	}
}

// arenaChunk is how many bytes a reset state's arena grows by at least.
const arenaChunk = 4096

// keyInArena takes the state's key from its first event, copied into the
// arena's first allocation (one allocation less per batch for diagnose,
// which folds every batch of a file) as the key's text,
// pipeline/business_date/batch_id: the key's strings are parts of it, and
// a diagnosis' batch name is all of it, not rendered again. Compact
// carries it over to the new arena. NewState's key is its own allocation
// instead, which never moves: the detector keys its map with it.
func (s *State) keyInArena(e *model.Event) {
	n, m := len(e.Pipeline), len(e.BatchID)
	// The date takes 10 bytes (more for a year past 9999).
	text := n + m + 2 + 16
	if s.reused {
		// The arena's room is shared with the batches before and after:
		// take only what is needed, so no room is left unused between
		// them.
		s.reserve(text)
	} else {
		s.reserve(text + arenaGuess*(sizeOf(e.ID)+sizeOf(e.Component)+sizeOf(e.Object)+sizeOf(e.Checksum)+sizeOf(e.Error)))
	}
	start := len(s.arena)
	s.arena = appendKeyText(s.arena, e.Pipeline, e.BusinessDate, e.BatchID)
	s.keyLen = int32(len(s.arena) - start)
	s.key = keyAt(s.arena[start:], model.BatchKey{Pipeline: e.Pipeline, BusinessDate: e.BusinessDate, BatchID: e.BatchID}, s.keyLen)
}

// appendKeyText appends the text of a batch key, as the diagnosis names
// its batch.
func appendKeyText(b []byte, pipeline string, date model.Date, batchID string) []byte {
	b = append(b, pipeline...)
	b = append(b, '/')
	b = date.AppendFormat(b)
	b = append(b, '/')
	return append(b, batchID...)
}

// keyText returns the key's text in the arena, pipeline/date/batch_id,
// and false when the key is not there (NewState's).
func (s *State) keyText() (string, bool) {
	if s.keyLen == 0 {
		return "", false
	}
	return unsafe.String(unsafe.SliceData(s.arena), int(s.keyLen)), true
}

// recentWindow is how many of the latest records pack looks through for a
// name already stored: events mostly arrive in chain order, so a repeat is
// near, and a longer look would cost every Step more than it saves.
const recentWindow = 4

// recent returns the ref of v in field f of one of the latest records, or
// 0 when v is empty or not there.
func (s *State) recent(f int, v string) ref {
	if v == "" || len(v) >= longLen {
		return 0
	}
	a, rs := s.arena, s.records
	if len(rs) > recentWindow {
		rs = rs[len(rs)-recentWindow:]
	}
	n := byte(len(v))
	for i := len(rs) - 1; i >= 0; i-- {
		// The length byte first: names of other lengths are not read.
		if r := rs[i].strs[f]; r != 0 && a[r-1] == n && string(a[r:int(r)+len(v)]) == v {
			return r
		}
	}
	return 0
}

// carried returns the object name of an event of type a or b (where the
// names that derive from identity are carried) that is name, sharing the
// arena, and false when none is.
func (v *view) carried(name []byte, a, b model.EventType) (string, bool) {
	if r, ok := v.carriedBy(name, v.of(a)); ok {
		return r, true
	}
	return v.carriedBy(name, v.of(b))
}

func (v *view) carriedBy(name []byte, l []*record) (string, bool) {
	for _, r := range l {
		// The length first: a name of another length is not read.
		if ref := r.strs[sObject]; ref != 0 && int(v.arena[ref-1]) == len(name) && len(name) < longLen {
			if o := str(v.arena, ref); o == string(name) {
				return o, true
			}
		}
	}
	return "", false
}

// unpack fills r from p. r's strings share the arena (see str).
func (s *State) unpack(p *record, r *fields) {
	*r = fields{
		id: s.str(p.strs[sID]), ms: p.ms, ti: p.ti, side: p.side,
		component: s.str(p.strs[sComponent]), object: s.str(p.strs[sObject]),
		checksum: s.str(p.strs[sChecksum]), err: s.str(p.strs[sErr]),
		rows: p.rows, bytes: p.bytes, attempt: p.attempt,
		hasRows: p.hasRows(), hasBytes: p.hasBytes(), hasAttempt: p.hasAttempt(),
	}
}

// Compact trims the state to what it holds: the records to their number
// and the arena to the strings they refer to. Call it when a batch goes
// quiet (the detector does once a batch has had no event for an Advance):
// the next Step grows it again. It changes nothing a diagnosis reads, and
// costs nothing when there is nothing to trim. Strings of diagnoses
// evaluated before stay valid: the old arena is left as it was.
func (s *State) Compact() {
	if cap(s.records) > len(s.records) {
		// Into a slice made with exactly the length as capacity (append
		// alone rounds up to a size class), so that the next Compact sees
		// nothing to trim.
		s.records = append(make([]record, 0, len(s.records)), s.records...)
	}
	switch {
	case s.garbage:
		s.rebuild()
	case cap(s.arena) > len(s.arena):
		// Every string in the arena is referred to: copied as it is, the
		// refs stay valid.
		arena := append(make([]byte, 0, len(s.arena)), s.arena...)
		if s.keyLen > 0 {
			s.key = keyAt(arena, s.key, s.keyLen)
		}
		s.arena = arena
		if s.index != nil {
			s.buildIndex()
		}
	}
}

// keyAt returns k with its strings those of its text (keyLen bytes) at
// the start of arena, where keyInArena put it.
func keyAt(arena []byte, k model.BatchKey, keyLen int32) model.BatchKey {
	n, m := len(k.Pipeline), len(k.BatchID)
	text := unsafe.String(unsafe.SliceData(arena), int(keyLen))
	k.Pipeline, k.BatchID = text[:n], text[int(keyLen)-m:]
	return k
}

// rebuild builds a new arena with only the strings the records refer to,
// once each: the strings of replaced records are dropped.
func (s *State) rebuild() {
	moved := make(map[ref]ref, nStrs*len(s.records))
	size := int(s.keyLen)
	for i := range s.records {
		for _, r := range s.records[i].strs {
			if _, ok := moved[r]; r != 0 && !ok {
				moved[r] = ref(size + 1)
				size += sizeOf(s.str(r))
			}
		}
	}
	arena := make([]byte, 0, size)
	if s.keyLen > 0 {
		arena = append(arena, s.arena[:s.keyLen]...)
		s.key = keyAt(arena, s.key, s.keyLen)
	}
	for i := range s.records {
		p := &s.records[i]
		for f, r := range p.strs {
			if r == 0 {
				continue
			}
			if to := moved[r]; int(to) == len(arena)+1 {
				arena = appendStr(arena, s.str(r))
			}
			p.strs[f] = moved[r]
		}
	}
	s.arena, s.garbage = arena, false
	if s.index != nil {
		s.buildIndex()
	}
}
