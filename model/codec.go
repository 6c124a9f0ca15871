package model

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
	"unsafe"

	"github.com/valyala/fastjson"
)

// Decoder decodes and validates wire-format v1 events. It reuses its parse
// buffers between calls, so it is not safe for concurrent use: give each
// goroutine its own. The zero Decoder is ready to use.
type Decoder struct {
	p fastjson.Parser
	// names interns pipeline and component names: a consumer that keeps a
	// million events then keeps a few hundred copies of them, not millions,
	// and the decoder copies nothing for them after the first sighting.
	names map[string]string
}

// maxInterned bounds a Decoder's interned names; past it, names are copied
// with their event as any other field.
const maxInterned = 1 << 14

// intern returns the interned copy of b, creating it while there is room.
func (d *Decoder) intern(b []byte) (string, bool) {
	if s, ok := d.names[string(b)]; ok {
		return s, true
	}
	if len(d.names) >= maxInterned {
		return "", false
	}
	if d.names == nil {
		d.names = make(map[string]string)
	}
	s := string(b)
	d.names[s] = s
	return s, true
}

// Decode parses one JSON-encoded event and validates it. Any error is a
// *ValidationError whose Kind says why the message is rejected.
func (d *Decoder) Decode(data []byte) (Event, error) {
	return d.DecodeWith(data, nil)
}

// DecodeWith is Decode with a hook: fill, when not nil, is called after
// parsing and before validation, so an emitter can supply an absent
// event_id or time. Fields fill sets are validated like any other.
func (d *Decoder) DecodeWith(data []byte, fill func(*Event)) (Event, error) {
	var e Event
	if len(data) > MaxEventSize {
		return e, &ValidationError{Reason: fmt.Sprintf("message of %d bytes is over the %d-byte limit", len(data), MaxEventSize), Kind: RejectTooLarge}
	}
	v, err := d.p.ParseBytes(data)
	if err != nil {
		return e, &ValidationError{Reason: "not valid JSON: " + err.Error(), Kind: RejectBadJSON}
	}
	o, err := v.Object()
	if err != nil {
		return e, &ValidationError{Reason: "not a JSON object", Kind: RejectBadJSON}
	}
	var ferr error
	// String fields are gathered as byte slices into the parser's buffer and
	// copied into one allocation per event below: a decoder that allocates
	// a string per field spends its time in the allocator.
	var raw [nOwned][]byte
	var rawTime, rawDate []byte
	var extra []*fastjson.Value
	var extraKeys []string
	field := func(name string, slot int, v *fastjson.Value) {
		raw[slot], ferr = strBytes(name, v)
	}
	o.Visit(func(k []byte, v *fastjson.Value) {
		if ferr != nil || v.Type() == fastjson.TypeNull {
			return
		}
		switch string(k) {
		case "spec":
			var b []byte
			if b, ferr = strBytes("spec", v); ferr == nil {
				e.Spec = SpecV1
				if string(b) != SpecV1 {
					e.Spec = string(b)
				}
			}
		case "event_id":
			field("event_id", oID, v)
		case "type":
			var b []byte
			if b, ferr = strBytes("type", v); ferr == nil {
				e.Type = internType(b)
			}
		case "time":
			rawTime, ferr = strBytes("time", v)
		case "pipeline":
			field("pipeline", oPipeline, v)
		case "business_date":
			rawDate, ferr = strBytes("business_date", v)
		case "batch_id":
			field("batch_id", oBatchID, v)
		case "system":
			var b []byte
			if b, ferr = strBytes("system", v); ferr == nil {
				e.System = internSystem(b)
			}
		case "component":
			field("component", oComponent, v)
		case "object":
			field("object", oObject, v)
		case "rows":
			e.Rows, ferr = integer("rows", v)
			e.HasRows = ferr == nil
		case "bytes":
			e.Bytes, ferr = integer("bytes", v)
			e.HasBytes = ferr == nil
		case "checksum":
			field("checksum", oChecksum, v)
		case "attempt":
			e.Attempt, ferr = integer("attempt", v)
			e.HasAttempt = ferr == nil
		case "error":
			field("error", oError, v)
		case "attrs":
			ao, err := v.Object()
			if err != nil {
				ferr = badValue("attrs", string(v.MarshalTo(nil)), "must be a JSON object")
				return
			}
			if ao.Len() == 0 {
				return
			}
			e.Attrs = make(map[string]string, ao.Len())
			ao.Visit(func(ak []byte, av *fastjson.Value) {
				if ferr != nil {
					return
				}
				var s string
				s, ferr = attrValue(av)
				e.Attrs[validUTF8(ak)] = s
			})
		default:
			extraKeys = append(extraKeys, validUTF8(k))
			extra = append(extra, v)
		}
	})
	if ferr != nil {
		return e, ferr
	}
	var pipeline, component string
	if len(raw[oPipeline]) > 0 {
		if name, ok := d.intern(raw[oPipeline]); ok {
			pipeline, raw[oPipeline] = name, nil
		}
	}
	if len(raw[oComponent]) > 0 {
		if name, ok := d.intern(raw[oComponent]); ok {
			component, raw[oComponent] = name, nil
		}
	}
	n := 0
	for _, b := range raw {
		n += len(b)
	}
	if n > 0 {
		// The buffer is written once here and never again, so strings may
		// share it (as strings.Builder does).
		buf := make([]byte, 0, n)
		var owned [nOwned]string
		for i, b := range raw {
			if len(b) > 0 {
				start := len(buf)
				buf = append(buf, b...)
				owned[i] = unsafe.String(&buf[start], len(b))
			}
		}
		e.ID, e.Pipeline, e.BatchID = owned[oID], owned[oPipeline], owned[oBatchID]
		e.Component, e.Object, e.Checksum, e.Error = owned[oComponent], owned[oObject], owned[oChecksum], owned[oError]
	}
	if pipeline != "" {
		e.Pipeline = pipeline
	}
	if component != "" {
		e.Component = component
	}
	for i, k := range extraKeys {
		if e.Attrs == nil {
			e.Attrs = make(map[string]string, len(extra))
		}
		if _, ok := e.Attrs[k]; !ok {
			s, err := attrValue(extra[i])
			if err != nil {
				return e, err
			}
			e.Attrs[k] = s
		}
	}
	// Check the type before the other fields: an unknown type is the most
	// telling reason for a rejection.
	if e.Spec != "" && e.Type != "" && !e.Type.Known() {
		return e, &ValidationError{Field: "type", Value: string(e.Type), Reason: "unknown event type", Kind: RejectUnknownType}
	}
	if rawTime != nil {
		// The parse reads the parser's buffer in place; only an error keeps
		// (a copy of) the value.
		t, err := ParseTime(unsafe.String(unsafe.SliceData(rawTime), len(rawTime)))
		if err != nil {
			return e, badValue("time", string(rawTime), err.Error())
		}
		e.Time = t
	}
	if rawDate != nil {
		bd, err := ParseDate(unsafe.String(unsafe.SliceData(rawDate), len(rawDate)))
		if err != nil {
			return e, badValue("business_date", string(rawDate), err.Error())
		}
		e.BusinessDate = bd
	}
	if fill != nil {
		fill(&e)
	}
	if err := e.Validate(); err != nil {
		return e, err
	}
	return e, nil
}

// Decode is a convenience for decoding one event with a fresh Decoder.
func Decode(data []byte) (Event, error) {
	var d Decoder
	return d.Decode(data)
}

// Slots of the string fields an event owns (see DecodeWith).
const (
	oID = iota
	oPipeline
	oBatchID
	oComponent
	oObject
	oChecksum
	oError
	nOwned
)

// strBytes returns a string field's bytes, which point into the parser's
// buffer: valid until the next parse.
func strBytes(field string, v *fastjson.Value) ([]byte, error) {
	b, err := v.StringBytes()
	if err != nil {
		return nil, badValue(field, string(v.MarshalTo(nil)), "must be a JSON string")
	}
	if !utf8.Valid(b) {
		return nil, badValue(field, string(b), "not valid UTF-8")
	}
	if b == nil {
		b = []byte{}
	}
	return b, nil
}

// internType returns the EventType constant for b without allocating, or
// a copy of b for an unknown type (which validation then rejects).
func internType(b []byte) EventType {
	// The conversion in the call does not allocate; the result is the
	// constant of that name.
	if i := EventType(b).Index(); i >= 0 {
		return EventTypes[i]
	}
	return EventType(b)
}

func internSystem(b []byte) System {
	for _, s := range [...]System{Producer, Exchange, Consumer, Operator} {
		if string(s) == string(b) {
			return s
		}
	}
	return System(b)
}

func integer(field string, v *fastjson.Value) (int64, error) {
	if v.Type() == fastjson.TypeNumber {
		if err := checkNumber(v); err != nil {
			return 0, err
		}
	}
	n, err := v.Int64()
	if err != nil {
		return 0, badValue(field, string(v.MarshalTo(nil)), "must be a whole number")
	}
	return n, nil
}

// attrValue returns an attribute's value as kept in Event.Attrs: strings as
// they are, anything else as compact JSON. Invalid UTF-8 becomes U+FFFD
// here rather than in AppendJSON, so that an event survives re-encoding
// unchanged.
func attrValue(v *fastjson.Value) (string, error) {
	if v.Type() == fastjson.TypeString {
		return validUTF8(v.GetStringBytes()), nil
	}
	b, err := appendValue(nil, v)
	if err != nil {
		return "", err
	}
	return string(b), nil
}

func validUTF8(b []byte) string {
	if utf8.Valid(b) {
		return string(b)
	}
	return strings.ToValidUTF8(string(b), "\uFFFD")
}

// appendValue appends v as compact JSON. fastjson's own MarshalTo is not
// used: it copies strings it has not unescaped verbatim (invalid UTF-8 and
// raw control characters included) and quotes the others with Go escapes
// such as \x01, which are not JSON.
func appendValue(b []byte, v *fastjson.Value) ([]byte, error) {
	var err error
	switch v.Type() {
	case fastjson.TypeString:
		return AppendJSONString(b, validUTF8(v.GetStringBytes())), nil
	case fastjson.TypeNumber:
		if err := checkNumber(v); err != nil {
			return b, err
		}
		return v.MarshalTo(b), nil
	case fastjson.TypeObject:
		o := v.GetObject()
		b = append(b, '{')
		n := 0
		o.Visit(func(k []byte, v *fastjson.Value) {
			if err != nil {
				return
			}
			if n > 0 {
				b = append(b, ',')
			}
			n++
			b = AppendJSONString(b, validUTF8(k))
			b = append(b, ':')
			b, err = appendValue(b, v)
		})
		return append(b, '}'), err
	case fastjson.TypeArray:
		b = append(b, '[')
		for i, e := range v.GetArray() {
			if i > 0 {
				b = append(b, ',')
			}
			if b, err = appendValue(b, e); err != nil {
				return b, err
			}
		}
		return append(b, ']'), nil
	}
	// true, false and null.
	return v.MarshalTo(b), nil
}

// checkNumber rejects numbers that fastjson accepts but JSON does not, such
// as "+1", "01", "1." or "nan": such a message is not JSON.
func checkNumber(v *fastjson.Value) error {
	s := string(v.MarshalTo(nil))
	if !isJSONNumber(s) {
		return &ValidationError{Reason: fmt.Sprintf("not valid JSON: bad number %q", s), Kind: RejectBadJSON}
	}
	return nil
}

// isJSONNumber reports whether s matches the number grammar of RFC 8259:
// -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func isJSONNumber(s string) bool {
	i := 0
	if i < len(s) && s[i] == '-' {
		i++
	}
	switch {
	case i < len(s) && s[i] == '0':
		i++
	case i < len(s) && s[i] >= '1' && s[i] <= '9':
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
	default:
		return false
	}
	if i < len(s) && s[i] == '.' {
		i++
		start := i
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
		if i == start {
			return false
		}
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		start := i
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
		if i == start {
			return false
		}
	}
	return i == len(s)
}

// ParseTime parses an RFC 3339 time (UTC or with an offset) and returns it in
// UTC, truncated to the millisecond, the precision handoff keeps everywhere.
func ParseTime(s string) (time.Time, error) {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("want RFC 3339, like 2026-10-01T01:20:05.120Z")
	}
	t = t.UTC().Truncate(time.Millisecond)
	// An offset can carry a time past the four-digit years RFC 3339 can
	// write, and handoff writes every time back in UTC.
	if y := t.Year(); y < 0 || y > 9999 {
		return time.Time{}, fmt.Errorf("year %d in UTC is outside 0000-9999", y)
	}
	return t, nil
}

// TimeLayout is how handoff writes times: RFC 3339 in UTC with milliseconds.
const TimeLayout = "2006-01-02T15:04:05.000Z07:00"

// AppendJSON appends the event's canonical JSON encoding (one line, fields in
// wire order, empty optional fields left out, attrs keys sorted) to b.
func (e *Event) AppendJSON(b []byte) []byte {
	b = append(b, `{"spec":`...)
	b = AppendJSONString(b, e.Spec)
	b = append(b, `,"event_id":`...)
	b = AppendJSONString(b, e.ID)
	b = append(b, `,"type":`...)
	b = AppendJSONString(b, string(e.Type))
	b = append(b, `,"time":"`...)
	b = AppendTime(b, e.Time)
	b = append(b, `","pipeline":`...)
	b = AppendJSONString(b, e.Pipeline)
	if !e.BusinessDate.IsZero() {
		b = append(b, `,"business_date":"`...)
		b = e.BusinessDate.AppendFormat(b)
		b = append(b, '"')
	}
	if e.BatchID != "" {
		b = append(b, `,"batch_id":`...)
		b = AppendJSONString(b, e.BatchID)
	}
	b = append(b, `,"system":`...)
	b = AppendJSONString(b, string(e.System))
	b = appendOptString(b, "component", e.Component)
	b = appendOptString(b, "object", e.Object)
	if e.HasRows {
		b = append(b, `,"rows":`...)
		b = strconv.AppendInt(b, e.Rows, 10)
	}
	if e.HasBytes {
		b = append(b, `,"bytes":`...)
		b = strconv.AppendInt(b, e.Bytes, 10)
	}
	b = appendOptString(b, "checksum", e.Checksum)
	if e.HasAttempt {
		b = append(b, `,"attempt":`...)
		b = strconv.AppendInt(b, e.Attempt, 10)
	}
	b = appendOptString(b, "error", e.Error)
	if len(e.Attrs) > 0 {
		keys := make([]string, 0, len(e.Attrs))
		for k := range e.Attrs {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		b = append(b, `,"attrs":{`...)
		for i, k := range keys {
			if i > 0 {
				b = append(b, ',')
			}
			b = AppendJSONString(b, k)
			b = append(b, ':')
			b = AppendJSONString(b, e.Attrs[k])
		}
		b = append(b, '}')
	}
	return append(b, '}')
}

// MarshalJSON implements json.Marshaler with the canonical encoding.
func (e Event) MarshalJSON() ([]byte, error) { return e.AppendJSON(nil), nil }

// UnmarshalJSON implements json.Unmarshaler; it validates like Decode.
func (e *Event) UnmarshalJSON(data []byte) error {
	ev, err := Decode(data)
	if err != nil {
		return err
	}
	*e = ev
	return nil
}

func appendOptString(b []byte, name, v string) []byte {
	if v == "" {
		return b
	}
	b = append(b, ',', '"')
	b = append(b, name...)
	b = append(b, '"', ':')
	return AppendJSONString(b, v)
}

const hexDigits = "0123456789abcdef"

// AppendJSONString appends s as a JSON string. Invalid UTF-8 becomes
// U+FFFD; U+2028 and U+2029 are escaped for JavaScript; <, > and & are not
// HTML-escaped (handoff's JSON is read in terminals and by programs). Every
// JSON handoff writes by hand goes through it.
func AppendJSONString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if jsonSafe[c] {
			i++
			continue
		}
		if c < utf8.RuneSelf {
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xf])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// jsonSafe marks the bytes a JSON string holds as they are: printable ASCII
// but the quote and the backslash.
var jsonSafe = func() (t [256]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// AppendTime appends t in TimeLayout (RFC 3339, UTC, exactly three
// fractional digits), the one way handoff writes a time. It computes the
// civil date from Unix milliseconds (Howard Hinnant's algorithm) instead
// of going through time.Time.AppendFormat, which showed in profiles.
func AppendTime(b []byte, t time.Time) []byte {
	unixMs := t.UnixMilli()
	days := unixMs / 86400000
	rem := unixMs % 86400000
	if rem < 0 {
		rem += 86400000
		days--
	}
	z := days + 719468
	era := z / 146097
	if z < 0 && z%146097 != 0 {
		era--
	}
	doe := z - era*146097
	yoe := (doe - doe/1460 + doe/36524 - doe/146096) / 365
	doy := doe - (365*yoe + yoe/4 - yoe/100)
	mp := (5*doy + 2) / 153
	d := int(doy - (153*mp+2)/5 + 1)
	mo := int(mp + 3)
	if mo > 12 {
		mo -= 12
	}
	y := int(yoe + era*400)
	if mo <= 2 {
		y++
	}
	ms := int(rem % 1000)
	sec := int(rem / 1000)
	h, mi, s := sec/3600, sec/60%60, sec%60
	return append(b, byte('0'+y/1000%10), byte('0'+y/100%10), byte('0'+y/10%10), byte('0'+y%10), '-',
		byte('0'+mo/10), byte('0'+mo%10), '-', byte('0'+d/10), byte('0'+d%10), 'T',
		byte('0'+h/10), byte('0'+h%10), ':', byte('0'+mi/10), byte('0'+mi%10), ':',
		byte('0'+s/10), byte('0'+s%10), '.', byte('0'+ms/100), byte('0'+ms/10%10), byte('0'+ms%10), 'Z')
}
