package model

import (
	"encoding/binary"
	"fmt"
	"math/bits"
	"slices"
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

	// The event being decoded, its strings borrowed from p's buffer (see
	// parse), and its attrs as key/value pairs in the order of the
	// message: the attrs object first, then unknown top-level fields.
	ev               Event
	attrKeys, attrVs []string
	// attrSet indexes attrKeys when an attrs object has many keys, so
	// that duplicates cost linear time.
	attrSet map[string]struct{}
	// scratch holds attr values that are not JSON strings, as JSON text.
	scratch []byte
	// num holds a number while it is checked (checkNumber).
	num  []byte
	view EventView
	// plain says that the message being decoded is plain (plainMessage):
	// then no string field of d.ev has a control character.
	plain bool
}

// maxInterned bounds a Decoder's interned names; past it, names are copied
// with their event as any other field.
const maxInterned = 1 << 14

// intern returns the interned copy of b, creating it while there is room.
func (d *Decoder) intern(b string) (string, bool) {
	if s, ok := d.names[b]; ok {
		return s, true
	}
	if len(d.names) >= maxInterned {
		return "", false
	}
	if d.names == nil {
		d.names = make(map[string]string)
	}
	s := strings.Clone(b)
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
	if err := d.parse(data); err != nil {
		return Event{}, ownError(err)
	}
	e := d.own()
	if fill != nil {
		fill(&e)
	}
	if err := e.Validate(); err != nil {
		return e, err
	}
	return e, nil
}

// EventView is an event decoded and validated in place: the strings of
// Event point into the Decoder's buffers or into the decoded message, and
// stay valid only until the Decoder's next call (and while the message is
// unchanged), Event.Attrs is nil, and the attrs are AttrKeys and AttrValues
// instead, sorted by key. A consumer that copies the fields it keeps (into
// column buffers) saves the decoder's copies and the attrs map.
type EventView struct {
	Event
	AttrKeys, AttrValues []string
}

// DecodeView decodes and validates data like Decode, accepting and
// rejecting exactly the same messages with the same errors, but returns the
// event as a view into the decoder's buffers (see EventView), valid until
// the next call on d. Errors own their strings.
func (d *Decoder) DecodeView(data []byte) (*EventView, error) {
	if err := d.parse(data); err != nil {
		return nil, ownError(err)
	}
	// Validate checks attrs last; d.ev carries none, so the attrs check
	// follows it, and the first error is the one Decode reports. The text
	// checks cannot fail on the strings of a plain message.
	if err := d.ev.validate(d.plain); err != nil {
		return nil, ownError(err)
	}
	if err := checkAttrPairs(d.attrKeys, d.attrVs); err != nil {
		return nil, err
	}
	sortPairs(d.attrKeys, d.attrVs)
	d.view = EventView{Event: d.ev, AttrKeys: d.attrKeys, AttrValues: d.attrVs}
	return &d.view, nil
}

// b2s returns b as a string without copying: the caller keeps b unchanged
// for as long as the string is used.
func b2s(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(unsafe.SliceData(b), len(b))
}

// parse decodes data into d.ev, every string borrowed from data, the
// parser's buffer or d.scratch except the type and system, which are
// constants or copies, and the attrs into d.attrKeys/d.attrVs; it checks
// what the wire format needs beyond Validate (size, JSON, duplicate keys,
// the type, time and date values) in the order Decode always has. The
// messages producers write take a fast path (parseFast), the rest the
// general one.
func (d *Decoder) parse(data []byte) error {
	d.reset()
	if len(data) > MaxEventSize {
		return &ValidationError{Reason: fmt.Sprintf("message of %d bytes is over the %d-byte limit", len(data), MaxEventSize), Kind: RejectTooLarge}
	}
	if d.parseFast(data) {
		return nil
	}
	d.reset()
	return d.parseGeneral(data)
}

// parseGeneral is parse for any message, with fastjson's parser.
func (d *Decoder) parseGeneral(data []byte) error {
	e := &d.ev
	v, err := d.p.ParseBytes(data)
	if err != nil {
		return &ValidationError{Reason: "not valid JSON: " + err.Error(), Kind: RejectBadJSON}
	}
	o, err := v.Object()
	if err != nil {
		return &ValidationError{Reason: "not a JSON object", Kind: RejectBadJSON}
	}
	if err := checkStrings(data); err != nil {
		return err
	}
	var ferr error
	var rawTime, rawDate []byte
	var extra []*fastjson.Value
	var extraKeys []string
	field := func(name string, dst *string, v *fastjson.Value) {
		var b []byte
		b, ferr = strBytes(name, v)
		*dst = b2s(b)
	}
	var seen uint32 // bit i: wire field i seen
	o.Visit(func(k []byte, v *fastjson.Value) {
		if ferr != nil {
			return
		}
		f := wireField(k)
		if f < 0 {
			// Kept with nulls, so that a duplicate shows whatever the values.
			extraKeys = append(extraKeys, viewUTF8(k))
			extra = append(extra, v)
			return
		}
		if seen&(1<<f) != 0 {
			ferr = duplicateKey(string(k))
			return
		}
		seen |= 1 << f
		if v.Type() == fastjson.TypeNull {
			return
		}
		switch f {
		case fSpec:
			var b []byte
			if b, ferr = strBytes("spec", v); ferr == nil {
				e.Spec = SpecV1
				if string(b) != SpecV1 {
					e.Spec = b2s(b)
				}
			}
		case fEventID:
			field("event_id", &e.ID, v)
		case fType:
			var b []byte
			if b, ferr = strBytes("type", v); ferr == nil {
				e.Type = internType(b)
			}
		case fTime:
			rawTime, ferr = strBytes("time", v)
		case fPipeline:
			field("pipeline", &e.Pipeline, v)
		case fBusinessDate:
			rawDate, ferr = strBytes("business_date", v)
		case fBatchID:
			field("batch_id", &e.BatchID, v)
		case fSystem:
			var b []byte
			if b, ferr = strBytes("system", v); ferr == nil {
				e.System = internSystem(b)
			}
		case fComponent:
			field("component", &e.Component, v)
		case fObject:
			field("object", &e.Object, v)
		case fRows:
			e.Rows, ferr = d.integer("rows", v)
			e.HasRows = ferr == nil
		case fBytes:
			e.Bytes, ferr = d.integer("bytes", v)
			e.HasBytes = ferr == nil
		case fChecksum:
			field("checksum", &e.Checksum, v)
		case fAttempt:
			e.Attempt, ferr = d.integer("attempt", v)
			e.HasAttempt = ferr == nil
		case fError:
			field("error", &e.Error, v)
		case fAttrs:
			ferr = d.decodeAttrs(v)
		}
	})
	if ferr != nil {
		return ferr
	}
	if k, ok := firstDuplicate(extraKeys); ok {
		return duplicateKey(k)
	}
	// Unknown top-level fields join attrs unless attrs has the key.
	fromObject := len(d.attrKeys)
	for i, k := range extraKeys {
		if extra[i].Type() == fastjson.TypeNull || d.hasAttr(k, fromObject) {
			continue
		}
		s, err := d.attrValue(extra[i])
		if err != nil {
			return err
		}
		d.attrKeys = append(d.attrKeys, k)
		d.attrVs = append(d.attrVs, s)
	}
	return d.finish(rawTime, rawDate)
}

// reset empties the event being decoded and its attrs.
func (d *Decoder) reset() {
	d.ev, d.plain = Event{}, false
	d.attrKeys, d.attrVs, d.scratch = d.attrKeys[:0], d.attrVs[:0], d.scratch[:0]
}

// finish checks the type and decodes the time and the business date, the
// last steps of parse once every member is read.
func (d *Decoder) finish(rawTime, rawDate []byte) error {
	e := &d.ev
	// Check the type before the other fields: an unknown type is the most
	// telling reason for a rejection.
	if e.Spec != "" && e.Type != "" && !e.Type.Known() {
		return &ValidationError{Field: "type", Value: string(e.Type), Reason: "unknown event type", Kind: RejectUnknownType}
	}
	if rawTime != nil {
		// The parse reads the parser's buffer in place; only an error keeps
		// (a copy of) the value.
		t, ok := parseTimeFast(rawTime)
		if !ok {
			var err error
			if t, err = ParseTime(b2s(rawTime)); err != nil {
				return badValue("time", string(rawTime), err.Error())
			}
		}
		if !timeStorable(t) {
			return badValue("time", string(rawTime), timeRangeReason)
		}
		e.Time = t
	}
	if rawDate != nil {
		bd, ok := parseDateFast(rawDate)
		var err error
		if !ok {
			bd, err = ParseDate(b2s(rawDate))
		}
		if err != nil {
			return badValue("business_date", string(rawDate), err.Error())
		}
		e.BusinessDate = bd
	}
	return nil
}

// own returns d.ev with strings of its own: the names interned, the other
// strings copied into one allocation (a decoder that allocates a string
// per field spends its time in the allocator), and the attrs as a map.
func (d *Decoder) own() Event {
	e := d.ev
	if e.Spec != SpecV1 {
		e.Spec = strings.Clone(e.Spec)
	}
	var pipeline, component string
	interned := func(s string) string {
		if s != "" {
			if name, ok := d.intern(s); ok {
				return name
			}
		}
		return ""
	}
	pipeline, component = interned(e.Pipeline), interned(e.Component)
	n := len(e.ID) + len(e.BatchID) + len(e.Object) + len(e.Checksum) + len(e.Error)
	if pipeline == "" {
		n += len(e.Pipeline)
	}
	if component == "" {
		n += len(e.Component)
	}
	for i, k := range d.attrKeys {
		n += len(k) + len(d.attrVs[i])
	}
	// The buffer is written once here and never again, so strings may
	// share it (as strings.Builder does).
	buf := make([]byte, 0, n)
	cp := func(s string) string {
		if s == "" {
			return ""
		}
		start := len(buf)
		buf = append(buf, s...)
		return unsafe.String(&buf[start], len(s))
	}
	e.ID, e.BatchID, e.Object, e.Checksum, e.Error = cp(e.ID), cp(e.BatchID), cp(e.Object), cp(e.Checksum), cp(e.Error)
	e.Pipeline, e.Component = cp(e.Pipeline), cp(e.Component)
	if pipeline != "" {
		e.Pipeline = pipeline
	}
	if component != "" {
		e.Component = component
	}
	if len(d.attrKeys) > 0 {
		e.Attrs = make(map[string]string, len(d.attrKeys))
		for i, k := range d.attrKeys {
			e.Attrs[cp(k)] = cp(d.attrVs[i])
		}
	}
	return e
}

// ownError returns err with a copy of the strings of a *ValidationError,
// which may point into the decoder's buffers.
func ownError(err error) error {
	if ve, ok := err.(*ValidationError); ok {
		c := *ve
		c.Field, c.Value = strings.Clone(c.Field), strings.Clone(c.Value)
		return &c
	}
	return err
}

// Decode is a convenience for decoding one event with a fresh Decoder.
func Decode(data []byte) (Event, error) {
	var d Decoder
	return d.Decode(data)
}

// Wire fields of v1, numbered for the decoder's duplicate check.
const (
	fSpec = iota
	fEventID
	fType
	fTime
	fPipeline
	fBusinessDate
	fBatchID
	fSystem
	fComponent
	fObject
	fRows
	fBytes
	fChecksum
	fAttempt
	fError
	fAttrs
)

// wireField returns the number of the v1 field named k, or -1 for a field
// v1 does not define (which then joins attrs).
func wireField(k []byte) int {
	switch string(k) {
	case "spec":
		return fSpec
	case "event_id":
		return fEventID
	case "type":
		return fType
	case "time":
		return fTime
	case "pipeline":
		return fPipeline
	case "business_date":
		return fBusinessDate
	case "batch_id":
		return fBatchID
	case "system":
		return fSystem
	case "component":
		return fComponent
	case "object":
		return fObject
	case "rows":
		return fRows
	case "bytes":
		return fBytes
	case "checksum":
		return fChecksum
	case "attempt":
		return fAttempt
	case "error":
		return fError
	case "attrs":
		return fAttrs
	}
	return -1
}

// duplicateKey rejects a message that states a member twice. encoding/json
// and fastjson keep the last value, other parsers the first; an audit
// record whose meaning depends on the reader's parser is no evidence.
func duplicateKey(k string) *ValidationError {
	if len(k) > 80 {
		k = k[:77] + "..."
	}
	return &ValidationError{Field: k, Reason: "duplicate key: the message states it twice and which value holds is ambiguous", Kind: RejectBadValue}
}

// firstDuplicate returns the first key of keys that occurs twice. A few
// keys are compared pairwise; many go through a map, so that a message of
// thousands of unknown fields costs linear time.
func firstDuplicate(keys []string) (string, bool) {
	if len(keys) <= 16 {
		for i := 1; i < len(keys); i++ {
			for _, k := range keys[:i] {
				if k == keys[i] {
					return k, true
				}
			}
		}
		return "", false
	}
	seen := make(map[string]struct{}, len(keys))
	for _, k := range keys {
		if _, ok := seen[k]; ok {
			return k, true
		}
		seen[k] = struct{}{}
	}
	return "", false
}

// decodeAttrs decodes the attrs object into d.attrKeys/d.attrVs. Its size
// is checked first: a message of 20,000 attrs is rejected without decoding
// them.
func (d *Decoder) decodeAttrs(v *fastjson.Value) error {
	ao, err := v.Object()
	if err != nil {
		return badValue("attrs", string(v.MarshalTo(nil)), "must be a JSON object")
	}
	if ao.Len() == 0 {
		return nil
	}
	if ao.Len() > MaxAttrs {
		return tooManyAttrs(ao.Len())
	}
	many := ao.Len() > smallAttrs
	if many {
		if d.attrSet == nil {
			d.attrSet = make(map[string]struct{}, ao.Len())
		}
		clear(d.attrSet)
	}
	var ferr error
	ao.Visit(func(ak []byte, av *fastjson.Value) {
		if ferr != nil {
			return
		}
		k := viewUTF8(ak)
		if many {
			if _, dup := d.attrSet[k]; dup {
				ferr = badValue("attrs", k, "duplicate key: the message states it twice and which value holds is ambiguous")
				return
			}
			d.attrSet[k] = struct{}{}
		} else if d.hasAttr(k, len(d.attrKeys)) {
			ferr = badValue("attrs", k, "duplicate key: the message states it twice and which value holds is ambiguous")
			return
		}
		var s string
		if s, ferr = d.attrValue(av); ferr == nil {
			d.attrKeys = append(d.attrKeys, k)
			d.attrVs = append(d.attrVs, s)
		}
	})
	return ferr
}

// smallAttrs is how many attrs are compared pairwise; more go through
// Decoder.attrSet.
const smallAttrs = 16

// hasAttr reports whether k is among the first n of d.attrKeys (those of
// the attrs object, indexed by d.attrSet when there are many).
func (d *Decoder) hasAttr(k string, n int) bool {
	if n > smallAttrs {
		_, ok := d.attrSet[k]
		return ok
	}
	for _, a := range d.attrKeys[:n] {
		if a == k {
			return true
		}
	}
	return false
}

// attrValue returns an attribute's value as kept in Event.Attrs: strings as
// they are, anything else as compact JSON (in d.scratch). Invalid UTF-8
// becomes U+FFFD here rather than in AppendJSON, so that an event survives
// re-encoding unchanged.
func (d *Decoder) attrValue(v *fastjson.Value) (string, error) {
	if v.Type() == fastjson.TypeString {
		return viewUTF8(v.GetStringBytes()), nil
	}
	start := len(d.scratch)
	var err error
	d.scratch, err = appendValue(d.scratch, v)
	if err != nil {
		return "", err
	}
	// Earlier values stay valid when scratch grows: they keep the old array.
	return b2s(d.scratch[start:len(d.scratch):len(d.scratch)]), nil
}

// checkAttrPairs is checkAttrs for attrs as pairs (without duplicates).
func checkAttrPairs(keys, values []string) error {
	if len(keys) > MaxAttrs {
		return tooManyAttrs(len(keys))
	}
	n := 0
	for i, k := range keys {
		n += len(k) + len(values[i])
	}
	if n > MaxAttrsBytes {
		return attrsTooLarge(n)
	}
	return nil
}

// sortPairs sorts keys, and values with them: an insertion sort for the
// few attrs events carry, slices.SortFunc over an index for many (attrs
// come from untrusted input).
func sortPairs(keys, values []string) {
	if len(keys) <= smallAttrs {
		for i := 1; i < len(keys); i++ {
			for j := i; j > 0 && keys[j] < keys[j-1]; j-- {
				keys[j], keys[j-1] = keys[j-1], keys[j]
				values[j], values[j-1] = values[j-1], values[j]
			}
		}
		return
	}
	type pair struct{ k, v string }
	ps := make([]pair, len(keys))
	for i := range keys {
		ps[i] = pair{keys[i], values[i]}
	}
	slices.SortFunc(ps, func(a, b pair) int { return strings.Compare(a.k, b.k) })
	for i := range ps {
		keys[i], values[i] = ps[i].k, ps[i].v
	}
}

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
	if i := EventType(b).LookupIndex(); i >= 0 {
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

// integer decodes a whole number, checked as JSON in d.num.
func (d *Decoder) integer(field string, v *fastjson.Value) (int64, error) {
	if v.Type() == fastjson.TypeNumber {
		var err error
		if d.num, err = checkNumber(d.num, v); err != nil {
			return 0, err
		}
	}
	n, err := v.Int64()
	if err != nil {
		return 0, badValue(field, string(v.MarshalTo(nil)), "must be a whole number")
	}
	return n, nil
}

func validUTF8(b []byte) string {
	if utf8.Valid(b) {
		return string(b)
	}
	return strings.ToValidUTF8(string(b), "\uFFFD")
}

// viewUTF8 is validUTF8 without a copy of valid input: the string borrows
// b.
func viewUTF8(b []byte) string {
	if utf8.Valid(b) {
		return b2s(b)
	}
	return strings.ToValidUTF8(string(b), "\uFFFD")
}

// parseFast is parse for the messages producers and AppendJSON write: one
// compact object (no white space) of the v1 fields and an attrs object,
// strings without escapes or control characters, whole numbers that fit,
// attrs values that are strings, numbers, true, false or null, and a valid
// event time and date. It decodes such a message in one pass over data,
// without the parser's tree or the string checks (there is nothing for
// them to find), into the same d.ev and attrs as parse, every string
// borrowed from data. For anything else, errors included, it returns false
// with d partly filled: parse then resets d and decodes data the general
// way, so that what is accepted and rejected, and every error, are those
// of the general way (FuzzDecodeFast).
func (d *Decoder) parseFast(data []byte) bool {
	return d.parseFastWith(data, plainMessage(data))
}

// parseFastWith is parseFast, told whether data is a plain message
// (plainMessage): its strings are then found with bytes.IndexByte instead
// of scanPlain, and d.plain records it for the validation.
func (d *Decoder) parseFastWith(data []byte, plain bool) bool {
	n := len(data)
	if n < 2 || data[0] != '{' || data[n-1] != '}' {
		return false
	}
	d.plain = plain
	e := &d.ev
	var rawTime, rawDate []byte
	var seen uint32
	i := 1
	if data[i] == '}' {
		return i == n-1 && d.finish(nil, nil) == nil
	}
	for {
		if data[i] != '"' {
			return false
		}
		k, j, ok := scanString(data, i+1, plain)
		if !ok || j+1 >= n || data[j+1] != ':' {
			return false
		}
		i = j + 2
		f := wireField(k)
		if f < 0 || seen&(1<<f) != 0 {
			return false
		}
		seen |= 1 << f
		switch c := data[i]; {
		case c == '"':
			v, j, ok := scanString(data, i+1, plain)
			if !ok {
				return false
			}
			i = j + 1
			switch f {
			case fSpec:
				e.Spec = SpecV1
				if string(v) != SpecV1 {
					e.Spec = b2s(v)
				}
			case fEventID:
				e.ID = b2s(v)
			case fType:
				e.Type = internType(v)
			case fTime:
				rawTime = v
			case fPipeline:
				e.Pipeline = b2s(v)
			case fBusinessDate:
				rawDate = v
			case fBatchID:
				e.BatchID = b2s(v)
			case fSystem:
				e.System = internSystem(v)
			case fComponent:
				e.Component = b2s(v)
			case fObject:
				e.Object = b2s(v)
			case fChecksum:
				e.Checksum = b2s(v)
			case fError:
				e.Error = b2s(v)
			default: // a number or attrs written as a string
				return false
			}
		case c == 'n':
			if n-i < 4 || string(data[i:i+4]) != "null" {
				return false
			}
			i += 4
		case c == '-' || c >= '0' && c <= '9':
			v, j, ok := scanInt(data, i)
			if !ok {
				return false
			}
			i = j
			switch f {
			case fRows:
				e.Rows, e.HasRows = v, true
			case fBytes:
				e.Bytes, e.HasBytes = v, true
			case fAttempt:
				e.Attempt, e.HasAttempt = v, true
			default:
				return false
			}
		case c == '{' && f == fAttrs:
			if i, ok = d.scanAttrs(data, i+1, plain); !ok {
				return false
			}
		default:
			return false
		}
		if i >= n { // the attrs object took the closing '}'
			return false
		}
		switch data[i] {
		case ',':
			i++
		case '}':
			return i == n-1 && d.finish(rawTime, rawDate) == nil
		default:
			return false
		}
	}
}

// scanAttrs is parseFast for the members of an attrs object, from data[i]
// after its '{': it returns the index after the closing '}'. More than
// smallAttrs attrs are left to parse.
func (d *Decoder) scanAttrs(data []byte, i int, plain bool) (int, bool) {
	n := len(data)
	if data[i] == '}' {
		return i + 1, true
	}
	for count := 0; ; count++ {
		if count == smallAttrs || data[i] != '"' {
			return 0, false
		}
		k, j, ok := scanString(data, i+1, plain)
		if !ok || j+1 >= n || data[j+1] != ':' {
			return 0, false
		}
		i = j + 2
		key := b2s(k)
		if d.hasAttr(key, len(d.attrKeys)) {
			return 0, false
		}
		var v []byte
		switch c := data[i]; {
		case c == '"':
			if v, j, ok = scanString(data, i+1, plain); !ok {
				return 0, false
			}
			i = j + 1
		case c == '-' || c >= '0' && c <= '9':
			// Kept as written, as parse keeps a number: its JSON text.
			j = i + 1
			for j < n && (data[j] >= '0' && data[j] <= '9' || data[j] == '.' || data[j] == 'e' || data[j] == 'E' || data[j] == '+' || data[j] == '-') {
				j++
			}
			if v = data[i:j]; !isJSONNumber(b2s(v)) {
				return 0, false
			}
			i = j
		default:
			for _, lit := range [...]string{"true", "false", "null"} {
				if n-i >= len(lit) && string(data[i:i+len(lit)]) == lit {
					v = data[i : i+len(lit)]
					break
				}
			}
			if v == nil {
				return 0, false
			}
			i += len(v)
		}
		d.attrKeys = append(d.attrKeys, key)
		d.attrVs = append(d.attrVs, b2s(v))
		if i >= n {
			return 0, false
		}
		switch data[i] {
		case ',':
			i++
		case '}':
			return i + 1, true
		default:
			return 0, false
		}
	}
}

// plainByte marks the bytes a string may hold in parseFast: not '"',
// '\\' or a control character, and below 0x80 (longer UTF-8 sequences are
// checked as a whole).
var plainByte = func() (t [256]bool) {
	for c := 0x20; c < 0x80; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// scanPlain returns the string that starts at data[i] (after its opening
// quote) and the index of its closing quote, if the string has no escape
// or control character and is valid UTF-8: the string as parse would
// decode it.
func scanPlain(data []byte, i int) ([]byte, int, bool) {
	start, ascii := i, true
	for i < len(data) {
		// Eight bytes at a time up to the first that is not plain: for
		// bytes below 0x80, (x - 0x20 in every byte) &^ x has a byte's top
		// bit set where x is below 0x20, and so does (y - 1) &^ y where y
		// (x with '"' or '\\' xored away) is zero; bytes of 0x80 and above
		// show as their own top bit. Only the lowest flag is exact, which
		// is the one taken.
		for i+8 <= len(data) {
			const ones, tops = 0x0101010101010101, 0x8080808080808080
			x := binary.LittleEndian.Uint64(data[i:])
			q, bs := x^(ones*'"'), x^(ones*'\\')
			m := (x | (x-ones*0x20)&^x | (q-ones)&^q | (bs-ones)&^bs) & tops
			if m == 0 {
				i += 8
				continue
			}
			i += bits.TrailingZeros64(m) / 8
			break
		}
		if i >= len(data) {
			break
		}
		c := data[i]
		if plainByte[c] {
			i++
			continue
		}
		if c == '"' {
			s := data[start:i]
			return s, i, ascii || utf8.Valid(s)
		}
		if c < 0x80 { // '\\' or a control character
			return nil, 0, false
		}
		ascii = false
		i++
	}
	return nil, 0, false
}

// plainMessage reports whether data holds printable ASCII only (0x20 to
// 0x7e) and no '\\': a plain message, as producers write nearly all of
// them. In one, every string ends at the next '"' and is plain for
// scanPlain, so the fast path finds it with bytes.IndexByte (scanQuote),
// and no field has a control character for Validate to find (d.plain).
// One pass over the message costs less than scanPlain string by string.
func plainMessage(data []byte) bool {
	const ones, tops = 0x0101010101010101, 0x8080808080808080
	// Eight bytes at a time, the flags of all of them or'ed: a byte's top
	// bit is set in x for 0x80 and above, in x+ones for 0x7f (below 0x7f
	// there is no carry), in (x - 0x20 in every byte) &^ x for a byte
	// below 0x20 and in (y-ones) &^ y for a zero byte of y, x with '\\'
	// xored away. Borrows and carries only start at a flagged byte, so
	// the or of the flags is exact even where a single flag is not.
	var m uint64
	p := data
	for ; len(p) >= 16; p = p[16:] {
		x, y := binary.LittleEndian.Uint64(p), binary.LittleEndian.Uint64(p[8:])
		bx, by := x^(ones*'\\'), y^(ones*'\\')
		m |= x | y | (x + ones) | (y + ones) | (x-ones*0x20)&^x | (y-ones*0x20)&^y | (bx-ones)&^bx | (by-ones)&^by
	}
	if m&tops != 0 {
		return false
	}
	for _, c := range p {
		if c < 0x20 || c >= 0x7f || c == '\\' {
			return false
		}
	}
	return true
}

// scanString is scanPlain, or scanQuote in a plain message.
func scanString(data []byte, i int, plain bool) ([]byte, int, bool) {
	if plain {
		return scanQuote(data, i)
	}
	return scanPlain(data, i)
}

// scanQuote is scanPlain for a plain message (plainMessage), where every
// string is plain: it ends at the next '"', found eight bytes at a time
// (the lowest zero byte of x with '"' xored away is flagged exactly).
func scanQuote(data []byte, i int) ([]byte, int, bool) {
	const ones, tops = 0x0101010101010101, 0x8080808080808080
	j := i
	for ; j+8 <= len(data); j += 8 {
		q := binary.LittleEndian.Uint64(data[j:]) ^ (ones * '"')
		if m := (q - ones) &^ q & tops; m != 0 {
			j += bits.TrailingZeros64(m) / 8
			return data[i:j], j, true
		}
	}
	for ; j < len(data); j++ {
		if data[j] == '"' {
			return data[i:j], j, true
		}
	}
	return nil, 0, false
}

// scanInt decodes the JSON integer at data[i] (at most 18 digits, so that
// it fits an int64) and returns the index after it; what follows is for
// the caller to check (a fraction or an exponent is not ',' or '}').
func scanInt(data []byte, i int) (int64, int, bool) {
	neg := data[i] == '-'
	if neg {
		i++
	}
	start := i
	var v int64
	for i < len(data) && data[i] >= '0' && data[i] <= '9' {
		v = v*10 + int64(data[i]-'0')
		i++
	}
	digits := i - start
	if digits == 0 || digits > 18 || digits > 1 && data[start] == '0' {
		return 0, 0, false
	}
	if neg {
		v = -v
	}
	return v, i, true
}

// parseTimeFast is ParseTime for the form AppendTime writes,
// 2026-10-01T01:20:05.120Z, and the same without the fraction, from 1970
// on: the same time without time.Parse. ok false: use ParseTime (another
// form, or a value out of range, which ParseTime explains).
func parseTimeFast(b []byte) (t time.Time, ok bool) {
	if len(b) != 20 && len(b) != 24 || b[len(b)-1] != 'Z' || b[10] != 'T' || b[13] != ':' || b[16] != ':' {
		return time.Time{}, false
	}
	d, ok := parseDateFast(b[:10])
	if !ok || d.Year < 1970 {
		return time.Time{}, false
	}
	h, ok1 := digits(b2s(b[11:13]))
	mi, ok2 := digits(b2s(b[14:16]))
	sec, ok3 := digits(b2s(b[17:19]))
	ms, ok4 := 0, true
	if len(b) == 24 {
		if b[19] != '.' {
			return time.Time{}, false
		}
		ms, ok4 = digits(b2s(b[20:23]))
	}
	if !ok1 || !ok2 || !ok3 || !ok4 || h > 23 || mi > 59 || sec > 59 {
		return time.Time{}, false
	}
	days := int64(d.DaysSinceEpoch())
	return time.UnixMilli(((days*24+int64(h))*60+int64(mi))*60000 + int64(sec)*1000 + int64(ms)).UTC(), true
}

// parseDateFast is ParseDate for a valid date: ok false for anything
// ParseDate rejects (which then says why).
func parseDateFast(b []byte) (Date, bool) {
	if len(b) != 10 || b[4] != '-' || b[7] != '-' {
		return Date{}, false
	}
	y, ok1 := digits(b2s(b[0:4]))
	m, ok2 := digits(b2s(b[5:7]))
	d, ok3 := digits(b2s(b[8:10]))
	if !ok1 || !ok2 || !ok3 || m < 1 || m > 12 || d < 1 {
		return Date{}, false
	}
	days := [...]int{31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31}[m-1]
	if m == 2 && y%4 == 0 && (y%100 != 0 || y%400 == 0) {
		days = 29
	}
	if d > days {
		return Date{}, false
	}
	return Date{Year: y, Month: time.Month(m), Day: d}, true
}
