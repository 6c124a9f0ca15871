package replay

import (
	"strconv"
	"unsafe"

	"github.com/handoff-dev/handoff/model"
)

var sideOrder = [...]model.System{model.Producer, model.Exchange, model.Consumer, model.Operator}

// sides fills d.Sides: what each system shows, in time order, then what it
// does not show. Absences are stated as absences, never as health.
func (v *view) sides(d *Diagnosis, ctx Context) {
	// Facts of all sides share one backing array, all event sentences one
	// string, and evidence lists one array: a few allocations per batch
	// instead of several per event.
	var count [len(sideOrder)]int
	for _, r := range v.recs {
		count[r.side]++
	}
	// Room for what is added after the events: absences (at most 3, 2 and
	// 4 with the previous batch), and heartbeats.
	count[sideIndex(model.Producer)] += 3
	count[sideIndex(model.Exchange)] += 2
	count[sideIndex(model.Consumer)] += 4
	for _, h := range ctx.Alive {
		count[sideIndex(h.System)]++
	}
	total := 0
	for _, n := range count {
		total += n
	}
	backing := make([]Fact, 0, total)
	var facts [len(sideOrder)][]Fact
	for i, n := range count {
		facts[i] = backing[len(backing) : len(backing) : len(backing)+n]
		backing = backing[:len(backing)+n]
	}
	buf := make([]byte, 0, 96*len(v.recs))
	ends := make([]int, len(v.recs))
	for i, r := range v.recs {
		buf = describe(buf, r)
		ends[i] = len(buf)
	}
	// buf is never written again, so the string may share its bytes,
	// as strings.Builder does; it saves a copy of every sentence.
	var text string
	if len(buf) > 0 {
		text = unsafe.String(&buf[0], len(buf))
	}
	evs := make([]string, len(v.recs))
	start := 0
	for i, r := range v.recs {
		si := r.side
		evs[i] = r.id
		facts[si] = append(facts[si], Fact{Text: text[start:ends[i]], Evidence: evs[i : i+1 : i+1]})
		start = ends[i]
	}
	for _, h := range ctx.Alive {
		if h.At.After(v.asOf) {
			continue
		}
		i := sideIndex(h.System)
		facts[i] = append(facts[i], Fact{
			Text:     "process " + strconv.Quote(h.Component) + " is alive: last heartbeat " + fmtTime(h.At) + " (alive is not the same as having handled this batch)",
			Evidence: []string{h.EventID},
		})
	}
	if p := ctx.Previous; p.Checked {
		text := "previous batch " + p.Key.String()
		switch {
		case p.Delivered:
			text += " was delivered normally"
		case p.Seen:
			text += " is not delivered either (verdict " + p.Verdict + ")"
		default:
			text += " has no events at all"
		}
		i := sideIndex(model.Consumer)
		facts[i] = append(facts[i], Fact{Text: text, Evidence: noIDs})
	}
	absent := func(sys model.System, b model.Boundary, text string) {
		if v.c.Requires(b) && len(v.proven[b]) == 0 {
			i := sideIndex(sys)
			facts[i] = append(facts[i], Fact{Text: text, Evidence: noIDs})
		}
	}
	absent(model.Producer, model.Produced, "no job SUCCESS recorded")
	absent(model.Producer, model.Finalized, "no final artifact recorded (final name in place, temporary file gone)")
	signal := "the completion signal"
	if v.hasSignal && (len(v.proven[model.Signaled]) == 0 || len(v.proven[model.SignalDelivered]) == 0) {
		signal += " " + strconv.Quote(v.wantSignal)
	}
	absent(model.Producer, model.Signaled, signal+" was not published at the source")
	absent(model.Exchange, model.Transferred, "the data file is not recorded at the receiver")
	absent(model.Exchange, model.SignalDelivered, signal+" does not exist on the receiving side: the consumer's trigger condition is not met")
	absent(model.Consumer, model.Identified, "the receiver has not identified this batch by business_date + batch_id")
	if len(v.proven[model.Consumed]) == 0 && v.c.Requires(model.Consumed) {
		text := "no consume attempt recorded for this batch, and no failure record: that is an absence of evidence, not proof that the consumer is fine"
		if len(v.of(model.ConsumeStarted)) > 0 || len(v.of(model.ConsumeFailed)) > 0 {
			text = "no successful consumption recorded for this batch"
		}
		i := sideIndex(model.Consumer)
		facts[i] = append(facts[i], Fact{Text: text, Evidence: noIDs})
	}
	d.Sides = make([]Side, 0, len(sideOrder))
	for i, sys := range sideOrder {
		if len(facts[i]) > 0 {
			d.Sides = append(d.Sides, Side{System: string(sys), Facts: facts[i]})
		}
	}
}

func sideIndex(s model.System) int {
	for i, o := range sideOrder {
		if o == s {
			return i
		}
	}
	return len(sideOrder) - 1
}

// describe appends one sentence saying what an event shows.
func describe(b []byte, r *record) []byte {
	b = appendTime(b, r.at())
	b = append(b, ' ')
	switch r.typ() {
	case model.JobStarted:
		b = append(b, "job started"...)
	case model.JobSucceeded:
		b = append(b, "job reported SUCCESS"...)
	case model.JobFailed:
		b = append(b, "job failed: "...)
		b = append(b, r.err...)
	case model.ArtifactStaged:
		b = append(b, "temporary file "...)
		b = appendQuote(b, r.object)
		b = append(b, " written"...)
	case model.ArtifactFinalized:
		b = append(b, "final file "...)
		b = appendQuote(b, r.object)
		b = append(b, " in place"...)
	case model.SignalPublished:
		b = append(b, "completion signal "...)
		b = appendQuote(b, r.object)
		b = append(b, " published at the source"...)
	case model.ArtifactTransferred:
		b = append(b, "data file "...)
		b = appendQuote(b, r.object)
		b = append(b, " present and readable at the receiver"...)
	case model.SignalTransferred:
		b = append(b, "completion signal "...)
		b = appendQuote(b, r.object)
		b = append(b, " delivered to the receiver"...)
	case model.SignalRestored:
		b = append(b, "completion signal "...)
		b = appendQuote(b, r.object)
		b = append(b, " restored"...)
	case model.BatchIdentified:
		b = append(b, "receiver identified the batch by business_date + batch_id"...)
	case model.ConsumeStarted:
		b = append(b, "consume attempt started"...)
	case model.ConsumeSucceeded:
		b = append(b, "consumed the batch"...)
	case model.ConsumeFailed:
		b = append(b, "consume failed: "...)
		b = append(b, r.err...)
	default:
		b = append(b, r.typ()...)
	}
	open := false
	sep := func() {
		if open {
			b = append(b, ", "...)
		} else {
			b = append(b, " ("...)
			open = true
		}
	}
	if r.hasRows {
		sep()
		b = strconv.AppendInt(b, r.rows, 10)
		b = append(b, " rows"...)
	}
	if r.hasBytes {
		sep()
		b = strconv.AppendInt(b, r.bytes, 10)
		b = append(b, " bytes"...)
	}
	if r.checksum != "" {
		sep()
		b = append(b, r.checksum...)
	}
	if r.component != "" {
		sep()
		b = append(b, "by "...)
		b = append(b, r.component...)
	}
	if r.hasAttempt {
		sep()
		b = append(b, "attempt "...)
		b = strconv.AppendInt(b, r.attempt, 10)
	}
	if open {
		b = append(b, ')')
	}
	return b
}

// appendQuote is strconv.AppendQuote with a fast path for the plain ASCII
// names that object names nearly always are.
func appendQuote(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' {
			return strconv.AppendQuote(b, s)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}
