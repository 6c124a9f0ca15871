package replay

import (
	"encoding/json"
	"strconv"
	"time"
	"unsafe"

	"github.com/handoff-dev/handoff/model"
)

// AppendJSON appends the diagnosis as compact JSON to b. Field names are
// those of the struct tags (docs/diagnosis.md); times use handoff's one
// layout, RFC 3339 UTC with milliseconds. It is written by hand because
// diagnose --format json writes tens of thousands of diagnoses a second.
func (d *Diagnosis) AppendJSON(b []byte) []byte {
	b, _ = d.AppendJSONText(b)
	return b
}

// AppendJSONText is AppendJSON, and reports whether what it appended is
// plain text: printable ASCII only, bytes model.TextWriter passes on as
// they are, so that a writer of gigabytes of diagnoses (backfill) need
// not scan them again. Every byte the encoder writes itself is printable
// ASCII, and model.AppendJSONString escapes the control characters below
// 0x20; what it leaves as it is, DEL and the bytes of other characters,
// makes the diagnosis not plain.
func (d *Diagnosis) AppendJSONText(b []byte) ([]byte, bool) {
	e := encoder{plain: true}
	b = e.appendDiagnosis(b, d)
	return b, e.plain
}

// encoder is the state of one AppendJSONText: whether every string so
// far was plain, and the dates of the times written. A diagnosis's times
// fall on a few days (its events', the deadlines' next day, the as-of
// time's): the "YYYY-MM-DDT" of each is worked out once, and kept in one
// of days by the day's number modulo len(days).
type encoder struct {
	plain bool
	days  [4]dayPrefix
	seen  [32]seenString
}

// seenString is a string found plain: its bytes' address and length.
type seenString struct {
	p *byte
	n int
}

// minSeen is the length from which a string found plain is remembered
// (seenString): shorter ones cost less to scan than to look up.
const minSeen = 16

// dayPrefix is the date part of the times of one day.
type dayPrefix struct {
	ok     bool
	day    int64 // days since the Unix epoch
	prefix [11]byte
}

// str appends s as a JSON string: as it is when it is plain and needs no
// escape (nearly every string of a diagnosis, found with one scan), with
// model.AppendJSONString otherwise.
func (e *encoder) str(b []byte, s string) []byte {
	if len(s) >= minSeen {
		// Event ids come back as evidence a dozen times a diagnosis, the
		// same string each time: found plain once, they are not scanned
		// again. Two live strings at the same address of the same length
		// are the same bytes.
		p := unsafe.StringData(s)
		seen := &e.seen[uintptr(unsafe.Pointer(p))/8%uintptr(len(e.seen))]
		if seen.p == p && seen.n == len(s) {
			b = append(b, '"')
			b = append(b, s...)
			return append(b, '"')
		}
		if jsonTextPlain(s) {
			seen.p, seen.n = p, len(s)
			b = append(b, '"')
			b = append(b, s...)
			return append(b, '"')
		}
	} else if jsonTextPlain(s) {
		b = append(b, '"')
		b = append(b, s...)
		return append(b, '"')
	}
	if !asciiBelowDEL(s) {
		e.plain = false
	}
	return model.AppendJSONString(b, s)
}

// jsonTextPlain reports whether every byte of s is printable ASCII other
// than the quote and the backslash: s is its own JSON string, and plain
// text. It tests sixteen bytes a round, eight at a time: every byte of a
// diagnosis passes here once (a twentieth of a backfill's instructions,
// 2026-12-02), and one test of the two words' flags halves the branches.
func jsonTextPlain(s string) bool {
	i := 0
	for ; i+16 <= len(s); i += 16 {
		if notText(load8(s[i:i+8]))|notText(load8(s[i+8:i+16])) != 0 {
			return false
		}
	}
	if i+8 <= len(s) {
		if notText(load8(s[i:i+8])) != 0 {
			return false
		}
		i += 8
	}
	if i < len(s) && len(s) >= 8 {
		return notText(load8(s[len(s)-8:])) == 0 // the last eight bytes, some tested already
	}
	for ; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' {
			return false
		}
	}
	return true
}

// load8 returns the eight bytes of w as a little-endian number.
func load8(w string) uint64 {
	w = w[:8] // one bounds check for the eight loads, which the compiler makes one
	return uint64(w[0]) | uint64(w[1])<<8 | uint64(w[2])<<16 | uint64(w[3])<<24 |
		uint64(w[4])<<32 | uint64(w[5])<<40 | uint64(w[6])<<48 | uint64(w[7])<<56
}

// notText is not zero when a byte of x is not jsonTextPlain, and zero
// when every byte is.
func notText(x uint64) uint64 {
	const (
		ones  = 0x0101010101010101
		highs = 0x8080808080808080
	)
	// Each term sets the high bit of a byte it flags, and may set it in
	// bytes whose high bit x itself has (which x flags anyway) or in bytes
	// above one it flags (a carry or borrow goes up only from a flagged
	// byte: 0xff for x+ones, one below 0x20 for the subtraction, a quote
	// or a backslash for the others), so that the whole is zero exactly
	// when no byte is flagged. x: 0x80 and more; x+ones: 0x7f; x-0x20*ones:
	// below 0x20; q-ones and k-ones: the quote and the backslash (their
	// byte of q or k is 0).
	q, k := x^'"'*ones, x^'\\'*ones
	return (x | (x + ones) | (x - 0x20*ones) | (q - ones) | (k - ones)) & highs
}

// asciiBelowDEL reports whether every byte of s is below 0x7f: escaped
// by model.AppendJSONString into plain text if it is not itself.
func asciiBelowDEL(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x7f {
			return false
		}
	}
	return true
}

// time appends t as a JSON string in handoff's layout, as
// model.AppendTime writes it: the date part from the last time of the
// same day when there was one.
func (e *encoder) time(b []byte, t time.Time) []byte {
	if t.IsZero() {
		return append(b, `"0001-01-01T00:00:00.000Z"`...)
	}
	ms := t.UnixMilli()
	day, rem := ms/msPerDay, ms%msPerDay
	if rem < 0 {
		rem += msPerDay
		day--
	}
	p := &e.days[uint64(day)%uint64(len(e.days))]
	if !p.ok || day != p.day {
		n := len(b)
		b = append(b, '"')
		b = model.AppendTime(b, t)
		copy(p.prefix[:], b[n+1:])
		p.ok, p.day = true, day
		return append(b, '"')
	}
	sec := int(rem / 1000)
	h, m, s, milli := sec/3600, sec/60%60, sec%60, int(rem%1000)
	var buf [26]byte
	buf[0] = '"'
	copy(buf[1:12], p.prefix[:])
	buf[12], buf[13], buf[14] = twoDigits[2*h], twoDigits[2*h+1], ':'
	buf[15], buf[16], buf[17] = twoDigits[2*m], twoDigits[2*m+1], ':'
	buf[18], buf[19], buf[20] = twoDigits[2*s], twoDigits[2*s+1], '.'
	buf[21], buf[22], buf[23] = byte('0'+milli/100), twoDigits[2*(milli%100)], twoDigits[2*(milli%100)+1]
	buf[24], buf[25] = 'Z', '"'
	return append(b, buf[:]...)
}

const msPerDay = 24 * 60 * 60 * 1000

// twoDigits holds 00 to 99.
const twoDigits = "00010203040506070809101112131415161718192021222324252627282930313233343536373839" +
	"4041424344454647484950515253545556575859606162636465666768697071727374757677787980" +
	"81828384858687888990919293949596979899"

func (e *encoder) appendDiagnosis(b []byte, d *Diagnosis) []byte {
	b = append(b, `{"batch":`...)
	b = e.str(b, d.Batch)
	b = append(b, `,"pipeline":`...)
	b = e.str(b, d.Pipeline)
	b = append(b, `,"business_date":`...)
	b = e.str(b, d.BusinessDate)
	b = append(b, `,"batch_id":`...)
	b = e.str(b, d.BatchID)
	b = append(b, `,"status":`...)
	b = e.str(b, string(d.Status))
	b = append(b, `,"verdict":`...)
	b = e.str(b, d.Verdict.String())
	b = append(b, `,"first_missing":`...)
	b = e.str(b, d.FirstMissing)
	b = append(b, `,"hypotheses":[`...)
	for i := range d.Hypotheses {
		h := &d.Hypotheses[i]
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"name":`...)
		b = e.str(b, h.Name.String())
		b = append(b, `,"verdict":`...)
		b = e.str(b, string(h.Support))
		b = append(b, `,"evidence":`...)
		b = e.strs(b, h.Evidence)
		b = append(b, `,"reason":`...)
		b = e.str(b, h.Reason)
		b = append(b, '}')
	}
	b = append(b, `],"anomalies":[`...)
	for i := range d.Anomalies {
		a := &d.Anomalies[i]
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"kind":`...)
		b = e.str(b, string(a.Kind))
		b = append(b, `,"detail":`...)
		b = e.str(b, a.Detail)
		b = append(b, `,"evidence":`...)
		b = e.strs(b, a.Evidence)
		b = append(b, '}')
	}
	b = append(b, `],"as_of":`...)
	b = e.time(b, d.AsOf)
	b = append(b, `,"contract":`...)
	b = e.str(b, d.Contract)
	if d.Baseline != "" {
		b = append(b, `,"baseline":`...)
		b = e.str(b, d.Baseline)
	}
	b = append(b, `,"boundaries":[`...)
	for i := range d.Boundaries {
		s := &d.Boundaries[i]
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"name":`...)
		b = e.str(b, s.Name)
		b = append(b, `,"required":`...)
		b = strconv.AppendBool(b, s.Required)
		b = append(b, `,"proven":`...)
		b = strconv.AppendBool(b, s.Proven)
		if !s.At.IsZero() {
			b = append(b, `,"at":`...)
			b = e.time(b, s.At)
		}
		if !s.Due.IsZero() {
			b = append(b, `,"due":`...)
			b = e.time(b, s.Due)
		}
		if !s.UsuallyBy.IsZero() {
			b = append(b, `,"usually_by":`...)
			b = e.time(b, s.UsuallyBy)
		}
		b = append(b, `,"overdue":`...)
		b = strconv.AppendBool(b, s.Overdue)
		b = append(b, `,"evidence":`...)
		b = e.strs(b, s.Evidence)
		b = append(b, `,"out_of_order":`...)
		b = strconv.AppendBool(b, s.OutOfOrder)
		b = append(b, '}')
	}
	b = append(b, ']')
	n := &d.NextStep
	b = append(b, `,"next_step":{"action":`...)
	b = e.str(b, string(n.Action))
	b = append(b, `,"summary":`...)
	b = e.str(b, n.Summary)
	b = append(b, `,"checks":[`...)
	for i := range n.Checks {
		c := &n.Checks[i]
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"name":`...)
		b = e.str(b, c.Name)
		b = append(b, `,"state":`...)
		b = e.str(b, string(c.State))
		b = append(b, `,"detail":`...)
		b = e.str(b, c.Detail)
		b = append(b, `,"evidence":`...)
		b = e.strs(b, c.Evidence)
		b = append(b, '}')
	}
	b = append(b, ']')
	if n.Signal != "" {
		b = append(b, `,"signal":`...)
		b = e.str(b, n.Signal)
	}
	b = append(b, `},"events":`...)
	b = strconv.AppendInt(b, int64(d.Events), 10)
	b = append(b, `,"first_event_at":`...)
	b = e.time(b, d.FirstEventAt)
	b = append(b, `,"last_event_at":`...)
	b = e.time(b, d.LastEventAt)
	b = append(b, `,"timeline":[`...)
	for i := range d.Timeline {
		if i > 0 {
			b = append(b, ',')
		}
		b = e.entry(b, &d.Timeline[i])
	}
	b = append(b, `],"expected":{`...)
	sep := ""
	for _, f := range [...]struct{ k, v string }{{"batch_id", d.Expected.BatchID}, {"artifact", d.Expected.Artifact}, {"signal", d.Expected.Signal}} {
		if f.v != "" {
			b = append(b, sep...)
			b = append(b, '"')
			b = append(b, f.k...)
			b = append(b, `":`...)
			b = e.str(b, f.v)
			sep = ","
		}
	}
	b = append(b, '}')
	if p := d.Previous; p != nil {
		b = append(b, `,"previous":{"batch":`...)
		b = e.str(b, p.Batch)
		b = append(b, `,"seen":`...)
		b = strconv.AppendBool(b, p.Seen)
		b = append(b, `,"delivered":`...)
		b = strconv.AppendBool(b, p.Delivered)
		if p.Seen {
			b = append(b, `,"verdict":`...)
			b = e.str(b, p.Verdict.String())
		}
		b = append(b, '}')
	}
	if a := d.Attempt; a != nil {
		b = append(b, `,"attempt":{"of":`...)
		b = e.str(b, a.Of)
		b = append(b, `,"rerun":`...)
		b = strconv.AppendInt(b, int64(a.Rerun), 10)
		b = append(b, `,"attempts":[`...)
		for i, k := range a.Attempts {
			if i > 0 {
				b = append(b, ',')
			}
			b = e.str(b, k)
		}
		b = append(b, ']')
		if a.SupersededBy != "" {
			b = append(b, `,"superseded_by":`...)
			b = e.str(b, a.SupersededBy)
		}
		b = append(b, '}')
	}
	if bl := d.Blocked; bl != nil {
		b = append(b, `,"blocked":{"by":`...)
		b = e.links(b, bl.By)
		b = append(b, `,"roots":`...)
		b = e.links(b, bl.Roots)
		b = append(b, '}')
	}
	b = append(b, `,"alive":[`...)
	for i, h := range d.Alive {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"system":`...)
		b = e.str(b, string(h.System))
		b = append(b, `,"component":`...)
		b = e.str(b, h.Component)
		b = append(b, `,"at":`...)
		b = e.time(b, h.At)
		b = append(b, `,"event_id":`...)
		b = e.str(b, h.EventID)
		b = append(b, '}')
	}
	return append(b, "]}"...)
}

// entry appends a timeline entry; numbers that were not stated are left
// out.
func (e *encoder) entry(b []byte, x *Entry) []byte {
	b = append(b, `{"event_id":`...)
	b = e.str(b, x.EventID)
	b = append(b, `,"type":`...)
	b = e.str(b, string(x.Type))
	b = append(b, `,"time":`...)
	b = e.time(b, x.Time)
	b = append(b, `,"system":`...)
	b = e.str(b, string(x.System))
	// Written out field by field: loops over arrays of the optional
	// fields took two and a half times the instructions.
	if x.Component != "" {
		b = append(b, `,"component":`...)
		b = e.str(b, x.Component)
	}
	if x.Object != "" {
		b = append(b, `,"object":`...)
		b = e.str(b, x.Object)
	}
	if x.Checksum != "" {
		b = append(b, `,"checksum":`...)
		b = e.str(b, x.Checksum)
	}
	if x.Error != "" {
		b = append(b, `,"error":`...)
		b = e.str(b, x.Error)
	}
	if x.HasRows {
		b = append(b, `,"rows":`...)
		b = strconv.AppendInt(b, x.Rows, 10)
	}
	if x.HasBytes {
		b = append(b, `,"bytes":`...)
		b = strconv.AppendInt(b, x.Bytes, 10)
	}
	if x.HasAttempt {
		b = append(b, `,"attempt":`...)
		b = strconv.AppendInt(b, x.Attempt, 10)
	}
	return append(b, '}')
}

// UnmarshalJSON decodes an entry, setting the Has* flags of the numbers
// present, so that a diagnosis read back from JSON equals the original.
func (e *Entry) UnmarshalJSON(data []byte) error {
	type plain Entry // no methods: no recursion
	var aux struct {
		plain
		Rows    *int64 `json:"rows"`
		Bytes   *int64 `json:"bytes"`
		Attempt *int64 `json:"attempt"`
	}
	if err := json.Unmarshal(data, &aux); err != nil {
		return err
	}
	*e = Entry(aux.plain)
	if aux.Rows != nil {
		e.Rows, e.HasRows = *aux.Rows, true
	}
	if aux.Bytes != nil {
		e.Bytes, e.HasBytes = *aux.Bytes, true
	}
	if aux.Attempt != nil {
		e.Attempt, e.HasAttempt = *aux.Attempt, true
	}
	return nil
}

// MarshalJSON implements json.Marshaler with AppendJSON, so that every
// encoder writes the same bytes. Decoding needs no counterpart: the field
// names are the struct tags and the times are RFC 3339.
func (d Diagnosis) MarshalJSON() ([]byte, error) { return d.AppendJSON(nil), nil }

func (e *encoder) strs(b []byte, ss []string) []byte {
	b = append(b, '[')
	for i, s := range ss {
		if i > 0 {
			b = append(b, ',')
		}
		b = e.str(b, s)
	}
	return append(b, ']')
}

func (e *encoder) links(b []byte, ls []Link) []byte {
	b = append(b, '[')
	for i, l := range ls {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"batch":`...)
		b = e.str(b, l.Batch)
		b = append(b, `,"seen":`...)
		b = strconv.AppendBool(b, l.Seen)
		b = append(b, `,"verdict":`...)
		b = e.str(b, l.Verdict.String())
		b = append(b, `,"first_missing":`...)
		b = e.str(b, l.FirstMissing)
		b = append(b, '}')
	}
	return append(b, ']')
}
