package replay

import (
	"strconv"
	"strings"
	"unsafe"

	"github.com/handoff-dev/handoff/model"
)

var sideOrder = [...]model.System{model.Producer, model.Exchange, model.Consumer, model.Operator}

// context fills the structured evidence of d: the timeline, the names that
// derive from the identity, the previous batch and the live processes.
// The narrative is not built here (see Narrate): diagnose evaluates every
// batch and prints few reports, and a streaming caller would evaluate far
// more often than anyone reads one.
func (v *view) context(d *Diagnosis, ctx Context) {
	if d.Timeline != nil && cap(d.Timeline) >= len(v.recs) {
		d.Timeline = d.Timeline[:len(v.recs)]
	} else {
		d.Timeline = make([]Entry, len(v.recs))
	}
	for i, r := range v.recs {
		// Field by field, every field: a composite literal would be built
		// aside and copied in with a bulk write barrier, which costs more
		// than the entry itself while the collector marks.
		e := &d.Timeline[i]
		e.EventID, e.Type, e.Time, e.System = v.id(r), r.typ(), r.at(), sideOrder[r.side]
		e.Component, e.Object, e.Checksum, e.Error = v.component(r), v.object(r), v.checksum(r), v.errText(r)
		e.Rows, e.Bytes, e.Attempt = r.rows, r.bytes, r.attempt
		e.HasRows, e.HasBytes, e.HasAttempt = r.hasRows(), r.hasBytes(), r.hasAttempt()
	}
	d.Expected = Expected{BatchID: v.wantBatchID, Artifact: v.wantArtifact, Signal: v.wantSignal}
	if p := ctx.Previous; p.Checked {
		prev := &PreviousBatch{}
		if v.sc != nil {
			// The Evaluator's own, as its slices are: a backfill gives
			// nearly every batch a previous one.
			prev = &v.sc.prev
		}
		*prev = PreviousBatch{Batch: v.sc.key(p.Key), Seen: p.Seen, Delivered: p.Delivered, Verdict: p.Verdict}
		d.Previous = prev
	}
	if a := ctx.Attempt; !a.Of.IsZero() {
		_, n, _ := v.c.AttemptOf(v.key)
		info := &AttemptInfo{Of: a.Of.String(), Rerun: n, Attempts: make([]string, len(a.Seen))}
		for i, k := range a.Seen {
			info.Attempts[i] = k.String()
		}
		if !a.SupersededBy.IsZero() {
			info.SupersededBy = a.SupersededBy.String()
		}
		d.Attempt = info
	}
	d.Alive = noHeartbeats
	for _, h := range ctx.Alive {
		if !h.At.After(v.asOf) {
			if len(d.Alive) == 0 {
				switch {
				case v.sc != nil && cap(v.sc.alive) >= len(ctx.Alive):
					d.Alive = v.sc.alive[:0]
				default:
					d.Alive = make([]Heartbeat, 0, len(ctx.Alive))
					if v.sc != nil {
						v.sc.alive = d.Alive
					}
				}
			}
			d.Alive = append(d.Alive, h)
		}
	}
}

var noHeartbeats = []Heartbeat{}

// Narrate tells a diagnosis' evidence per side (producer, exchange,
// consumer, operator), as the report prints it: what each side shows, in
// time order, then what it does not show. Absences are stated as absences,
// never as health. It reads only d, so a diagnosis read back from storage
// narrates the same as a fresh one.
func Narrate(d *Diagnosis) []Side {
	var facts [len(sideOrder)][]Fact
	buf := make([]byte, 0, 96*len(d.Timeline))
	for i := range d.Timeline {
		e := &d.Timeline[i]
		start := len(buf)
		buf = describe(buf, e)
		// Each sentence is a string over buf's bytes, which are never
		// written again (a growing buf copies, it does not overwrite).
		text := unsafe.String(&buf[start], len(buf)-start)
		si := sideIndex(e.System)
		facts[si] = append(facts[si], Fact{Text: text, Evidence: []string{e.EventID}})
	}
	for _, h := range d.Alive {
		i := sideIndex(h.System)
		facts[i] = append(facts[i], Fact{
			Text:     "process " + strconv.Quote(h.Component) + " is alive: last heartbeat " + fmtTime(h.At) + " (alive is not the same as having handled this batch)",
			Evidence: []string{h.EventID},
		})
	}
	if p := d.Previous; p != nil {
		text := "previous batch " + p.Batch
		switch {
		case p.Delivered:
			text += " was delivered normally"
		case p.Seen:
			text += " is not delivered either (verdict " + p.Verdict.String() + ")"
		default:
			text += " has no events at all"
		}
		i := sideIndex(model.Consumer)
		facts[i] = append(facts[i], Fact{Text: text, Evidence: []string{}})
	}
	state := func(b model.Boundary) (required, proven bool) {
		if i := int(b) - 1; i >= 0 && i < len(d.Boundaries) {
			return d.Boundaries[i].Required, d.Boundaries[i].Proven
		}
		return false, false
	}
	absent := func(sys model.System, b model.Boundary, text string) {
		if req, proven := state(b); req && !proven {
			i := sideIndex(sys)
			facts[i] = append(facts[i], Fact{Text: text, Evidence: []string{}})
		}
	}
	absent(model.Producer, model.Produced, "no job SUCCESS recorded")
	absent(model.Producer, model.Finalized, "no final artifact recorded (final name in place, temporary file gone)")
	signal := "the completion signal"
	_, signaled := state(model.Signaled)
	_, delivered := state(model.SignalDelivered)
	if d.Expected.Signal != "" && (!signaled || !delivered) {
		signal += " " + strconv.Quote(d.Expected.Signal)
	}
	absent(model.Producer, model.Signaled, signal+" was not published at the source")
	absent(model.Exchange, model.Transferred, "the data file is not recorded at the receiver")
	absent(model.Exchange, model.SignalDelivered, signal+" does not exist on the receiving side: the consumer's trigger condition is not met")
	absent(model.Consumer, model.Identified, "the receiver has not identified this batch by business_date + batch_id")
	if req, proven := state(model.Consumed); req && !proven {
		text := "no consume attempt recorded for this batch, and no failure record: that is an absence of evidence, not proof that the consumer is fine"
		for _, e := range d.Timeline {
			if e.Type == model.ConsumeStarted || e.Type == model.ConsumeFailed {
				text = "no successful consumption recorded for this batch"
				break
			}
		}
		i := sideIndex(model.Consumer)
		facts[i] = append(facts[i], Fact{Text: text, Evidence: []string{}})
	}
	sides := make([]Side, 0, len(sideOrder))
	for i, sys := range sideOrder {
		if len(facts[i]) > 0 {
			sides = append(sides, Side{System: string(sys), Facts: facts[i]})
		}
	}
	return sides
}

// sideIndex returns the index of s in sideOrder; an unknown system counts
// as the operator's. Step calls it for every event: the first byte picks
// the one candidate to compare.
func sideIndex(s model.System) int {
	i := len(sideOrder) - 1
	if s != "" {
		switch s[0] {
		case 'p':
			i = 0
		case 'e':
			i = 1
		case 'c':
			i = 2
		}
	}
	// The system is mostly the constant itself: the same bytes, no
	// compare.
	if w := sideOrder[i]; (len(w) != len(s) || unsafe.StringData(string(w)) != unsafe.StringData(string(s))) && w != s {
		return len(sideOrder) - 1
	}
	return i
}

// describe appends one sentence saying what an event shows.
func describe(b []byte, r *Entry) []byte {
	b = model.AppendTime(b, r.Time)
	b = append(b, ' ')
	switch r.Type {
	case model.JobStarted:
		b = append(b, "job started"...)
	case model.JobSucceeded:
		b = append(b, "job reported SUCCESS"...)
	case model.JobFailed:
		b = append(b, "job failed: "...)
		b = append(b, r.Error...)
	case model.ArtifactStaged:
		b = append(b, "temporary file "...)
		b = appendQuote(b, r.Object)
		b = append(b, " written"...)
	case model.ArtifactFinalized:
		b = append(b, "final file "...)
		b = appendQuote(b, r.Object)
		b = append(b, " in place"...)
	case model.SignalPublished:
		b = append(b, "completion signal "...)
		b = appendQuote(b, r.Object)
		b = append(b, " published at the source"...)
	case model.ArtifactTransferred:
		b = append(b, "data file "...)
		b = appendQuote(b, r.Object)
		b = append(b, " present and readable at the receiver"...)
	case model.SignalTransferred:
		b = append(b, "completion signal "...)
		b = appendQuote(b, r.Object)
		b = append(b, " delivered to the receiver"...)
	case model.SignalRestored:
		b = append(b, "completion signal "...)
		b = appendQuote(b, r.Object)
		b = append(b, " restored"...)
	case model.BatchIdentified:
		b = append(b, "receiver identified the batch by business_date + batch_id"...)
	case model.ConsumeStarted:
		b = append(b, "consume attempt started"...)
	case model.ConsumeSucceeded:
		b = append(b, "consumed the batch"...)
	case model.ConsumeFailed:
		b = append(b, "consume failed: "...)
		b = append(b, r.Error...)
	default:
		b = append(b, r.Type...)
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
	if r.HasRows {
		sep()
		b = strconv.AppendInt(b, r.Rows, 10)
		b = append(b, " rows"...)
	}
	if r.HasBytes {
		sep()
		b = strconv.AppendInt(b, r.Bytes, 10)
		b = append(b, " bytes"...)
	}
	if r.Checksum != "" {
		sep()
		b = appendShortChecksum(b, r.Checksum)
	}
	if r.Component != "" {
		sep()
		b = append(b, "by "...)
		b = append(b, r.Component...)
	}
	if r.HasAttempt {
		sep()
		b = append(b, "attempt "...)
		b = strconv.AppendInt(b, r.Attempt, 10)
	}
	if open {
		b = append(b, ')')
	}
	return b
}

// appendShortChecksum appends a checksum as a person compares it at a
// glance: "sha256:" and the first 12 hex digits, "..." for the rest. The
// whole value stays in the timeline and the JSON; in a sentence 64 digits
// only push the words that matter onto the next line.
func appendShortChecksum(b []byte, sum string) []byte {
	const keep = 12
	algo, digits, ok := strings.Cut(sum, ":")
	if !ok {
		algo, digits = "", sum
	}
	if len(digits) <= keep+4 {
		return append(b, sum...)
	}
	if ok {
		b = append(b, algo...)
		b = append(b, ':')
	}
	b = append(b, digits[:keep]...)
	return append(b, "..."...)
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
