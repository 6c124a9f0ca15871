package replay

import (
	"encoding/binary"
	"fmt"
	"math"
	"slices"
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
	id, component, object    ref
	checksum, err            ref
	ti, side                 int8
	flags                    uint8
}

const (
	flagRows uint8 = 1 << iota
	flagBytes
	flagAttempt
)

func (r *record) at() time.Time { return time.UnixMilli(r.ms).UTC() }

// typ returns the record's event type. Types and systems are kept as small
// indexes: a month of history is millions of records.
func (r *record) typ() model.EventType { return model.EventTypes[r.ti] }

func (r *record) hasRows() bool    { return r.flags&flagRows != 0 }
func (r *record) hasBytes() bool   { return r.flags&flagBytes != 0 }
func (r *record) hasAttempt() bool { return r.flags&flagAttempt != 0 }

// ref locates a string in a State's arena: 0 is the empty string, any
// other value is 1 + the offset of the string's length (a uvarint)
// followed by its bytes. Lengths are stored in the arena rather than in
// the record because most fields are short or empty.
type ref uint32

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
	b := arena[r-1:]
	n, w := uint64(b[0]), 1
	if n >= 0x80 {
		n, w = binary.Uvarint(b)
	}
	return unsafe.String(&b[w], int(n))
}

// sizeOf is how many arena bytes v takes.
func sizeOf(v string) int {
	if v == "" {
		return 0
	}
	return uvarintLen(len(v)) + len(v)
}

func uvarintLen(n int) int {
	w := 1
	for n >= 0x80 {
		n >>= 7
		w++
	}
	return w
}

// put appends v to the arena, which must have room, and returns its ref.
func (s *State) put(v string) ref {
	if v == "" {
		return 0
	}
	off := len(s.arena)
	s.arena = binary.AppendUvarint(s.arena, uint64(len(v)))
	s.arena = append(s.arena, v...)
	return ref(off + 1)
}

// pack copies r's strings into the arena and returns its record.
func (s *State) pack(r *fields) record {
	need := sizeOf(r.id) + sizeOf(r.component) + sizeOf(r.object) + sizeOf(r.checksum) + sizeOf(r.err)
	if len(s.arena)+need > maxArena {
		// Beyond any real batch (a Kafka message is at most 1 MiB, so this
		// is thousands of maximal events under one batch key); folding on
		// would corrupt refs, and dropping the event would change the
		// diagnosis silently.
		panic(fmt.Sprintf("replay: batch %s: more than 4 GiB of event ids and names in one batch: split the batch or shorten its error texts", s.key))
	}
	if cap(s.arena)-len(s.arena) < need {
		// The first event's strings times a dozen (a typical batch, as the
		// records grow), else doubling: one or two allocations a batch.
		s.arena = slices.Grow(s.arena, max(cap(s.arena), need, arenaGuess*need-len(s.arena)))
	}
	p := record{
		ms: r.ms, rows: r.rows, bytes: r.bytes, attempt: r.attempt, ti: r.ti, side: r.side,
		id: s.put(r.id), component: s.put(r.component), object: s.put(r.object),
		checksum: s.put(r.checksum), err: s.put(r.err),
	}
	if r.hasRows {
		p.flags |= flagRows
	}
	if r.hasBytes {
		p.flags |= flagBytes
	}
	if r.hasAttempt {
		p.flags |= flagAttempt
	}
	return p
}

// unpack fills r from p. r's strings share the arena (see str).
func (s *State) unpack(p *record, r *fields) {
	*r = fields{
		id: s.str(p.id), ms: p.ms, ti: p.ti, side: p.side,
		component: s.str(p.component), object: s.str(p.object), checksum: s.str(p.checksum), err: s.str(p.err),
		rows: p.rows, bytes: p.bytes, attempt: p.attempt,
		hasRows: p.hasRows(), hasBytes: p.hasBytes(), hasAttempt: p.hasAttempt(),
	}
}

// maxShared bounds the distinct strings Compact looks up when it shares
// equal names between records: a batch has a handful (a component per
// side, the artifact and signal names, one checksum), and a linear search
// beyond a few dozen would cost more than it saves.
const maxShared = 32

// Compact trims the state to what it holds: the records to their number,
// the arena to the strings they refer to, each distinct component, object,
// checksum and error text stored once (a batch repeats its file name and
// checksum across hops). Call it when a batch goes quiet (the detector
// does after each evaluation): the next Step grows it again. It changes
// nothing a diagnosis reads, and costs nothing when there is nothing to
// trim. Strings of diagnoses evaluated before stay valid: the old arena is
// left as it was.
func (s *State) Compact() {
	if cap(s.records) == len(s.records) && cap(s.arena) == len(s.arena) && !s.garbage {
		return
	}
	recs := make([]record, len(s.records))
	var seen [maxShared]struct {
		v string
		r ref
	}
	nSeen, size := 0, 0
	// First pass: new refs, laid out in order of first use.
	place := func(v string, shared bool) ref {
		if v == "" {
			return 0
		}
		if shared {
			for _, x := range seen[:nSeen] {
				if x.v == v {
					return x.r
				}
			}
		}
		r := ref(size + 1)
		size += sizeOf(v)
		if shared && nSeen < maxShared {
			seen[nSeen].v, seen[nSeen].r = v, r
			nSeen++
		}
		return r
	}
	for i := range s.records {
		o, p := &s.records[i], &recs[i]
		*p = *o
		p.id = place(s.str(o.id), false)
		p.component = place(s.str(o.component), true)
		p.object = place(s.str(o.object), true)
		p.checksum = place(s.str(o.checksum), true)
		p.err = place(s.str(o.err), true)
	}
	// Second pass: write each string where its first use put it.
	arena := make([]byte, 0, size)
	write := func(r ref, v string) {
		if r != 0 && int(r) == len(arena)+1 {
			arena = binary.AppendUvarint(arena, uint64(len(v)))
			arena = append(arena, v...)
		}
	}
	for i := range s.records {
		o, p := &s.records[i], &recs[i]
		write(p.id, s.str(o.id))
		write(p.component, s.str(o.component))
		write(p.object, s.str(o.object))
		write(p.checksum, s.str(o.checksum))
		write(p.err, s.str(o.err))
	}
	s.records, s.arena, s.garbage = recs, arena, false
	if len(s.arena) == 0 {
		s.arena = nil
	}
	if s.index != nil {
		s.buildIndex()
	}
}
