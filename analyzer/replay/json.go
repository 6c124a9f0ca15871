package replay

import (
	"strconv"
	"time"
	"unicode/utf8"
)

// AppendJSON appends the diagnosis as compact JSON to b. Field names are
// those of the struct tags (design.md section 5); times use handoff's one
// layout, RFC 3339 UTC with milliseconds. It is written by hand because a
// backfill writes tens of thousands of diagnoses a second.
func (d *Diagnosis) AppendJSON(b []byte) []byte {
	b = append(b, `{"batch":`...)
	b = appendJSONString(b, d.Batch)
	b = append(b, `,"pipeline":`...)
	b = appendJSONString(b, d.Pipeline)
	b = append(b, `,"business_date":`...)
	b = appendJSONString(b, d.BusinessDate)
	b = append(b, `,"batch_id":`...)
	b = appendJSONString(b, d.BatchID)
	b = append(b, `,"status":`...)
	b = appendJSONString(b, string(d.Status))
	b = append(b, `,"verdict":`...)
	b = appendJSONString(b, d.Verdict)
	b = append(b, `,"first_missing":`...)
	b = appendJSONString(b, d.FirstMissing)
	b = append(b, `,"hypotheses":[`...)
	for i := range d.Hypotheses {
		h := &d.Hypotheses[i]
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"name":`...)
		b = appendJSONString(b, h.Name)
		b = append(b, `,"verdict":`...)
		b = appendJSONString(b, string(h.Verdict))
		b = append(b, `,"evidence":`...)
		b = appendJSONStrings(b, h.Evidence)
		b = append(b, `,"reason":`...)
		b = appendJSONString(b, h.Reason)
		b = append(b, '}')
	}
	b = append(b, `],"anomalies":[`...)
	for i := range d.Anomalies {
		a := &d.Anomalies[i]
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"kind":`...)
		b = appendJSONString(b, string(a.Kind))
		b = append(b, `,"detail":`...)
		b = appendJSONString(b, a.Detail)
		b = append(b, `,"evidence":`...)
		b = appendJSONStrings(b, a.Evidence)
		b = append(b, '}')
	}
	b = append(b, `],"as_of":`...)
	b = appendJSONTime(b, d.AsOf)
	b = append(b, `,"contract":`...)
	b = appendJSONString(b, d.Contract)
	b = append(b, `,"boundaries":[`...)
	for i := range d.Boundaries {
		s := &d.Boundaries[i]
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"name":`...)
		b = appendJSONString(b, s.Name)
		b = append(b, `,"required":`...)
		b = strconv.AppendBool(b, s.Required)
		b = append(b, `,"proven":`...)
		b = strconv.AppendBool(b, s.Proven)
		if !s.At.IsZero() {
			b = append(b, `,"at":`...)
			b = appendJSONTime(b, s.At)
		}
		if !s.Due.IsZero() {
			b = append(b, `,"due":`...)
			b = appendJSONTime(b, s.Due)
		}
		b = append(b, `,"overdue":`...)
		b = strconv.AppendBool(b, s.Overdue)
		b = append(b, `,"evidence":`...)
		b = appendJSONStrings(b, s.Evidence)
		b = append(b, `,"out_of_order":`...)
		b = strconv.AppendBool(b, s.OutOfOrder)
		b = append(b, '}')
	}
	b = append(b, `],"sides":[`...)
	for i := range d.Sides {
		s := &d.Sides[i]
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"system":`...)
		b = appendJSONString(b, s.System)
		b = append(b, `,"facts":[`...)
		for j := range s.Facts {
			if j > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"text":`...)
			b = appendJSONString(b, s.Facts[j].Text)
			b = append(b, `,"evidence":`...)
			b = appendJSONStrings(b, s.Facts[j].Evidence)
			b = append(b, '}')
		}
		b = append(b, "]}"...)
	}
	n := &d.NextStep
	b = append(b, `],"next_step":{"action":`...)
	b = appendJSONString(b, n.Action)
	b = append(b, `,"summary":`...)
	b = appendJSONString(b, n.Summary)
	b = append(b, `,"checks":[`...)
	for i := range n.Checks {
		c := &n.Checks[i]
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"name":`...)
		b = appendJSONString(b, c.Name)
		b = append(b, `,"state":`...)
		b = appendJSONString(b, c.State)
		b = append(b, `,"detail":`...)
		b = appendJSONString(b, c.Detail)
		b = append(b, `,"evidence":`...)
		b = appendJSONStrings(b, c.Evidence)
		b = append(b, '}')
	}
	b = append(b, ']')
	if n.Signal != "" {
		b = append(b, `,"signal":`...)
		b = appendJSONString(b, n.Signal)
	}
	b = append(b, `},"events":`...)
	b = strconv.AppendInt(b, int64(d.Events), 10)
	b = append(b, `,"first_event_at":`...)
	b = appendJSONTime(b, d.FirstEventAt)
	b = append(b, `,"last_event_at":`...)
	b = appendJSONTime(b, d.LastEventAt)
	return append(b, '}')
}

// MarshalJSON implements json.Marshaler with AppendJSON, so that every
// encoder writes the same bytes. Decoding needs no counterpart: the field
// names are the struct tags and the times are RFC 3339.
func (d Diagnosis) MarshalJSON() ([]byte, error) { return d.AppendJSON(nil), nil }

func appendJSONTime(b []byte, t time.Time) []byte {
	if t.IsZero() {
		return append(b, `"0001-01-01T00:00:00.000Z"`...)
	}
	b = append(b, '"')
	b = appendTime(b, t)
	return append(b, '"')
}

func appendJSONStrings(b []byte, ss []string) []byte {
	b = append(b, '[')
	for i, s := range ss {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendJSONString(b, s)
	}
	return append(b, ']')
}

const hex = "0123456789abcdef"

// appendJSONString appends s as a JSON string. Unlike encoding/json it does
// not escape <, > and &: diagnoses are read in terminals, where "->" is
// better than "-\u003e". U+2028 and U+2029 are escaped for JavaScript.
func appendJSONString(b []byte, s string) []byte {
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
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hex[r&0xf])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// jsonSafe marks the bytes a JSON string may hold as they are: printable
// ASCII but the quote and the backslash. Everything else takes the slow
// path, which escapes or validates UTF-8.
var jsonSafe = func() (t [256]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()
