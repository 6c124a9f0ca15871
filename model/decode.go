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
