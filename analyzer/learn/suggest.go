package learn

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/handoff-dev/handoff/model"
)

// requiredShare is the share of a pipeline's delivered batches that must
// prove a boundary for it to be required: every one, but for the odd
// batch a hand fixed (named in the comment).
const requiredShare = 0.97

// Suggestion is the contract suggested for one pipeline: its YAML, which
// model/contract.Parse accepts as it is, and what was learned, field by
// field. An empty field was not learned; Notes say why.
type Suggestion struct {
	Pipeline    string
	Batches     int
	First, Last model.Date
	Schedule    string
	Zone        *time.Location
	Holidays    []model.Date
	BatchID     string
	Artifact    string
	Signal      string
	Required    model.BoundarySet
	// Deadlines holds the deadline text of each required boundary learned.
	Deadlines [model.Consumed + 1]string
	// Notes are the lines the history did not support, and why.
	Notes []string
	// YAML is the contract file, evidence as comments.
	YAML []byte
}

// Suggest returns a suggestion for every pipeline seen, by pipeline name.
func (l *Learner) Suggest(o Options) []Suggestion {
	o = o.withDefaults()
	names := l.Pipelines()
	work := make([]*pipeWork, len(names))
	for i, n := range names {
		work[i] = l.pipes[n].learnOwn(o)
	}
	learnHolidays(work)
	out := make([]Suggestion, len(work))
	for i, w := range work {
		w.learnTimes(o)
		out[i] = w.suggestion()
	}
	return out
}

// pipeWork is one pipeline on its way to a suggestion.
type pipeWork struct {
	p       *pipe
	batches []*batch
	y       yamlDoc
	s       Suggestion

	id       idTemplate
	idOK     bool
	timed    bool
	sched    schedLearned
	schedOK  bool
	shared   []model.Date // gaps other pipelines share (holiday candidates)
	holidays map[model.Date]bool
}

// learnOwn learns what a pipeline's own batches say: batch id, schedule,
// names and the required boundaries.
func (p *pipe) learnOwn(o Options) *pipeWork {
	w := &pipeWork{p: p, batches: p.sortedBatches()}
	w.s.Pipeline, w.s.Batches = p.name, len(w.batches)
	w.id, w.idOK = learnBatchID(w.batches)
	w.timed = w.idOK && w.id.hasHH
	w.sched = learnSchedule(w.batches, w.id, w.timed)
	w.s.First, w.s.Last = w.sched.first, w.sched.last
	span := w.sched.last.DaysSinceEpoch() - w.sched.first.DaysSinceEpoch() + 1
	switch {
	case span < o.MinDates:
		w.note("schedule", "%d business dates (%s to %s): too few batches to tell a schedule (need %d)", span, w.sched.first, w.sched.last, o.MinDates)
	case len(w.sched.present) < o.MinBatches:
		w.note("schedule", "batches on %d dates only: too few batches to tell a schedule (need %d)", len(w.sched.present), o.MinBatches)
	case w.sched.expr == "":
		w.note("schedule", "the firing times %s are not one cron expression", slotList(w.sched.slots))
	default:
		w.schedOK = true
		w.s.Schedule = w.sched.expr
	}
	return w
}

// slotList writes slots for a comment.
func slotList(slots []int) string {
	var parts []string
	for _, s := range slots {
		parts = append(parts, slotText(s))
	}
	return strings.Join(parts, ", ")
}

func (w *pipeWork) note(field, format string, args ...any) {
	w.s.Notes = append(w.s.Notes, field+": "+fmt.Sprintf(format, args...))
}

// learnHolidays finds the dates the pipelines' schedules expect and no
// batch came, which enough other pipelines with the same gaps also
// skipped: a calendar's holidays, not a batch that went missing
// (docs/learned.md, Holidays).
func learnHolidays(work []*pipeWork) {
	gapCount := map[model.Date]int{}
	var first, last model.Date
	for _, w := range work {
		if !w.schedOK {
			continue
		}
		for _, d := range w.sched.gaps {
			gapCount[d]++
		}
		if first.IsZero() || w.sched.first.Compare(first) < 0 {
			first = w.sched.first
		}
		if last.IsZero() || w.sched.last.Compare(last) > 0 {
			last = w.sched.last
		}
	}
	if first.IsZero() {
		return
	}
	var counts []int
	for d := first; d.Compare(last) <= 0; d = d.AddDays(1) {
		counts = append(counts, gapCount[d])
	}
	sort.Ints(counts)
	threshold := max(3, 3*counts[len(counts)/2]+3)
	cand := make([]map[model.Date]bool, len(work))
	for i, w := range work {
		cand[i] = map[model.Date]bool{}
		if !w.schedOK {
			continue
		}
		for _, d := range w.sched.gaps {
			if gapCount[d] >= threshold {
				cand[i][d] = true
			}
		}
	}
	for i, w := range work {
		w.holidays = map[model.Date]bool{}
		for d := range cand[i] {
			agree, disagree := 0, 0
			for j := range work {
				if j == i || !cand[j][d] {
					continue
				}
				if agrees(work[i], cand[i], work[j], cand[j]) {
					agree++
				} else {
					disagree++
				}
			}
			if agree >= threshold-1 && agree >= disagree {
				w.holidays[d] = true
			}
		}
	}
}

// agrees reports whether two pipelines skipped the same shared gaps: of
// the dates either skipped that both schedules expect, more than half
// both skipped. A pipeline that merely missed one of another calendar's
// holidays delivered on that calendar's other holidays, so it does not.
func agrees(a *pipeWork, ca map[model.Date]bool, b *pipeWork, cb map[model.Date]bool) bool {
	both, either := 0, 0
	seen := map[model.Date]bool{}
	for _, m := range []map[model.Date]bool{ca, cb} {
		for d := range m {
			if seen[d] || !a.expects(d) || !b.expects(d) {
				continue
			}
			seen[d] = true
			either++
			if ca[d] && cb[d] {
				both++
			}
		}
	}
	return 2*both > either
}

// expects reports whether the learned schedule expects a batch on d,
// within the history's range.
func (w *pipeWork) expects(d model.Date) bool {
	return w.schedOK && w.sched.fires(d) && d.Compare(w.sched.first) >= 0 && d.Compare(w.sched.last) <= 0
}

// learnTimes learns the time zone and the deadlines, then writes the
// suggestion.
func (w *pipeWork) learnTimes(o Options) {
	w.header(o)
	w.scheduleLines()
	zone := time.UTC
	var firsts []batchAt
	for _, b := range w.batches {
		if ms, ok := b.firstProof(); ok {
			if slot, ok := w.slotOf(b); ok {
				firsts = append(firsts, batchAt{key: b.key, slot: slot, ms: ms})
			}
		}
	}
	switch {
	case !w.schedOK:
		w.note("timezone", "no schedule was learned, so arrival times have no regular anchor")
	case len(firsts) < o.MinDates:
		w.note("timezone", "%d batches with a proven boundary: too few batches to tell a time zone (need %d)", len(firsts), o.MinDates)
	default:
		best, fits := chooseZone(firsts, w.timed, o.Zones)
		zone = best.loc
		w.s.Zone = zone
		w.y.comment("timezone: first arrivals of %d batches vary least here: %.1f min from their median on average%s", len(firsts), best.dev, zoneOthers(best, fits))
		w.y.line("timezone: " + zone.String())
	}
	w.holidayLines()
	w.templateLines(o)
	w.requiredAndDeadlines(o, zone)
}

// slotOf returns b's time of day under the learned batch id.
func (w *pipeWork) slotOf(b *batch) (int, bool) {
	if !w.timed {
		return 0, true
	}
	return w.id.slot(b.key)
}

func zoneOthers(best zoneFit, fits []zoneFit) string {
	sort.SliceStable(fits, func(i, j int) bool { return fits[i].dev < fits[j].dev })
	var parts []string
	for _, f := range fits {
		if f.loc != best.loc && len(parts) < 2 {
			parts = append(parts, fmt.Sprintf("%s %.1f", f.loc, f.dev))
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return " (next: " + strings.Join(parts, ", ") + ")"
}

func (w *pipeWork) header(o Options) {
	w.y.comment("Suggested by handoff contracts suggest from %d batches with business dates %s to %s.", len(w.batches), w.s.First, w.s.Last)
	w.y.comment("Each line's evidence is the comment above it; docs/learned.md states the rules.")
	w.y.line("pipeline: " + w.p.name)
}

func (w *pipeWork) scheduleLines() {
	if !w.schedOK {
		return
	}
	var days []string
	for wd := range 7 {
		st := w.sched.dayStats[wd]
		mark := ""
		if !w.sched.days[wd] {
			mark = " (not scheduled)"
		}
		days = append(days, fmt.Sprintf("%s %d/%d%s", time.Weekday(wd).String()[:3], st[0], st[1], mark))
	}
	w.y.comment("schedule: dates with a batch, by weekday: %s", strings.Join(days, ", "))
	if w.timed {
		w.y.comment("schedule: firing times (from the batch ids) on most dates: %s", slotList(w.sched.slots))
	} else {
		w.y.comment("schedule: one batch per date; the time of day of a once-a-day firing is not in the ids, so it starts at midnight")
	}
	if len(w.sched.offDays) > 0 {
		w.y.comment("schedule: batches also on %d unscheduled dates: %s", len(w.sched.offDays), dateList(w.sched.offDays))
	}
	w.y.line(fmt.Sprintf("schedule: %q", w.sched.expr))
}

func (w *pipeWork) holidayLines() {
	if !w.schedOK {
		return
	}
	var hol, missing []model.Date
	for _, d := range w.sched.gaps {
		if w.holidays[d] {
			hol = append(hol, d)
		} else {
			missing = append(missing, d)
		}
	}
	if len(missing) > 0 {
		w.y.comment("holidays: no batch on %d scheduled dates other pipelines did deliver (missing, not holidays): %s", len(missing), dateList(missing))
	}
	if len(hol) == 0 {
		w.y.comment("holidays: none (no scheduled date without a batch that other pipelines skipped too)")
		return
	}
	w.s.Holidays = hol
	w.y.comment("holidays: no batch on these scheduled dates, nor in the other pipelines with the same gaps")
	var parts []string
	for _, d := range hol {
		parts = append(parts, d.String())
	}
	w.y.line("holidays: [" + strings.Join(parts, ", ") + "]")
}

// dateList writes at most six dates for a comment.
func dateList(ds []model.Date) string {
	var parts []string
	for i, d := range ds {
		if i == 6 {
			parts = append(parts, fmt.Sprintf("and %d more", len(ds)-6))
			break
		}
		parts = append(parts, d.String())
	}
	return strings.Join(parts, ", ")
}

func keyList(ks []model.BatchKey) string {
	var parts []string
	for i, k := range ks {
		if i == 4 {
			parts = append(parts, fmt.Sprintf("and %d more", len(ks)-4))
			break
		}
		parts = append(parts, k.BusinessDate.String()+"/"+k.BatchID)
	}
	return strings.Join(parts, ", ")
}

func (w *pipeWork) templateLines(o Options) {
	if len(w.batches) < o.MinBatches {
		w.note("batch_id, artifact, signal", "%d batches: too few batches to tell name templates (need %d)", len(w.batches), o.MinBatches)
		return
	}
	switch {
	case !w.idOK:
		w.note("batch_id", "no template fits %d%% of the %d ids (e.g. %s)", int(templateShare*100), len(w.batches), keyList([]model.BatchKey{w.batches[0].key}))
	case w.timed && !w.schedOK:
		w.note("batch_id", "%q names a time of day, which needs a schedule, and none was learned", w.id.text)
	default:
		w.s.BatchID = w.id.text
		w.y.comment("batch_id: %d of %d ids (e.g. %s)%s", w.id.matched, len(w.batches), w.batches[len(w.batches)-1].key.BatchID, exceptions(w.id.exceptions))
		w.y.line(fmt.Sprintf("batch_id: %q", w.id.text))
	}
	art, okA := learnName(w.batches, func(b *batch) string { return b.artifact })
	sig, okS := learnName(w.batches, func(b *batch) string { return b.signal })
	if okS && okA && art.text == sig.text {
		okS = false
	}
	for _, n := range []struct {
		key string
		nl  nameLearned
		ok  bool
		to  *string
	}{{"artifact", art, okA, &w.s.Artifact}, {"signal", sig, okS, &w.s.Signal}} {
		switch {
		case n.nl.named == 0:
			w.note(n.key, "no batch named one")
		case !n.ok:
			w.note(n.key, "no template fits %d%% of the %d names", int(templateShare*100), n.nl.named)
		default:
			*n.to = n.nl.text
			w.y.comment("%s: %d of %d batches that named one%s", n.key, n.nl.matched, n.nl.named, exceptions(n.nl.exceptions))
			w.y.line(fmt.Sprintf("%s: %q", n.key, n.nl.text))
		}
	}
}

func exceptions(ks []model.BatchKey) string {
	if len(ks) == 0 {
		return ""
	}
	return "; not: " + keyList(ks)
}

// requiredAndDeadlines learns which boundaries every delivered batch
// proves, and when each usually arrives.
func (w *pipeWork) requiredAndDeadlines(o Options, zone *time.Location) {
	var count [model.Consumed + 1]int
	for _, b := range w.batches {
		for _, bd := range model.Ladder {
			if b.proven[bd] != 0 {
				count[bd]++
			}
		}
	}
	// The top boundary: the last one most batches reach. Batches that
	// reach it are the delivered ones.
	top := model.NoBoundary
	for _, bd := range model.Ladder {
		if 2*count[bd] >= len(w.batches) && count[bd] > 0 {
			top = bd
		}
	}
	var delivered []*batch
	for _, b := range w.batches {
		if top != model.NoBoundary && b.proven[top] != 0 {
			delivered = append(delivered, b)
		}
	}
	if len(delivered) < o.MinBatches {
		w.note("required", "%d delivered batches: too few batches to tell the required boundaries (need %d)", len(delivered), o.MinBatches)
		w.note("deadlines", "no required boundaries were learned")
		return
	}
	var req model.BoundarySet
	var ev, not []string
	for _, bd := range model.Ladder {
		n := 0
		for _, b := range delivered {
			if b.proven[bd] != 0 {
				n++
			}
		}
		if n > 0 && float64(n) >= requiredShare*float64(len(delivered)) {
			req = req.With(bd)
			ev = append(ev, fmt.Sprintf("%s %d", bd, n))
		} else {
			not = append(not, fmt.Sprintf("%s %d", bd, n))
		}
	}
	w.s.Required = req
	w.y.comment("required: of %d delivered batches (those that reached %s), proven by: %s", len(delivered), top, strings.Join(ev, ", "))
	if len(not) > 0 {
		w.y.comment("required: left out, proven by too few of them: %s", strings.Join(not, ", "))
	}
	var names []string
	for _, bd := range req.List() {
		names = append(names, bd.String())
	}
	w.y.line("required: [" + strings.Join(names, ", ") + "]")
	w.deadlineLines(o, zone, req)
}

func (w *pipeWork) deadlineLines(o Options, zone *time.Location, req model.BoundarySet) {
	if !w.schedOK {
		w.note("deadlines", "no schedule was learned, so arrivals have no regular anchor")
		return
	}
	var lines []string
	for _, bd := range req.List() {
		var arr []arrival
		for _, b := range w.batches {
			slot, ok := w.slotOf(b)
			if ms := b.proven[bd]; ms != 0 && ok && !w.holidays[b.key.BusinessDate] {
				arr = append(arr, arrival{minutes: offset(ms, b.key, slot, w.timed, zone), date: b.key.BusinessDate})
			}
		}
		dl := learnDeadline(bd, arr, w.timed, o.MinDates)
		if !dl.ok {
			w.note("deadlines."+bd.String(), "%s", dl.why)
			continue
		}
		w.s.Deadlines[bd] = dl.text
		late := ""
		if len(dl.late) > 0 {
			late = fmt.Sprintf("; %d late, left out: %s", len(dl.late), dateList(dl.late))
		}
		lines = append(lines, fmt.Sprintf("  # %d arrivals: median %s, p95 %s; deadline p95 + %s%s",
			dl.n, offText(dl.p50, w.timed), offText(dl.p95, w.timed), durText(int(max(marginMin.Minutes(), dl.p95-dl.p50)+0.5)), late),
			fmt.Sprintf("  %s: %q", bd, dl.text))
	}
	if len(lines) == 0 {
		return
	}
	w.y.line("deadlines:")
	for _, l := range lines {
		w.y.line(l)
	}
}

// suggestion finishes the YAML: the notes go at its end, as comments.
func (w *pipeWork) suggestion() Suggestion {
	for _, n := range w.s.Notes {
		w.y.comment("not learned: %s", n)
	}
	w.s.YAML = []byte(w.y.b.String())
	return w.s
}

// yamlDoc writes a contract file line by line.
type yamlDoc struct{ b strings.Builder }

func (y *yamlDoc) comment(format string, args ...any) {
	text := fmt.Sprintf(format, args...)
	text = strings.ReplaceAll(text, "\n", " ")
	y.b.WriteString("# " + text + "\n")
}

func (y *yamlDoc) line(s string) { y.b.WriteString(s + "\n") }
