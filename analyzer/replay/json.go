package replay

import (
	"strconv"
	"time"

	"github.com/handoff-dev/handoff/model"
)

// AppendJSON appends the diagnosis as compact JSON to b. Field names are
// those of the struct tags (design.md section 5); times use handoff's one
// layout, RFC 3339 UTC with milliseconds. It is written by hand because a
// backfill writes tens of thousands of diagnoses a second.
func (d *Diagnosis) AppendJSON(b []byte) []byte {
	b = append(b, `{"batch":`...)
	b = model.AppendJSONString(b, d.Batch)
	b = append(b, `,"pipeline":`...)
	b = model.AppendJSONString(b, d.Pipeline)
	b = append(b, `,"business_date":`...)
	b = model.AppendJSONString(b, d.BusinessDate)
	b = append(b, `,"batch_id":`...)
	b = model.AppendJSONString(b, d.BatchID)
	b = append(b, `,"status":`...)
	b = model.AppendJSONString(b, string(d.Status))
	b = append(b, `,"verdict":`...)
	b = model.AppendJSONString(b, d.Verdict)
	b = append(b, `,"first_missing":`...)
	b = model.AppendJSONString(b, d.FirstMissing)
	b = append(b, `,"hypotheses":[`...)
	for i := range d.Hypotheses {
		h := &d.Hypotheses[i]
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"name":`...)
		b = model.AppendJSONString(b, h.Name)
		b = append(b, `,"verdict":`...)
		b = model.AppendJSONString(b, string(h.Verdict))
		b = append(b, `,"evidence":`...)
		b = appendJSONStrings(b, h.Evidence)
		b = append(b, `,"reason":`...)
		b = model.AppendJSONString(b, h.Reason)
		b = append(b, '}')
	}
	b = append(b, `],"anomalies":[`...)
	for i := range d.Anomalies {
		a := &d.Anomalies[i]
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"kind":`...)
		b = model.AppendJSONString(b, string(a.Kind))
		b = append(b, `,"detail":`...)
		b = model.AppendJSONString(b, a.Detail)
		b = append(b, `,"evidence":`...)
		b = appendJSONStrings(b, a.Evidence)
		b = append(b, '}')
	}
	b = append(b, `],"as_of":`...)
	b = appendJSONTime(b, d.AsOf)
	b = append(b, `,"contract":`...)
	b = model.AppendJSONString(b, d.Contract)
	b = append(b, `,"boundaries":[`...)
	for i := range d.Boundaries {
		s := &d.Boundaries[i]
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"name":`...)
		b = model.AppendJSONString(b, s.Name)
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
		b = model.AppendJSONString(b, s.System)
		b = append(b, `,"facts":[`...)
		for j := range s.Facts {
			if j > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"text":`...)
			b = model.AppendJSONString(b, s.Facts[j].Text)
			b = append(b, `,"evidence":`...)
			b = appendJSONStrings(b, s.Facts[j].Evidence)
			b = append(b, '}')
		}
		b = append(b, "]}"...)
	}
	n := &d.NextStep
	b = append(b, `],"next_step":{"action":`...)
	b = model.AppendJSONString(b, n.Action)
	b = append(b, `,"summary":`...)
	b = model.AppendJSONString(b, n.Summary)
	b = append(b, `,"checks":[`...)
	for i := range n.Checks {
		c := &n.Checks[i]
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"name":`...)
		b = model.AppendJSONString(b, c.Name)
		b = append(b, `,"state":`...)
		b = model.AppendJSONString(b, c.State)
		b = append(b, `,"detail":`...)
		b = model.AppendJSONString(b, c.Detail)
		b = append(b, `,"evidence":`...)
		b = appendJSONStrings(b, c.Evidence)
		b = append(b, '}')
	}
	b = append(b, ']')
	if n.Signal != "" {
		b = append(b, `,"signal":`...)
		b = model.AppendJSONString(b, n.Signal)
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
	b = model.AppendTime(b, t)
	return append(b, '"')
}

func appendJSONStrings(b []byte, ss []string) []byte {
	b = append(b, '[')
	for i, s := range ss {
		if i > 0 {
			b = append(b, ',')
		}
		b = model.AppendJSONString(b, s)
	}
	return append(b, ']')
}
