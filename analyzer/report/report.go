// Package report renders diagnoses for people and for machines.
//
// Text tells one batch's story in the order of the seed case
// (docs/seed-case.md, docs/diagnosis.md): the symptom, the chain of
// boundaries, the evidence of each side, the hypotheses, the anomalies,
// where the delivery stopped, the caveats a reader must not forget, and the
// safe next step. JSON is the
// machine-readable form whose field names docs/diagnosis.md fixes.
//
// Both read only the replay.Diagnosis they are given, so a report is as
// deterministic as the replay behind it: the same diagnosis always renders
// to the same bytes. The package does no I/O beyond the io.Writer passed in.
package report

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/handoff-dev/handoff/analyzer/replay"
	"github.com/handoff-dev/handoff/model"
)

// Width is the column at which Text wraps its lines. Event ids and object
// names are never broken, so a line holding a single very long one may be
// wider.
const Width = 96

// Marks shown in the chain for each boundary. The check marks are the only
// characters of a report outside ASCII; each takes one column.
const (
	markProven      = "✓"
	markMissing     = "✗"
	markNotRequired = "-"
)

// errNil is returned when a nil diagnosis is passed in: rendering nothing
// silently would hide a caller's bug.
var errNil = errors.New("report: nil diagnosis")

// Text writes the human-readable report of one diagnosis to w, its times
// in UTC beside the contract's zone.
func Text(w io.Writer, d *replay.Diagnosis) error { return Options{}.Text(w, d) }

// TextAll writes the report of every diagnosis, each followed by a rule
// line, and then a summary table with one line per batch.
func TextAll(w io.Writer, ds []replay.Diagnosis) error { return Options{}.TextAll(w, ds) }

// Options change how Text and TextAll write a report.
type Options struct {
	// Zone, when not nil, is the zone shown beside UTC instead of each
	// diagnosis's contract zone: the reader's own, for example.
	Zone *time.Location
}

// Text is the package's Text with the options o.
func (o Options) Text(w io.Writer, d *replay.Diagnosis) error {
	if d == nil {
		return errNil
	}
	p := printer{zone: o.Zone}
	p.diagnosis(d)
	// Events' text (errors, components, objects) reaches terminals.
	_, err := io.WriteString(w, model.EscapeText(p.b.String()))
	return err
}

// TextAll is the package's TextAll with the options o.
func (o Options) TextAll(w io.Writer, ds []replay.Diagnosis) error {
	p := printer{zone: o.Zone}
	for i := range ds {
		p.diagnosis(&ds[i])
		p.blank()
		p.line(strings.Repeat("=", Width))
		p.blank()
	}
	p.summary(ds)
	_, err := io.WriteString(w, model.EscapeText(p.b.String()))
	return err
}

// JSON writes the diagnoses as one JSON array with one compact diagnosis
// per line: valid JSON for any parser, and a stream that line tools (grep,
// head, jq -c) can cut, for outputs of tens of thousands of batches. An
// empty or nil slice is written as [], never null.
func JSON(w io.Writer, ds []replay.Diagnosis) error {
	if len(ds) == 0 {
		_, err := io.WriteString(w, "[]\n")
		return err
	}
	bw := bufio.NewWriterSize(w, 256<<10)
	buf := make([]byte, 0, 8<<10)
	bw.WriteString("[\n")
	for i := range ds {
		buf = buf[:0]
		if i > 0 {
			buf = append(buf, ",\n"...)
		}
		buf = ds[i].AppendJSON(buf)
		if _, err := bw.Write(buf); err != nil {
			return err
		}
	}
	bw.WriteString("\n]\n")
	return bw.Flush()
}

// JSONOne writes one diagnosis as a JSON object indented by two spaces,
// followed by a newline: the form for a person reading one batch.
func JSONOne(w io.Writer, d *replay.Diagnosis) error {
	if d == nil {
		return errNil
	}
	var out bytes.Buffer
	if err := json.Indent(&out, d.AppendJSON(nil), "", "  "); err != nil {
		return err
	}
	out.WriteByte('\n')
	_, err := w.Write(out.Bytes())
	return err
}

// printer accumulates a report. Writing to a strings.Builder cannot fail,
// so the only error of a report is the final write to the caller's writer.
type printer struct {
	b strings.Builder
	// zone overrides the diagnoses' own zones when not nil; loc is the
	// zone of the diagnosis being written.
	zone, loc *time.Location
}

// human writes t for a reader: UTC and the zone of the diagnosis.
func (p *printer) human(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return model.HumanTime(t, p.loc)
}

func (p *printer) line(s string) {
	p.b.WriteString(s)
	p.b.WriteByte('\n')
}

func (p *printer) blank() { p.b.WriteByte('\n') }

// para writes text wrapped at Width: the first line starts with first, the
// following ones with rest (a hanging indent).
func (p *printer) para(first, rest, text string) {
	for _, l := range wrap(first, rest, text, Width) {
		p.line(l)
	}
}

// section writes a section heading.
func (p *printer) section(name string) {
	p.blank()
	p.line(name)
}

func (p *printer) diagnosis(d *replay.Diagnosis) {
	p.loc = d.Zone
	if p.zone != nil {
		p.loc = p.zone
	}
	p.header(d)
	p.symptom(d)
	p.chain(d)
	p.evidence(d)
	p.hypotheses(d)
	p.anomalies(d)
	p.located(d)
	p.caveats(d)
	p.nextStep(d)
}

func (p *printer) header(d *replay.Diagnosis) {
	p.line("BATCH " + d.Batch)
	info := "as of " + p.human(d.AsOf) + "; contract " + d.Contract + "; " + plural(d.Events, "event")
	if d.Events > 0 {
		info += ", " + fmtTime(d.FirstEventAt) + " to " + fmtTime(d.LastEventAt)
	}
	p.para("  ", "  ", info)
}

// symptom states the status and verdict first, and then the seed case's
// point: a job's SUCCESS is not a delivery's SUCCESS.
func (p *printer) symptom(d *replay.Diagnosis) {
	p.section("SYMPTOM")
	s := "batch " + d.Batch + ": status " + strings.ToUpper(string(d.Status)) + " -- verdict " + d.Verdict.String() + "; "
	produced := proven(d, model.Produced)
	switch {
	case d.Delivered() && d.Status == replay.StatusBroken:
		s += "the batch was consumed, but its evidence contradicts itself."
	case d.Delivered():
		s += "every stretch of the delivery chain has evidence, up to consumption."
	case produced && d.Status == replay.StatusFailed:
		s += "the job says SUCCESS, the delivery does not; the latest attempt of the stalled step failed."
	case produced:
		s += "the job says SUCCESS, the delivery does not."
	case d.Status == replay.StatusFailed:
		s += "the job has not reported SUCCESS; its latest attempt failed."
	default:
		s += "the job has not reported SUCCESS."
	}
	p.para("  ", "  ", s)
	if c := d.Blocked.Cause(); c != "" {
		// The cause upstream, in the words of the alert: the batch's own
		// verdict, then what it waits for.
		p.para("  ", "  ", d.Verdict.String()+": "+c+".")
	}
	if bs, ok := boundary(d, d.FirstMissing); ok {
		t := "First missing boundary: " + bs.Name
		if !bs.Due.IsZero() {
			t += ", due " + p.human(bs.Due)
			if bs.Overdue {
				t += ", overdue by " + replay.FormatDuration(d.AsOf.Sub(bs.Due))
			} else {
				t += ", not yet due"
			}
		}
		p.para("  ", "  ", t+".")
	} else {
		p.para("  ", "  ", "Every boundary the contract requires is proven.")
	}
	p.baseline(d)
	if a := d.Attempt; a != nil {
		t := "Attempt: the scheduled batch " + a.Of
		if a.Rerun > 0 {
			t = "Attempt: re-run " + strconv.Itoa(a.Rerun) + " of " + a.Of
		}
		t += "; attempts with events: " + strings.Join(a.Attempts, ", ") + "."
		if a.SupersededBy != "" {
			t += " Superseded by " + a.SupersededBy + ", which speaks for business date " + d.BusinessDate + "."
		} else {
			t += " This attempt speaks for business date " + d.BusinessDate + "."
		}
		p.para("  ", "  ", t)
	}
}

// baseline writes the learned baseline beside the deadline and the
// as-of (BaselineText): "Baseline: produced usually by ...".
func (p *printer) baseline(d *replay.Diagnosis) {
	if t := BaselineText(d, p.loc); t != "" {
		p.para("  ", "  ", "Baseline: "+t+".")
	}
}

// BaselineText says the learned baseline of the lowest required boundary
// of d not yet proven beside its deadline and the as-of: "produced usually
// by ... (p95 over 28 days), deadline ..., now ...", times in UTC with loc
// beside (model.HumanTime); "" when d shows no baseline. A boundary later
// than usual says so: that is the early warning (kind unusual). The text
// report and the batch page of `handoff serve` both show it.
func BaselineText(d *replay.Diagnosis, loc *time.Location) string {
	if d.Baseline == "" {
		return ""
	}
	for _, bs := range d.Boundaries {
		if !bs.Required || bs.Proven || bs.UsuallyBy.IsZero() {
			continue
		}
		t := bs.Name + " usually by " + model.HumanTime(bs.UsuallyBy, loc) + " (" + d.Baseline + ")"
		if !bs.Due.IsZero() {
			t += ", deadline " + model.HumanTime(bs.Due, loc)
		} else {
			t += ", no deadline"
		}
		t += ", now " + model.HumanTime(d.AsOf, loc)
		if d.AsOf.After(bs.UsuallyBy) {
			t += "; later than usual by " + replay.FormatDuration(d.AsOf.Sub(bs.UsuallyBy))
		}
		return t
	}
	return ""
}

func (p *printer) chain(d *replay.Diagnosis) {
	p.section("CHAIN  (" + markProven + " proven, " + markMissing + " missing, " + markNotRequired + " not required by the contract)")
	const nameCol = 16
	for _, bs := range d.Boundaries {
		mark := markMissing
		switch {
		case !bs.Required:
			mark = markNotRequired
		case bs.Proven:
			mark = markProven
		}
		at := "missing"
		if bs.Proven {
			at = p.human(bs.At)
		} else if !bs.Required {
			at = "not required"
		}
		l := "  " + mark + " " + pad(bs.Name, nameCol) + "  " + at
		if bs.Name == d.FirstMissing {
			l += "  <- first missing"
		}
		p.line(strings.TrimRight(l, " "))

		// The deadline opens the notes: with the contract's zone beside
		// UTC, the proof and the deadline do not fit one line.
		var notes []string
		if !bs.Due.IsZero() {
			notes = append(notes, "due "+p.human(bs.Due))
		}
		if !bs.UsuallyBy.IsZero() && !bs.Proven {
			notes = append(notes, "usually by "+p.human(bs.UsuallyBy)+" ("+d.Baseline+")")
		}
		if bs.Overdue {
			if bs.Proven {
				notes = append(notes, "proven "+replay.FormatDuration(bs.At.Sub(bs.Due))+" after its deadline")
			} else {
				notes = append(notes, "overdue by "+replay.FormatDuration(d.AsOf.Sub(bs.Due)))
			}
		}
		if bs.OutOfOrder {
			notes = append(notes, "out of order: proven although "+d.FirstMissing+" below it is missing")
		}
		if bs.Proven && !bs.Required {
			notes = append(notes, "proven, though the contract does not require it")
		}
		if len(bs.Evidence) > 0 {
			notes = append(notes, "evidence "+strings.Join(bs.Evidence, ", "))
		}
		if len(notes) > 0 {
			indent := strings.Repeat(" ", 6)
			p.para(indent, indent, strings.Join(notes, "; "))
		}
	}
}

// sideOrder is the order of the seed case's story, left to right along the
// chain. The operator comes last and is shown only when it acted: no
// operator action is the normal state of a batch, not a finding.
var sideOrder = [...]string{string(model.Producer), string(model.Exchange), string(model.Consumer), string(model.Operator)}

func (p *printer) evidence(d *replay.Diagnosis) {
	p.section("EVIDENCE")
	sides := replay.Narrate(d)
	for _, sys := range sideOrder {
		side := findSide(sides, sys)
		if side == nil && sys == string(model.Operator) {
			continue
		}
		p.line("  " + sys)
		if side == nil || len(side.Facts) == 0 {
			p.line("    - no events recorded from this side")
			continue
		}
		for _, f := range side.Facts {
			p.para("    - ", "      ", f.Text+ids(f.Evidence))
		}
	}
	for _, side := range sides {
		if !knownSide(side.System) {
			// A system outside the four of wire format v1 cannot pass
			// validation, but a report must not drop evidence silently.
			p.line("  " + side.System)
			for _, f := range side.Facts {
				p.para("    - ", "      ", f.Text+ids(f.Evidence))
			}
		}
	}
}

func (p *printer) hypotheses(d *replay.Diagnosis) {
	p.section("HYPOTHESES")
	const nameCol, verdictCol = 16, 11
	indent := strings.Repeat(" ", 2+nameCol+2+verdictCol+2)
	for _, h := range d.Hypotheses {
		first := "  " + pad(h.Name.String(), nameCol) + "  " + pad(string(h.Support), verdictCol) + "  "
		p.para(first, indent, h.Reason+ids(h.Evidence))
	}
	if len(d.Hypotheses) == 0 {
		p.line("  none evaluated")
	}
}

func (p *printer) anomalies(d *replay.Diagnosis) {
	p.section("ANOMALIES")
	if len(d.Anomalies) == 0 {
		p.line("  none")
		return
	}
	for _, a := range d.Anomalies {
		kind := string(a.Kind)
		if a.Kind.Breaks() {
			// Say why the status is broken right where the cause is.
			kind += " (breaks the batch)"
		}
		p.para("  - ", "    ", kind+": "+a.Detail+ids(a.Evidence))
	}
}

// stretches says, per verdict, where the delivery stopped, in the words of
// the seed case's hypotheses.
var stretches = map[model.Hypothesis]string{
	model.NotProduced:    "not produced: the producer has not finished the batch",
	model.NotFinal:       "produced but not complete: the job finished, but the data file never became final",
	model.NotTransferred: "complete but not transferred: the final data file never reached the receiver",
	model.NotIdentified:  "transferred but not identified: the data file is at the receiver, but the receiver has not recognised the batch by business_date + batch_id",
	model.NotConsumed:    "identified but not consumed: the receiver recognised the batch, but no consumption of it is recorded",
}

// missingWhat says what the absence of each boundary means on the ground.
var missingWhat = map[string]string{
	model.Produced.String():        "the producer job has not reported SUCCESS",
	model.Finalized.String():       "no final data file is recorded (final name in place, temporary file gone)",
	model.Signaled.String():        "the completion signal was never published at the source",
	model.Transferred.String():     "the data file is not recorded at the receiver",
	model.SignalDelivered.String(): "the completion signal does not exist on the receiving side, so the consumer's trigger condition is not met",
	model.Identified.String():      "the receiver has not matched data and signal by business_date + batch_id",
	model.Consumed.String():        "the consumer has not consumed the batch",
}

// located writes the one paragraph that names the break: where the delivery
// stopped, the first missing boundary, what excluded the other hypotheses,
// and what evidence lies beyond the break.
func (p *printer) located(d *replay.Diagnosis) {
	p.section("LOCATED BREAK")
	var s []string
	if d.Delivered() {
		s = append(s, "None on the data path: every hypothesis is excluded, the batch was delivered.")
		if d.FirstMissing != "" {
			s = append(s, "Yet the required boundary "+d.FirstMissing+" has no evidence: "+missingWhat[d.FirstMissing]+".")
		}
	} else {
		s = append(s, "The delivery stopped at "+d.Verdict.String()+" ("+stretches[d.Verdict]+").")
		if d.FirstMissing != "" {
			s = append(s, "The first missing boundary is "+d.FirstMissing+": "+missingWhat[d.FirstMissing]+".")
		}
	}
	if isSignal(d.FirstMissing) && d.NextStep.Signal != "" {
		// The seed case's decisive comparison: the name the identity
		// derives against what exists.
		s = append(s, "The signal expected from business_date + batch_id is "+d.NextStep.Signal+"; no such signal is recorded "+where(d.FirstMissing)+".")
	}
	if broken := breaking(d); len(broken) > 0 {
		s = append(s, "The evidence also contradicts itself ("+strings.Join(broken, ", ")+"): the batch is broken until that is explained.")
	}
	var excluded, skipped, open []string
	var support string
	for _, h := range d.Hypotheses {
		switch {
		case h.Support == replay.Excluded && len(h.Evidence) == 0:
			skipped = append(skipped, h.Name.String())
		case h.Support == replay.Excluded:
			excluded = append(excluded, h.Name.String())
		case h.Support == replay.Supported:
			support = h.Reason + ids(h.Evidence)
		default:
			open = append(open, h.Name.String())
		}
	}
	if len(excluded) > 0 {
		s = append(s, "Excluded by evidence: "+strings.Join(excluded, ", ")+" (the chain is proven up to "+lastDataProof(d)+").")
	}
	if len(skipped) > 0 {
		s = append(s, "Not considered, the contract drops their boundaries: "+strings.Join(skipped, ", ")+".")
	}
	if support != "" {
		s = append(s, "For "+d.Verdict.String()+": "+support+".")
	}
	if len(open) > 0 {
		s = append(s, "Downstream, "+strings.Join(open, ", ")+" can be neither excluded nor supported until the break is closed.")
	}
	var ooo []string
	for _, bs := range d.Boundaries {
		if bs.OutOfOrder {
			ooo = append(ooo, bs.Name)
		}
	}
	if len(ooo) > 0 {
		s = append(s, "Evidence beyond the break is out of order: "+strings.Join(ooo, ", ")+" proven although "+d.FirstMissing+" is not.")
	}
	p.para("  ", "  ", strings.Join(s, " "))
}

// isSignal reports whether the named boundary is a declaration (signaled,
// signal_delivered) rather than data evidence.
func isSignal(name string) bool {
	return name == model.Signaled.String() || name == model.SignalDelivered.String()
}

func where(name string) string {
	if name == model.Signaled.String() {
		return "at the source"
	}
	return "on the receiving side"
}

// breaking lists the kinds of the anomalies that make the batch broken, once
// each, in the diagnosis' order.
func breaking(d *replay.Diagnosis) []string {
	var out []string
	for _, a := range d.Anomalies {
		if a.Kind.Breaks() && !slices.Contains(out, string(a.Kind)) {
			out = append(out, string(a.Kind))
		}
	}
	return out
}

// lastDataProof names the highest proven boundary on the data path, the
// point up to which the delivery is known to have moved.
func lastDataProof(d *replay.Diagnosis) string {
	last := "nothing"
	for _, bs := range d.Boundaries {
		b, err := model.ParseBoundary(bs.Name)
		if err == nil && bs.Proven && b.OnDataPath() {
			last = bs.Name
		}
	}
	return last
}

// caveats lists what a reader must not conclude from the report.
func (p *printer) caveats(d *replay.Diagnosis) {
	p.section("CAVEATS")
	var cs []string
	if noConsumeAttempt(d) {
		cs = append(cs, "No attempt recorded is not a consumer failure: the consumer shows no execution attempt and no failure record for this batch. That is an absence of evidence, not proof that the consumer is fine, and not proof that it failed.")
	}
	if hasHeartbeat(d) {
		cs = append(cs, "A heartbeat is not proof a batch was handled: it shows a process is alive, not that it saw, identified or consumed this batch.")
	}
	if d.Contract == "default" {
		cs = append(cs, "No contract file for pipeline "+d.Pipeline+": the default contract applies. Skipped checks: identity_mismatch (it needs name templates for the data file and the signal) and continuity_gap (it needs a schedule to know the previous batch). Every missing boundary is due 24 hours after the latest boundary event.")
	}
	var dropped []string
	for _, bs := range d.Boundaries {
		if !bs.Required {
			dropped = append(dropped, bs.Name)
		}
	}
	if len(dropped) > 0 {
		cs = append(cs, "The contract does not require "+strings.Join(dropped, ", ")+": their absence is not a break and their hypotheses are not considered.")
	}
	if d.Delivered() && d.FirstMissing != "" {
		cs = append(cs, "Delivered means the data reached consumption, not that every boundary was proven: "+d.FirstMissing+" has no evidence.")
	}
	if len(cs) == 0 {
		p.line("  none")
		return
	}
	for _, c := range cs {
		p.para("  - ", "    ", c)
	}
}

// noConsumeAttempt reports whether the consumer shows no attempt at all for
// the batch: consumption is required and unproven, and the timeline has no
// consume.started or consume.failed. It is the same rule by which
// replay.Narrate states that absence on the consumer side.
func noConsumeAttempt(d *replay.Diagnosis) bool {
	if proven(d, model.Consumed) {
		return false
	}
	if i := int(model.Consumed) - 1; i >= len(d.Boundaries) || !d.Boundaries[i].Required {
		return false
	}
	for _, e := range d.Timeline {
		if e.Type == model.ConsumeStarted || e.Type == model.ConsumeFailed {
			return false
		}
	}
	return true
}

// hasHeartbeat reports whether the diagnosis shows a process heartbeat.
func hasHeartbeat(d *replay.Diagnosis) bool { return len(d.Alive) > 0 }

var checkMarks = map[replay.CheckState]string{
	replay.CheckPass:    "[pass]",
	replay.CheckFail:    "[FAIL]",
	replay.CheckUnknown: "[ ? ] ",
}

func (p *printer) nextStep(d *replay.Diagnosis) {
	p.section("NEXT STEP")
	ns := d.NextStep
	action := ns.Action
	if action == "" {
		action = replay.ActionNone
	}
	p.para("  ", "  ", string(action)+": "+ns.Summary)
	if len(ns.Checks) > 0 {
		p.line("  Before acting, every check must pass:")
		for _, c := range ns.Checks {
			mark, ok := checkMarks[c.State]
			if !ok {
				mark = "[" + string(c.State) + "]"
			}
			p.para("    "+mark+" ", "           ", c.Name+": "+c.Detail+ids(c.Evidence))
		}
	}
	if ns.Signal != "" {
		p.para("  ", "    ", "Signal name derived from the batch identity: "+ns.Signal)
	} else if action == replay.ActionRestoreSignal {
		p.para("  ", "    ", "Signal name: not derived (the contract has no signal template).")
	}
}

// summary writes one line per batch: key, status, verdict, first missing.
func (p *printer) summary(ds []replay.Diagnosis) {
	p.line("SUMMARY  (" + plural(len(ds), "batch") + ")")
	if len(ds) == 0 {
		return
	}
	batchW, statusW, verdictW := len("batch"), len("status"), len("verdict")
	for _, d := range ds {
		batchW = max(batchW, len(d.Batch))
		statusW = max(statusW, len(d.Status))
		verdictW = max(verdictW, len(d.Verdict.String()))
	}
	row := func(a, b, c, e string) {
		p.line(strings.TrimRight("  "+pad(a, batchW)+"  "+pad(b, statusW)+"  "+pad(c, verdictW)+"  "+e, " "))
	}
	row("batch", "status", "verdict", "first_missing")
	for _, d := range ds {
		fm := d.FirstMissing
		if fm == "" {
			fm = "-"
		}
		row(d.Batch, string(d.Status), d.Verdict.String(), fm)
	}
}

func findSide(sides []replay.Side, sys string) *replay.Side {
	for i := range sides {
		if sides[i].System == sys {
			return &sides[i]
		}
	}
	return nil
}

func knownSide(sys string) bool {
	for _, s := range sideOrder {
		if s == sys {
			return true
		}
	}
	return false
}

func boundary(d *replay.Diagnosis, name string) (replay.BoundaryState, bool) {
	if name == "" {
		return replay.BoundaryState{}, false
	}
	for _, bs := range d.Boundaries {
		if bs.Name == name {
			return bs, true
		}
	}
	return replay.BoundaryState{}, false
}

func proven(d *replay.Diagnosis, b model.Boundary) bool {
	bs, ok := boundary(d, b.String())
	return ok && bs.Proven
}

// ids formats evidence ids as a bracketed suffix, or nothing.
func ids(ev []string) string {
	if len(ev) == 0 {
		return ""
	}
	return " [" + strings.Join(ev, ", ") + "]"
}

func plural(n int, word string) string {
	s := strconv.Itoa(n) + " " + word
	if n != 1 {
		if strings.HasSuffix(word, "ch") {
			return s + "es"
		}
		return s + "s"
	}
	return s
}

func fmtTime(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format(model.TimeLayout)
}

// pad right-pads s with spaces to n columns (counting runes, not bytes).
func pad(s string, n int) string {
	if c := utf8.RuneCountInString(s); c < n {
		return s + strings.Repeat(" ", n-c)
	}
	return s
}

// wrap breaks text into lines of at most width columns at spaces. The first
// line begins with first, the others with rest. A word longer than a line
// stays whole: breaking an event id or a file name would make it
// unsearchable.
func wrap(first, rest, text string, width int) []string {
	var lines []string
	cur := first
	curW := utf8.RuneCountInString(first)
	empty := true
	for _, word := range strings.Fields(text) {
		ww := utf8.RuneCountInString(word)
		if !empty && curW+1+ww > width {
			lines = append(lines, cur)
			cur, curW, empty = rest, utf8.RuneCountInString(rest), true
		}
		if !empty {
			cur += " "
			curW++
		}
		cur += word
		curW += ww
		empty = false
	}
	return append(lines, cur)
}
