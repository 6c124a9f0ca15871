package replay

import (
	"strings"
	"time"
	"unicode/utf8"

	"github.com/handoff-dev/handoff/model"
)

// DecodeCanonicalJSON decodes s into d when s is exactly what AppendJSON
// writes of some diagnosis, and reports whether it was: then d is what
// encoding/json would decode from s, and d.AppendJSON(nil) is s again,
// byte for byte. Any other JSON (other field order, white space, escapes
// AppendJSON does not write, unknown fields, a value AppendJSON would
// leave out) gives false with d in no particular state: the caller decodes
// s with encoding/json, which says what is wrong with it, if anything.
//
// It exists because a consumer of findings decodes every record's
// diagnosis: written by AppendJSON, nearly all are canonical, and reading
// the known layout costs a small part of encoding/json's reflection. The
// strings of d share s's memory, except those with escapes.
func DecodeCanonicalJSON(s string, d *Diagnosis) bool {
	r := WireReader{S: s}
	r.Diagnosis(d)
	return r.End()
}

// WireReader reads JSON in the one layout handoff's hand-written
// encoders give it (model.AppendJSONString strings, strconv integers,
// model.AppendTime times, no white space): each call consumes what it
// expects at the current position, or marks the reader failed (Failed),
// after which every call does nothing. It is the reading half of those
// encoders, for the fast path of a decoder that falls back to
// encoding/json when the input is in another layout; it accepts a value
// only when encoding/json reads the same from it.
type WireReader struct {
	S   string
	I   int
	bad bool
}

// Failed reports whether a call found something other than it expected.
func (r *WireReader) Failed() bool { return r.bad }

// Fail marks the reader failed.
func (r *WireReader) Fail() { r.bad = true }

// End reports whether everything went as expected and the input is
// consumed.
func (r *WireReader) End() bool { return !r.bad && r.I == len(r.S) }

// Lit consumes l, which must come next.
func (r *WireReader) Lit(l string) {
	if r.bad {
		return
	}
	if !strings.HasPrefix(r.S[r.I:], l) {
		r.bad = true
		return
	}
	r.I += len(l)
}

// Opt consumes l if it comes next and reports whether it did.
func (r *WireReader) Opt(l string) bool {
	if r.bad || !strings.HasPrefix(r.S[r.I:], l) {
		return false
	}
	r.I += len(l)
	return true
}

// Next reports whether another element of an array or object follows
// (after the first): it consumes "," and returns true, or consumes the
// closing c and returns false.
func (r *WireReader) Next(c byte) bool {
	if r.bad || r.I >= len(r.S) {
		r.bad = true
		return false
	}
	switch r.S[r.I] {
	case ',':
		r.I++
		return true
	case c:
		r.I++
		return false
	}
	r.bad = true
	return false
}

// Str consumes a JSON string as model.AppendJSONString writes it and
// returns its value.
func (r *WireReader) Str() string {
	if r.bad || r.I >= len(r.S) || r.S[r.I] != '"' {
		r.bad = true
		return ""
	}
	start := r.I + 1
	for j := start; j < len(r.S); j++ {
		c := r.S[j]
		if c == '"' {
			r.I = j + 1
			return r.S[start:j]
		}
		if c < 0x20 || c == '\\' || c >= utf8.RuneSelf {
			return r.str(start, j)
		}
	}
	r.bad = true
	return ""
}

// str is the rest of Str from j, the first byte that is not printable
// ASCII: the escapes model.AppendJSONString writes, and the UTF-8 it
// leaves as it is. Anything else is not its output (a \/, \u0041, a raw
// U+2028, invalid UTF-8 that encoding/json would turn into U+FFFD).
func (r *WireReader) str(start, j int) string {
	b := make([]byte, 0, j-start+16)
	b = append(b, r.S[start:j]...)
	for j < len(r.S) {
		c := r.S[j]
		switch {
		case c == '"':
			r.I = j + 1
			return string(b)
		case c < 0x20:
			r.bad = true
			return ""
		case c == '\\':
			if j+1 >= len(r.S) {
				r.bad = true
				return ""
			}
			switch r.S[j+1] {
			case '"', '\\':
				b = append(b, r.S[j+1])
			case 'n':
				b = append(b, '\n')
			case 'r':
				b = append(b, '\r')
			case 't':
				b = append(b, '\t')
			case 'u':
				if j+6 > len(r.S) {
					r.bad = true
					return ""
				}
				switch u := r.S[j+2 : j+6]; {
				case u == "2028":
					b = append(b, "\u2028"...)
				case u == "2029":
					b = append(b, "\u2029"...)
				case u[0] == '0' && u[1] == '0' && (u[2] == '0' || u[2] == '1') && lowerHex(u[3]) >= 0:
					x := byte(u[2]-'0')<<4 | byte(lowerHex(u[3]))
					if x == '\n' || x == '\r' || x == '\t' {
						r.bad = true
						return ""
					}
					b = append(b, x)
				default:
					r.bad = true
					return ""
				}
				j += 6
				continue
			default:
				r.bad = true
				return ""
			}
			j += 2
		case c < utf8.RuneSelf:
			b = append(b, c)
			j++
		default:
			ru, n := utf8.DecodeRuneInString(r.S[j:])
			if ru == utf8.RuneError && n == 1 || ru == '\u2028' || ru == '\u2029' {
				r.bad = true
				return ""
			}
			b = append(b, r.S[j:j+n]...)
			j += n
		}
	}
	r.bad = true
	return ""
}

// lowerHex is the value of a lower-case hex digit, -1 for any other byte.
func lowerHex(c byte) int {
	switch {
	case '0' <= c && c <= '9':
		return int(c - '0')
	case 'a' <= c && c <= 'f':
		return int(c-'a') + 10
	}
	return -1
}

// Int consumes an integer as strconv.AppendInt writes it, of at most 18
// digits (so within int64 and int; a longer one fails, and the caller's
// fallback says whether it is out of range).
func (r *WireReader) Int() int64 {
	if r.bad {
		return 0
	}
	i, neg := r.I, false
	if i < len(r.S) && r.S[i] == '-' {
		neg = true
		i++
	}
	start := i
	var v int64
	for ; i < len(r.S) && i-start <= 18; i++ {
		c := r.S[i]
		if c < '0' || c > '9' {
			break
		}
		v = v*10 + int64(c-'0')
	}
	n := i - start
	switch {
	case n == 0 || n > 18, n > 1 && r.S[start] == '0', neg && v == 0:
		r.bad = true
		return 0
	}
	if i < len(r.S) {
		if c := r.S[i]; c == '.' || c == 'e' || c == 'E' || ('0' <= c && c <= '9') {
			r.bad = true
			return 0
		}
	}
	r.I = i
	if neg {
		return -v
	}
	return v
}

// Bool consumes true or false.
func (r *WireReader) Bool() bool {
	if r.Opt("true") {
		return true
	}
	if !r.Opt("false") {
		r.bad = true
	}
	return false
}

// Time consumes a time as a JSON string in handoff's layout
// (model.AppendTime: "2006-01-02T15:04:05.000Z"), the zero time
// included, and returns it as encoding/json (time.Time.UnmarshalJSON)
// would.
func (r *WireReader) Time() time.Time {
	const n = len(`"2006-01-02T15:04:05.000Z"`)
	if r.bad || r.I+n > len(r.S) {
		r.bad = true
		return time.Time{}
	}
	s := r.S[r.I : r.I+n]
	if s[0] != '"' || s[5] != '-' || s[8] != '-' || s[11] != 'T' || s[14] != ':' || s[17] != ':' || s[20] != '.' || s[24] != 'Z' || s[25] != '"' {
		r.bad = true
		return time.Time{}
	}
	num := func(a, b int) int {
		v := 0
		for _, c := range []byte(s[a:b]) {
			if c < '0' || c > '9' {
				r.bad = true
			}
			v = v*10 + int(c-'0')
		}
		return v
	}
	y, mo, d, h, mi, sec, ms := num(1, 5), num(6, 8), num(9, 11), num(12, 14), num(15, 17), num(18, 20), num(21, 24)
	if r.bad || y < 1 || mo < 1 || mo > 12 || d < 1 || d > daysIn(mo, y) || h > 23 || mi > 59 || sec > 59 {
		r.bad = true
		return time.Time{}
	}
	r.I += n
	return time.Date(y, time.Month(mo), d, h, mi, sec, ms*int(time.Millisecond), time.UTC)
}

func daysIn(m, y int) int {
	switch m {
	case 2:
		if y%4 == 0 && (y%100 != 0 || y%400 == 0) {
			return 29
		}
		return 28
	case 4, 6, 9, 11:
		return 30
	}
	return 31
}

// time consumes a time that AppendJSON writes only when it is not zero.
func (r *WireReader) setTime() time.Time {
	t := r.Time()
	if t.IsZero() {
		r.bad = true
	}
	return t
}

// hyp consumes a hypothesis name as model.Hypothesis.UnmarshalText reads
// it.
func (r *WireReader) hyp() model.Hypothesis {
	s := r.Str()
	if r.bad {
		return 0
	}
	h, err := model.ParseHypothesis(s)
	if err != nil {
		r.bad = true
	}
	return h
}

// optStr consumes key and a non-empty string when key comes next: a
// field AppendJSON leaves out when "".
func (r *WireReader) optStr(key string) string {
	if !r.Opt(key) {
		return ""
	}
	s := r.Str()
	if s == "" {
		r.bad = true
	}
	return s
}

// strs consumes an array of strings; [] gives an empty slice, not nil,
// as encoding/json does.
func (r *WireReader) strs() []string {
	r.Lit("[")
	if r.Opt("]") {
		return []string{}
	}
	out := make([]string, 0, 4)
	for !r.bad {
		out = append(out, r.Str())
		if !r.Next(']') {
			break
		}
	}
	return out
}

// Diagnosis consumes a diagnosis as AppendJSON writes it (see
// DecodeCanonicalJSON).
func (r *WireReader) Diagnosis(d *Diagnosis) {
	r.Lit(`{"batch":`)
	d.Batch = r.Str()
	r.Lit(`,"pipeline":`)
	d.Pipeline = r.Str()
	r.Lit(`,"business_date":`)
	d.BusinessDate = r.Str()
	r.Lit(`,"batch_id":`)
	d.BatchID = r.Str()
	r.Lit(`,"status":`)
	d.Status = Status(r.Str())
	r.Lit(`,"verdict":`)
	d.Verdict = r.hyp()
	r.Lit(`,"first_missing":`)
	d.FirstMissing = r.Str()
	r.Lit(`,"hypotheses":[`)
	d.Hypotheses = []Hypothesis{}
	if !r.Opt("]") {
		d.Hypotheses = make([]Hypothesis, 0, 5)
		for !r.bad {
			var h Hypothesis
			r.Lit(`{"name":`)
			h.Name = r.hyp()
			r.Lit(`,"verdict":`)
			h.Support = Support(r.Str())
			r.Lit(`,"evidence":`)
			h.Evidence = r.strs()
			r.Lit(`,"reason":`)
			h.Reason = r.Str()
			r.Lit("}")
			d.Hypotheses = append(d.Hypotheses, h)
			if !r.Next(']') {
				break
			}
		}
	}
	r.Lit(`,"anomalies":[`)
	d.Anomalies = []Anomaly{}
	if !r.Opt("]") {
		for !r.bad {
			var a Anomaly
			r.Lit(`{"kind":`)
			a.Kind = AnomalyKind(r.Str())
			r.Lit(`,"detail":`)
			a.Detail = r.Str()
			r.Lit(`,"evidence":`)
			a.Evidence = r.strs()
			r.Lit("}")
			d.Anomalies = append(d.Anomalies, a)
			if !r.Next(']') {
				break
			}
		}
	}
	r.Lit(`,"as_of":`)
	d.AsOf = r.Time()
	r.Lit(`,"contract":`)
	d.Contract = r.Str()
	d.Baseline = r.optStr(`,"baseline":`)
	r.Lit(`,"boundaries":[`)
	d.Boundaries = []BoundaryState{}
	if !r.Opt("]") {
		d.Boundaries = make([]BoundaryState, 0, 7)
		for !r.bad {
			var s BoundaryState
			r.Lit(`{"name":`)
			s.Name = r.Str()
			r.Lit(`,"required":`)
			s.Required = r.Bool()
			r.Lit(`,"proven":`)
			s.Proven = r.Bool()
			if r.Opt(`,"at":`) {
				s.At = r.setTime()
			}
			if r.Opt(`,"due":`) {
				s.Due = r.setTime()
			}
			if r.Opt(`,"usually_by":`) {
				s.UsuallyBy = r.setTime()
			}
			r.Lit(`,"overdue":`)
			s.Overdue = r.Bool()
			r.Lit(`,"evidence":`)
			s.Evidence = r.strs()
			r.Lit(`,"out_of_order":`)
			s.OutOfOrder = r.Bool()
			r.Lit("}")
			d.Boundaries = append(d.Boundaries, s)
			if !r.Next(']') {
				break
			}
		}
	}
	n := &d.NextStep
	r.Lit(`,"next_step":{"action":`)
	n.Action = Action(r.Str())
	r.Lit(`,"summary":`)
	n.Summary = r.Str()
	r.Lit(`,"checks":[`)
	n.Checks = []Check{}
	if !r.Opt("]") {
		for !r.bad {
			var c Check
			r.Lit(`{"name":`)
			c.Name = r.Str()
			r.Lit(`,"state":`)
			c.State = CheckState(r.Str())
			r.Lit(`,"detail":`)
			c.Detail = r.Str()
			r.Lit(`,"evidence":`)
			c.Evidence = r.strs()
			r.Lit("}")
			n.Checks = append(n.Checks, c)
			if !r.Next(']') {
				break
			}
		}
	}
	n.Signal = r.optStr(`,"signal":`)
	r.Lit(`},"events":`)
	d.Events = int(r.Int())
	r.Lit(`,"first_event_at":`)
	d.FirstEventAt = r.Time()
	r.Lit(`,"last_event_at":`)
	d.LastEventAt = r.Time()
	r.Lit(`,"timeline":[`)
	d.Timeline = []Entry{}
	if !r.Opt("]") {
		d.Timeline = make([]Entry, 0, 8)
		for !r.bad {
			d.Timeline = append(d.Timeline, Entry{})
			r.entry(&d.Timeline[len(d.Timeline)-1])
			if !r.Next(']') {
				break
			}
		}
	}
	r.Lit(`,"expected":{`)
	// The fields present, in this order, none "": a comma before each
	// but the first.
	sep := ""
	for _, f := range [...]struct {
		k string
		v *string
	}{{`"batch_id":`, &d.Expected.BatchID}, {`"artifact":`, &d.Expected.Artifact}, {`"signal":`, &d.Expected.Signal}} {
		if r.Opt(sep + f.k) {
			if *f.v = r.Str(); *f.v == "" {
				r.bad = true
			}
			sep = ","
		}
	}
	r.Lit("}")
	if r.Opt(`,"previous":{"batch":`) {
		p := &PreviousBatch{}
		p.Batch = r.Str()
		r.Lit(`,"seen":`)
		p.Seen = r.Bool()
		r.Lit(`,"delivered":`)
		p.Delivered = r.Bool()
		if p.Seen {
			r.Lit(`,"verdict":`)
			p.Verdict = r.hyp()
		}
		r.Lit("}")
		d.Previous = p
	}
	if r.Opt(`,"attempt":{"of":`) {
		a := &AttemptInfo{}
		a.Of = r.Str()
		r.Lit(`,"rerun":`)
		a.Rerun = int(r.Int())
		r.Lit(`,"attempts":`)
		a.Attempts = r.strs()
		a.SupersededBy = r.optStr(`,"superseded_by":`)
		r.Lit("}")
		d.Attempt = a
	}
	if r.Opt(`,"blocked":{"by":`) {
		bl := &Blocked{}
		bl.By = r.links()
		r.Lit(`,"roots":`)
		bl.Roots = r.links()
		r.Lit("}")
		d.Blocked = bl
	}
	r.Lit(`,"alive":[`)
	d.Alive = []Heartbeat{}
	if !r.Opt("]") {
		for !r.bad {
			var h Heartbeat
			r.Lit(`{"system":`)
			h.System = model.System(r.Str())
			r.Lit(`,"component":`)
			h.Component = r.Str()
			r.Lit(`,"at":`)
			h.At = r.Time()
			r.Lit(`,"event_id":`)
			h.EventID = r.Str()
			r.Lit("}")
			d.Alive = append(d.Alive, h)
			if !r.Next(']') {
				break
			}
		}
	}
	r.Lit("}")
}

// entry reads what encoder.entry writes.
func (r *WireReader) entry(x *Entry) {
	r.Lit(`{"event_id":`)
	x.EventID = r.Str()
	r.Lit(`,"type":`)
	x.Type = model.EventType(r.Str())
	r.Lit(`,"time":`)
	x.Time = r.Time()
	r.Lit(`,"system":`)
	x.System = model.System(r.Str())
	x.Component = r.optStr(`,"component":`)
	x.Object = r.optStr(`,"object":`)
	x.Checksum = r.optStr(`,"checksum":`)
	x.Error = r.optStr(`,"error":`)
	if r.Opt(`,"rows":`) {
		x.Rows, x.HasRows = r.Int(), true
	}
	if r.Opt(`,"bytes":`) {
		x.Bytes, x.HasBytes = r.Int(), true
	}
	if r.Opt(`,"attempt":`) {
		x.Attempt, x.HasAttempt = r.Int(), true
	}
	r.Lit("}")
}

func (r *WireReader) links() []Link {
	r.Lit("[")
	out := []Link{}
	if r.Opt("]") {
		return out
	}
	for !r.bad {
		var l Link
		r.Lit(`{"batch":`)
		l.Batch = r.Str()
		r.Lit(`,"seen":`)
		l.Seen = r.Bool()
		r.Lit(`,"verdict":`)
		l.Verdict = r.hyp()
		r.Lit(`,"first_missing":`)
		l.FirstMissing = r.Str()
		r.Lit("}")
		out = append(out, l)
		if !r.Next(']') {
			break
		}
	}
	return out
}
