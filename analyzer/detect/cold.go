package detect

import (
	"encoding/binary"
	"hash/maphash"
	"iter"
	"strings"
	"time"
	"unsafe"

	"github.com/handoff-dev/handoff/analyzer/replay"
	"github.com/handoff-dev/handoff/model"
	"github.com/handoff-dev/handoff/model/contract"
)

// A quiet open batch (no event since the last Advance) waits for hours for
// its next event or deadline, and there are a million of them at scale, so
// it is not held as a replay.State (56-byte records, strings in an arena,
// a key of its own) but frozen into one string: its events, packed. The
// next event, its deadline or an evaluation that reads it thaws it back
// into a State (the same events stepped into a new State, which evaluates
// the same: Evaluate sorts what it reads), and the next Advance after it
// has gone quiet again freezes it again.
//
// The packed form, after a uvarint of the number of events times 2, plus 1
// when times are in seconds rather than milliseconds (every one is a whole
// second), is per event, in the order they were folded (mostly time
// order, so the deltas are small; a thawed state folds them back in that
// order, and freezes to the same bytes):
//
//	byte  event type index | system index << 5
//	byte  which of component, object, checksum, error, rows, bytes, attempt are set
//	str   event id
//	var   time after the previous event (the first: after the business date's UTC midnight), zigzag
//	str   component, object, checksum, error, each when set
//	var   rows, bytes, attempt, each when set, zigzag
//
// A str is a uvarint v and what follows it: v%4 == 1, the (v/4)th string of
// the batch already written (ids aside); v%4 == 2, v/4 bytes; v%4 == 3, the
// first p bytes (a uvarint after v) of the string written last and v/4 more
// bytes (a file name after its staged one); v == 0, a UUID as 16 bytes;
// v == 4, a sha256 checksum as 32 bytes; v/4 >= 2, the detector's name
// v/4-2 (components, shared by every batch).

const (
	hasComponent = 1 << iota
	hasObject
	hasChecksum
	hasErr
	hasRows
	hasBytes
	hasAttempt
)

// systems are the emitting systems by index, as replay.State.Each gives
// them (an unknown system is the operator's side there too).
var systems = [...]model.System{model.Producer, model.Exchange, model.Consumer, model.Operator}

// Event type and system share a byte.
var _ [32 - len(model.EventTypes)]struct{}

// maxNames bounds the detector's table of shared names: components beyond
// it are written into each batch.
const maxNames = 4096

// tableWindow is how many of a batch's strings a new one is compared with
// for a repeat: a batch's names repeat along its chain, and a longer look
// would cost a batch of thousands of events its freeze.
const tableWindow = 64

// pipeline is the detector's one copy of a pipeline name, which every
// batch of the pipeline points to, and its contract once asked for
// (contractOf).
type pipeline struct {
	name     string
	contract *contract.Contract
}

// contractOf returns the contract of b's pipeline.
func (d *Detector) contractOf(b *batch) *contract.Contract {
	if b.pipe.contract == nil {
		b.pipe.contract = d.contracts.For(b.pipe.name)
	}
	return b.pipe.contract
}

// pipelineOf returns the interned pipeline named name.
func (d *Detector) pipelineOf(name string) *pipeline {
	if p := d.pipelines[name]; p != nil {
		return p
	}
	p := &pipeline{name: strings.Clone(name)}
	d.pipelines[p.name] = p
	return p
}

// coldLen is the number of events in a frozen batch's form.
func coldLen(cold string) int {
	if cold == "" {
		return 0
	}
	head, _ := uvarint(cold, 0)
	return int(head >> 1)
}

// freeze packs b's live state into its frozen form and drops the state.
func (d *Detector) freeze(b *batch) {
	s := b.live
	if s == nil {
		return
	}
	b.live = nil
	if s.Len() == 0 {
		b.cold = ""
		return
	}
	evs := d.scratch[:0]
	s.Each(func(e *model.Event) { evs = append(evs, *e) })
	// Times in seconds when every one is a whole second (producers that
	// stamp seconds): a minute apart is one byte rather than three.
	unit := int64(1000)
	for i := range evs {
		if evs[i].Time.UnixMilli()%1000 != 0 {
			unit = 1
			break
		}
	}
	head := uint64(len(evs)) << 1
	if unit == 1000 {
		head |= 1
	}
	w := coldWriter{d: d, buf: binary.AppendUvarint(d.enc[:0], head), table: d.table[:0]}
	prev := b.date().In(time.UTC).UnixMilli() / unit
	for i := range evs {
		e := &evs[i]
		ti, side := e.Type.LookupIndex(), len(systems)-1
		for j, s := range systems {
			if s == e.System {
				side = j
				break
			}
		}
		var set byte
		for f, on := range [...]bool{e.Component != "", e.Object != "", e.Checksum != "", e.Error != "", e.HasRows, e.HasBytes, e.HasAttempt} {
			if on {
				set |= 1 << f
			}
		}
		w.buf = append(w.buf, byte(ti)|byte(side)<<5, set)
		w.str(e.ID, false, false)
		t := e.Time.UnixMilli() / unit
		w.buf = binary.AppendVarint(w.buf, t-prev)
		prev = t
		w.str(e.Component, true, true)
		w.str(e.Object, true, false)
		w.str(e.Checksum, true, false)
		w.str(e.Error, true, false)
		if e.HasRows {
			w.buf = binary.AppendVarint(w.buf, e.Rows)
		}
		if e.HasBytes {
			w.buf = binary.AppendVarint(w.buf, e.Bytes)
		}
		if e.HasAttempt {
			w.buf = binary.AppendVarint(w.buf, e.Attempt)
		}
	}
	b.cold = string(w.buf)
	// The scratch keeps its room for the next freeze, not the strings of
	// this batch's state.
	clear(evs)
	clear(w.table)
	d.scratch, d.enc, d.table = evs[:0], w.buf[:0], w.table[:0]
}

type coldWriter struct {
	d     *Detector
	buf   []byte
	table []string
}

// str writes v (nothing when empty and optional); table: v may repeat
// (not an event id); shared: v may be one of the detector's names.
func (w *coldWriter) str(v string, table, shared bool) {
	if v == "" && table {
		return
	}
	if shared {
		if i, ok := w.d.names[v]; ok {
			w.buf = binary.AppendUvarint(w.buf, 4*(uint64(i)+2))
			return
		}
		if len(w.d.nameList) < maxNames && len(v) <= 64 {
			i := uint32(len(w.d.nameList))
			v = strings.Clone(v)
			w.d.nameList = append(w.d.nameList, v)
			w.d.names[v] = i
			w.buf = binary.AppendUvarint(w.buf, 4*(uint64(i)+2))
			return
		}
	}
	if table {
		for i := len(w.table) - 1; i >= 0 && i >= len(w.table)-tableWindow; i-- {
			if w.table[i] == v {
				w.buf = binary.AppendUvarint(w.buf, 4*uint64(i)+1)
				return
			}
		}
	}
	if buf, ok := appendBinary(w.buf, v); ok {
		w.buf = buf
	} else {
		p := 0
		if table && len(w.table) > 0 {
			last := w.table[len(w.table)-1]
			for p < len(v) && p < len(last) && v[p] == last[p] {
				p++
			}
		}
		if p >= 4 {
			w.buf = binary.AppendUvarint(w.buf, 4*uint64(len(v)-p)+3)
			w.buf = binary.AppendUvarint(w.buf, uint64(p))
			w.buf = append(w.buf, v[p:]...)
		} else {
			w.buf = binary.AppendUvarint(w.buf, 4*uint64(len(v))+2)
			w.buf = append(w.buf, v...)
		}
	}
	if table {
		w.table = append(w.table, v)
	}
}

const sha256Prefix = "sha256:"

// hexValue is the value of each lowercase hex digit, 0xff for every other
// byte.
var hexValue = func() (t [256]byte) {
	for i := range t {
		t[i] = 0xff
	}
	for i, c := range "0123456789abcdef" {
		t[c] = byte(i)
	}
	return t
}()

// appendHex appends the bytes of the lowercase hex digits h, skipping the
// hyphens at the positions of a UUID's when uuid is set; it returns b as
// it was and false when h is not that.
func appendHex(b []byte, h string, uuid bool) ([]byte, bool) {
	n := len(b)
	for i := 0; i < len(h); {
		if uuid && (i == 8 || i == 13 || i == 18 || i == 23) {
			if h[i] != '-' {
				return b[:n], false
			}
			i++
			continue
		}
		hi, lo := hexValue[h[i]], hexValue[h[i+1]]
		if hi|lo > 15 {
			return b[:n], false
		}
		b = append(b, hi<<4|lo)
		i += 2
	}
	return b, true
}

// appendBinary appends v in one of the binary forms (a lowercase UUID as 16
// bytes, a sha256 checksum as 32) and reports whether it is one.
func appendBinary(b []byte, v string) ([]byte, bool) {
	switch {
	case len(v) == 36:
		if out, ok := appendHex(append(b, 0), v, true); ok {
			return out, true
		}
	case len(v) == len(sha256Prefix)+64 && strings.HasPrefix(v, sha256Prefix):
		if out, ok := appendHex(append(b, 4), v[len(sha256Prefix):], false); ok {
			return out, true
		}
	}
	return b, false
}

// putHex writes the lowercase hex digits of raw into b.
func putHex(b []byte, raw string) {
	const digits = "0123456789abcdef"
	for i := 0; i < len(raw); i++ {
		b[2*i], b[2*i+1] = digits[raw[i]>>4], digits[raw[i]&15]
	}
}

// thaw returns b's state: the live one, or a new one folded from its
// frozen form (b is left as it is).
func (d *Detector) thaw(b *batch) *replay.State {
	if b.live != nil {
		return b.live
	}
	s := replay.NewState(b.key())
	if b.cold == "" {
		return &s
	}
	k := s.Key()
	r := coldReader{d: d, cold: b.cold, table: d.table[:0]}
	head := r.uvarint()
	unit := int64(1)
	if head&1 != 0 {
		unit = 1000
	}
	prev := b.date().In(time.UTC).UnixMilli() / unit
	for range head >> 1 {
		ts, set := r.cold[r.at], r.cold[r.at+1]
		r.at += 2
		e := model.Event{Type: model.EventTypes[ts&31], System: systems[ts>>5],
			Pipeline: k.Pipeline, BusinessDate: k.BusinessDate, BatchID: k.BatchID}
		e.ID = r.str(false)
		prev += r.varint()
		e.Time = time.UnixMilli(prev * unit).UTC()
		if set&hasComponent != 0 {
			e.Component = r.str(true)
		}
		if set&hasObject != 0 {
			e.Object = r.str(true)
		}
		if set&hasChecksum != 0 {
			e.Checksum = r.str(true)
		}
		if set&hasErr != 0 {
			e.Error = r.str(true)
		}
		if e.HasRows = set&hasRows != 0; e.HasRows {
			e.Rows = r.varint()
		}
		if e.HasBytes = set&hasBytes != 0; e.HasBytes {
			e.Bytes = r.varint()
		}
		if e.HasAttempt = set&hasAttempt != 0; e.HasAttempt {
			e.Attempt = r.varint()
		}
		s.Step(&e)
	}
	clear(r.table)
	d.table = r.table[:0]
	return &s
}

// live returns b's state, thawed for good: b is about to change or be
// evaluated (the next Advance freezes it again once it is quiet).
func (d *Detector) liveOf(b *batch) *replay.State {
	if b.live == nil {
		b.live, b.cold = d.thaw(b), ""
	}
	return b.live
}

type coldReader struct {
	d     *Detector
	cold  string
	at    int
	table []string
	// buf holds the strings that are not bytes of cold as they are (UUIDs,
	// checksums, shared prefixes): Step copies them into the state.
	buf []byte
}

func uvarint(s string, at int) (uint64, int) {
	var v uint64
	for shift := 0; ; shift += 7 {
		c := s[at]
		at++
		v |= uint64(c&0x7f) << shift
		if c < 0x80 {
			return v, at
		}
	}
}

func (r *coldReader) uvarint() uint64 {
	v, at := uvarint(r.cold, r.at)
	r.at = at
	return v
}

func (r *coldReader) varint() int64 {
	u := r.uvarint()
	return int64(u>>1) ^ -int64(u&1)
}

func (r *coldReader) bytes(n int) string {
	s := r.cold[r.at : r.at+n]
	r.at += n
	return s
}

// room returns n bytes of buf to fill, which no later call overwrites.
func (r *coldReader) room(n int) []byte {
	if cap(r.buf)-len(r.buf) < n {
		r.buf = make([]byte, 0, max(512, n))
	}
	r.buf = r.buf[:len(r.buf)+n]
	return r.buf[len(r.buf)-n:]
}

func (r *coldReader) str(table bool) string {
	v := r.uvarint()
	var s string
	switch v % 4 {
	case 1:
		return r.table[v/4]
	case 2:
		s = r.bytes(int(v / 4))
	case 3:
		p := int(r.uvarint())
		suffix := r.bytes(int(v / 4))
		b := r.room(p + len(suffix))
		copy(b, r.table[len(r.table)-1][:p])
		copy(b[p:], suffix)
		s = unsafe.String(&b[0], len(b))
	default:
		switch v / 4 {
		case 0:
			raw := r.bytes(16)
			b := r.room(36)
			putHex(b[0:8], raw[0:4])
			putHex(b[9:13], raw[4:6])
			putHex(b[14:18], raw[6:8])
			putHex(b[19:23], raw[8:10])
			putHex(b[24:36], raw[10:16])
			b[8], b[13], b[18], b[23] = '-', '-', '-', '-'
			s = unsafe.String(&b[0], len(b))
		case 1:
			raw := r.bytes(32)
			b := r.room(len(sha256Prefix) + 64)
			copy(b, sha256Prefix)
			putHex(b[len(sha256Prefix):], raw)
			s = unsafe.String(&b[0], len(b))
		default:
			return r.d.nameList[v/4-2]
		}
	}
	if table {
		r.table = append(r.table, s)
	}
	return s
}

// openSet is the open batches by key: a map from a 64-bit hash of the key
// to the batch (16 bytes a slot rather than the 64 of a key and a
// pointer), the keys that share a hash with another open batch aside.
type openSet struct {
	seed maphash.Seed
	m    map[uint64]*batch
	more map[model.BatchKey]*batch
}

func newOpenSet() openSet {
	return openSet{seed: maphash.MakeSeed(), m: make(map[uint64]*batch)}
}

func (o *openSet) hash(k model.BatchKey) uint64 { return maphash.Comparable(o.seed, k) }

// get returns the open batch k (nil: none).
func (o *openSet) get(k model.BatchKey) *batch {
	if b := o.m[o.hash(k)]; b != nil && b.is(k) {
		return b
	}
	if len(o.more) == 0 {
		return nil
	}
	return o.more[k]
}

// put adds b, whose key must not be open.
func (o *openSet) put(b *batch) {
	h := o.hash(b.key())
	if o.m[h] == nil {
		o.m[h] = b
		return
	}
	if o.more == nil {
		o.more = make(map[model.BatchKey]*batch)
	}
	o.more[b.key()] = b
}

// del removes b, which must be open.
func (o *openSet) del(b *batch) {
	if h := o.hash(b.key()); o.m[h] == b {
		delete(o.m, h)
		return
	}
	delete(o.more, b.key())
}

func (o *openSet) len() int { return len(o.m) + len(o.more) }

// all yields every open batch; the loop may delete the batch it is given.
func (o *openSet) all() iter.Seq[*batch] {
	return func(yield func(*batch) bool) {
		for _, b := range o.m {
			if !yield(b) {
				return
			}
		}
		for _, b := range o.more {
			if !yield(b) {
				return
			}
		}
	}
}
