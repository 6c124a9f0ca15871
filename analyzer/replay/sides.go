package replay

import (
	"strconv"

	"github.com/handoff-dev/handoff/model"
)

var sideOrder = [...]model.System{model.Producer, model.Exchange, model.Consumer, model.Operator}

// sides fills d.Sides: what each system shows, in time order, then what it
// does not show. Absences are stated as absences, never as health.
func (v *view) sides(d *Diagnosis, ctx Context) {
	var facts [len(sideOrder)][]Fact
	for _, r := range v.recs {
		i := sideIndex(r.system)
		facts[i] = append(facts[i], Fact{Text: describe(r), Evidence: []string{r.id}})
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
		facts[i] = append(facts[i], Fact{Text: text, Evidence: []string{}})
	}
	absent := func(sys model.System, b model.Boundary, text string) {
		if v.c.Requires(b) && len(v.proven[b]) == 0 {
			i := sideIndex(sys)
			facts[i] = append(facts[i], Fact{Text: text, Evidence: []string{}})
		}
	}
	absent(model.Producer, model.Produced, "no job SUCCESS recorded")
	absent(model.Producer, model.Finalized, "no final artifact recorded (final name in place, temporary file gone)")
	signal := "the completion signal"
	if n, ok := v.c.SignalName(v.key); ok {
		signal += " " + strconv.Quote(n)
	}
	absent(model.Producer, model.Signaled, signal+" was not published at the source")
	absent(model.Exchange, model.Transferred, "the data file is not recorded at the receiver")
	absent(model.Exchange, model.SignalDelivered, signal+" does not exist on the receiving side: the consumer's trigger condition is not met")
	absent(model.Consumer, model.Identified, "the receiver has not identified this batch by business_date + batch_id")
	if len(v.proven[model.Consumed]) == 0 && v.c.Requires(model.Consumed) {
		text := "no consume attempt recorded for this batch, and no failure record"
		if len(v.of(model.ConsumeStarted)) > 0 || len(v.of(model.ConsumeFailed)) > 0 {
			text = "no successful consumption recorded for this batch"
		} else {
			text += ": that is an absence of evidence, not proof that the consumer is fine"
		}
		i := sideIndex(model.Consumer)
		facts[i] = append(facts[i], Fact{Text: text, Evidence: []string{}})
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

// describe says in one sentence what an event shows.
func describe(r *record) string {
	b := make([]byte, 0, 96)
	b = r.at().AppendFormat(b, model.TimeLayout)
	b = append(b, ' ')
	obj := strconv.Quote(r.object)
	switch r.typ {
	case model.JobStarted:
		b = append(b, "job started"...)
	case model.JobSucceeded:
		b = append(b, "job reported SUCCESS"...)
	case model.JobFailed:
		b = append(b, "job failed: "...)
		b = append(b, r.err...)
	case model.ArtifactStaged:
		b = append(b, "temporary file "+obj+" written"...)
	case model.ArtifactFinalized:
		b = append(b, "final file "+obj+" in place"...)
	case model.SignalPublished:
		b = append(b, "completion signal "+obj+" published at the source"...)
	case model.ArtifactTransferred:
		b = append(b, "data file "+obj+" present and readable at the receiver"...)
	case model.SignalTransferred:
		b = append(b, "completion signal "+obj+" delivered to the receiver"...)
	case model.SignalRestored:
		b = append(b, "completion signal "+obj+" restored"...)
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
		b = append(b, r.typ...)
	}
	sep := byte('(')
	detail := func(s string) {
		b = append(b, ' ')
		if sep == ',' {
			b = b[:len(b)-1]
			b = append(b, ", "...)
		} else {
			b = append(b, sep)
		}
		b = append(b, s...)
		sep = ','
	}
	if r.hasRows {
		detail(strconv.FormatInt(r.rows, 10) + " rows")
	}
	if r.hasBytes {
		detail(strconv.FormatInt(r.bytes, 10) + " bytes")
	}
	if r.checksum != "" {
		detail(r.checksum)
	}
	if r.component != "" {
		detail("by " + r.component)
	}
	if r.hasAttempt {
		detail("attempt " + strconv.FormatInt(r.attempt, 10))
	}
	if sep == ',' {
		b = append(b, ')')
	}
	return string(b)
}
