package replay

import (
	"encoding/json"
	"strconv"
	"time"

	"github.com/handoff-dev/handoff/model"
)

// AppendJSON appends the diagnosis as compact JSON to b. Field names are
// those of the struct tags (docs/diagnosis.md); times use handoff's one
// layout, RFC 3339 UTC with milliseconds. It is written by hand because
// diagnose --format json writes tens of thousands of diagnoses a second.
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
	b = model.AppendJSONString(b, d.Verdict.String())
	b = append(b, `,"first_missing":`...)
	b = model.AppendJSONString(b, d.FirstMissing)
	b = append(b, `,"hypotheses":[`...)
	for i := range d.Hypotheses {
		h := &d.Hypotheses[i]
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"name":`...)
		b = model.AppendJSONString(b, h.Name.String())
		b = append(b, `,"verdict":`...)
		b = model.AppendJSONString(b, string(h.Support))
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
	if d.Baseline != "" {
		b = append(b, `,"baseline":`...)
		b = model.AppendJSONString(b, d.Baseline)
	}
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
		if !s.UsuallyBy.IsZero() {
			b = append(b, `,"usually_by":`...)
			b = appendJSONTime(b, s.UsuallyBy)
		}
		b = append(b, `,"overdue":`...)
		b = strconv.AppendBool(b, s.Overdue)
		b = append(b, `,"evidence":`...)
		b = appendJSONStrings(b, s.Evidence)
		b = append(b, `,"out_of_order":`...)
		b = strconv.AppendBool(b, s.OutOfOrder)
		b = append(b, '}')
	}
	b = append(b, ']')
	n := &d.NextStep
	b = append(b, `,"next_step":{"action":`...)
	b = model.AppendJSONString(b, string(n.Action))
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
		b = model.AppendJSONString(b, string(c.State))
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
	b = append(b, `,"timeline":[`...)
	for i := range d.Timeline {
		if i > 0 {
			b = append(b, ',')
		}
		b = d.Timeline[i].appendJSON(b)
	}
	b = append(b, `],"expected":{`...)
	sep := ""
	for _, f := range [...]struct{ k, v string }{{"batch_id", d.Expected.BatchID}, {"artifact", d.Expected.Artifact}, {"signal", d.Expected.Signal}} {
		if f.v != "" {
			b = append(b, sep...)
			b = append(b, '"')
			b = append(b, f.k...)
			b = append(b, `":`...)
			b = model.AppendJSONString(b, f.v)
			sep = ","
		}
	}
	b = append(b, '}')
	if p := d.Previous; p != nil {
		b = append(b, `,"previous":{"batch":`...)
		b = model.AppendJSONString(b, p.Batch)
		b = append(b, `,"seen":`...)
		b = strconv.AppendBool(b, p.Seen)
		b = append(b, `,"delivered":`...)
		b = strconv.AppendBool(b, p.Delivered)
		if p.Seen {
			b = append(b, `,"verdict":`...)
			b = model.AppendJSONString(b, p.Verdict.String())
		}
		b = append(b, '}')
	}
	if a := d.Attempt; a != nil {
		b = append(b, `,"attempt":{"of":`...)
		b = model.AppendJSONString(b, a.Of)
		b = append(b, `,"rerun":`...)
		b = strconv.AppendInt(b, int64(a.Rerun), 10)
		b = append(b, `,"attempts":[`...)
		for i, k := range a.Attempts {
			if i > 0 {
				b = append(b, ',')
			}
			b = model.AppendJSONString(b, k)
		}
		b = append(b, ']')
		if a.SupersededBy != "" {
			b = append(b, `,"superseded_by":`...)
			b = model.AppendJSONString(b, a.SupersededBy)
		}
		b = append(b, '}')
	}
	if bl := d.Blocked; bl != nil {
		b = append(b, `,"blocked":{"by":`...)
		b = appendLinks(b, bl.By)
		b = append(b, `,"roots":`...)
		b = appendLinks(b, bl.Roots)
		b = append(b, '}')
	}
	b = append(b, `,"alive":[`...)
	for i, h := range d.Alive {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"system":`...)
		b = model.AppendJSONString(b, string(h.System))
		b = append(b, `,"component":`...)
		b = model.AppendJSONString(b, h.Component)
		b = append(b, `,"at":`...)
		b = appendJSONTime(b, h.At)
		b = append(b, `,"event_id":`...)
		b = model.AppendJSONString(b, h.EventID)
		b = append(b, '}')
	}
	return append(b, "]}"...)
}

// appendJSON appends the entry; numbers that were not stated are left out.
func (e *Entry) appendJSON(b []byte) []byte {
	b = append(b, `{"event_id":`...)
	b = model.AppendJSONString(b, e.EventID)
	b = append(b, `,"type":`...)
	b = model.AppendJSONString(b, string(e.Type))
	b = append(b, `,"time":`...)
	b = appendJSONTime(b, e.Time)
	b = append(b, `,"system":`...)
	b = model.AppendJSONString(b, string(e.System))
	for _, f := range [...]struct{ k, v string }{{"component", e.Component}, {"object", e.Object}, {"checksum", e.Checksum}, {"error", e.Error}} {
		if f.v != "" {
			b = append(b, ',', '"')
			b = append(b, f.k...)
			b = append(b, `":`...)
			b = model.AppendJSONString(b, f.v)
		}
	}
	for _, f := range [...]struct {
		k   string
		v   int64
		has bool
	}{{"rows", e.Rows, e.HasRows}, {"bytes", e.Bytes, e.HasBytes}, {"attempt", e.Attempt, e.HasAttempt}} {
		if f.has {
			b = append(b, ',', '"')
			b = append(b, f.k...)
			b = append(b, `":`...)
			b = strconv.AppendInt(b, f.v, 10)
		}
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

func appendLinks(b []byte, ls []Link) []byte {
	b = append(b, '[')
	for i, l := range ls {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"batch":`...)
		b = model.AppendJSONString(b, l.Batch)
		b = append(b, `,"seen":`...)
		b = strconv.AppendBool(b, l.Seen)
		b = append(b, `,"verdict":`...)
		b = model.AppendJSONString(b, l.Verdict.String())
		b = append(b, `,"first_missing":`...)
		b = model.AppendJSONString(b, l.FirstMissing)
		b = append(b, '}')
	}
	return append(b, ']')
}
