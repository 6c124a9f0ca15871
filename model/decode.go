package model

import (
	"fmt"
	"strings"
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
	if err := checkStrings(data); err != nil {
		return e, err
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
	var seen uint32 // bit i: wire field i seen
	o.Visit(func(k []byte, v *fastjson.Value) {
		if ferr != nil {
			return
		}
		f := wireField(k)
		if f < 0 {
			// Kept with nulls, so that a duplicate shows whatever the values.
			extraKeys = append(extraKeys, validUTF8(k))
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
					e.Spec = string(b)
				}
			}
		case fEventID:
			field("event_id", oID, v)
		case fType:
			var b []byte
			if b, ferr = strBytes("type", v); ferr == nil {
				e.Type = internType(b)
			}
		case fTime:
			rawTime, ferr = strBytes("time", v)
		case fPipeline:
			field("pipeline", oPipeline, v)
		case fBusinessDate:
			rawDate, ferr = strBytes("business_date", v)
		case fBatchID:
			field("batch_id", oBatchID, v)
		case fSystem:
			var b []byte
			if b, ferr = strBytes("system", v); ferr == nil {
				e.System = internSystem(b)
			}
		case fComponent:
			field("component", oComponent, v)
		case fObject:
			field("object", oObject, v)
		case fRows:
			e.Rows, ferr = integer("rows", v)
			e.HasRows = ferr == nil
		case fBytes:
			e.Bytes, ferr = integer("bytes", v)
			e.HasBytes = ferr == nil
		case fChecksum:
			field("checksum", oChecksum, v)
		case fAttempt:
			e.Attempt, ferr = integer("attempt", v)
			e.HasAttempt = ferr == nil
		case fError:
			field("error", oError, v)
		case fAttrs:
			e.Attrs, ferr = decodeAttrs(v)
		}
	})
	if ferr != nil {
		return e, ferr
	}
	if k, ok := firstDuplicate(extraKeys); ok {
		return e, duplicateKey(k)
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
		if extra[i].Type() == fastjson.TypeNull {
			continue
		}
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
		if !timeStorable(t) {
			return e, badValue("time", string(rawTime), timeRangeReason)
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

// decodeAttrs decodes the attrs object. Its size is checked before the
// map is built: a message of 20,000 attrs is rejected without building it.
func decodeAttrs(v *fastjson.Value) (map[string]string, error) {
	ao, err := v.Object()
	if err != nil {
		return nil, badValue("attrs", string(v.MarshalTo(nil)), "must be a JSON object")
	}
	if ao.Len() == 0 {
		return nil, nil
	}
	if ao.Len() > MaxAttrs {
		return nil, tooManyAttrs(ao.Len())
	}
	attrs := make(map[string]string, ao.Len())
	var ferr error
	ao.Visit(func(ak []byte, av *fastjson.Value) {
		if ferr != nil {
			return
		}
		k := validUTF8(ak)
		if _, dup := attrs[k]; dup {
			ferr = badValue("attrs", k, "duplicate key: the message states it twice and which value holds is ambiguous")
			return
		}
		attrs[k], ferr = attrValue(av)
	})
	return attrs, ferr
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
