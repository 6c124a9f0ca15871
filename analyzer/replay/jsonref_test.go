package replay_test

import (
	"strconv"
	"time"

	"github.com/handoff-dev/handoff/analyzer/replay"
	"github.com/handoff-dev/handoff/model"
)

// refAppendJSON is the diagnosis encoder as it was before AppendJSON
// worked out each day's date once and scanned each string once: the
// reference the encoder must match byte for byte. Keep it as it is.
func refAppendJSON(b []byte, d *replay.Diagnosis) []byte {
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
		b = refStrings(b, h.Evidence)
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
		b = refStrings(b, a.Evidence)
		b = append(b, '}')
	}
	b = append(b, `],"as_of":`...)
	b = refTime(b, d.AsOf)
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
			b = refTime(b, s.At)
		}
		if !s.Due.IsZero() {
			b = append(b, `,"due":`...)
			b = refTime(b, s.Due)
		}
		if !s.UsuallyBy.IsZero() {
			b = append(b, `,"usually_by":`...)
			b = refTime(b, s.UsuallyBy)
		}
		b = append(b, `,"overdue":`...)
		b = strconv.AppendBool(b, s.Overdue)
		b = append(b, `,"evidence":`...)
		b = refStrings(b, s.Evidence)
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
		b = refStrings(b, c.Evidence)
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
	b = refTime(b, d.FirstEventAt)
	b = append(b, `,"last_event_at":`...)
	b = refTime(b, d.LastEventAt)
	b = append(b, `,"timeline":[`...)
	for i := range d.Timeline {
		if i > 0 {
			b = append(b, ',')
		}
		b = refEntry(b, &d.Timeline[i])
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
		b = refLinks(b, bl.By)
		b = append(b, `,"roots":`...)
		b = refLinks(b, bl.Roots)
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
		b = refTime(b, h.At)
		b = append(b, `,"event_id":`...)
		b = model.AppendJSONString(b, h.EventID)
		b = append(b, '}')
	}
	return append(b, "]}"...)
}

func refEntry(b []byte, e *replay.Entry) []byte {
	b = append(b, `{"event_id":`...)
	b = model.AppendJSONString(b, e.EventID)
	b = append(b, `,"type":`...)
	b = model.AppendJSONString(b, string(e.Type))
	b = append(b, `,"time":`...)
	b = refTime(b, e.Time)
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

func refTime(b []byte, t time.Time) []byte {
	if t.IsZero() {
		return append(b, `"0001-01-01T00:00:00.000Z"`...)
	}
	b = append(b, '"')
	b = model.AppendTime(b, t)
	return append(b, '"')
}

func refStrings(b []byte, ss []string) []byte {
	b = append(b, '[')
	for i, s := range ss {
		if i > 0 {
			b = append(b, ',')
		}
		b = model.AppendJSONString(b, s)
	}
	return append(b, ']')
}

func refLinks(b []byte, ls []replay.Link) []byte {
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
