package replay

import (
	"slices"
	"strconv"
	"strings"

	"github.com/handoff-dev/handoff/model"
)

// anomalies fills d.Anomalies, in a fixed order of kinds so that the
// diagnosis is deterministic.
func (v *view) anomalies(d *Diagnosis, first model.Boundary, cont Previous) {
	if d.Anomalies == nil {
		d.Anomalies = []Anomaly{}
	}
	add := func(k AnomalyKind, detail string, ev []string) {
		if ev == nil {
			ev = []string{}
		}
		d.Anomalies = append(d.Anomalies, Anomaly{Kind: k, Detail: detail, Evidence: ev})
	}
	v.identity(add)
	v.rowChecks(add)
	v.checksums(add)
	v.signalBeforeFinal(add)
	if cs := v.of(model.ConsumeSucceeded); len(cs) > 1 {
		add(DuplicateConsumption, strconv.Itoa(len(cs))+" distinct consume.succeeded events for one batch: downstream may hold the data more than once", v.ids(cs))
	}
	if v.orphan() && v.settled(v.of(model.ConsumeSucceeded)[0].ms) {
		add(OrphanConsumption, "consumption recorded with no producer or exchange evidence at all for this batch",
			v.ids(v.of(model.ConsumeStarted), v.of(model.ConsumeSucceeded), v.of(model.ConsumeFailed)))
	}
	if cont.Checked && !cont.Delivered {
		if cont.Seen {
			add(ContinuityGap, "previous batch "+cont.Key.String()+" is not delivered (verdict "+cont.Verdict.String()+")", nil)
		} else {
			add(ContinuityGap, "previous batch "+cont.Key.String()+" has no events at all", nil)
		}
	}
	if len(v.proven[model.Produced]) > 0 && len(v.proven[model.Finalized]) == 0 &&
		v.c.Requires(model.Finalized) && d.Boundaries[model.Finalized-1].Overdue &&
		v.settled(d.Boundaries[model.Finalized-1].Due.UnixMilli()+1) {
		detail := v.sc.join("the job reported SUCCESS but no final artifact was recorded by its deadline ", v.sc.time(d.Boundaries[model.Finalized-1].Due))
		if st := v.of(model.ArtifactStaged); len(st) > 0 {
			detail = v.sc.join(detail, "; only the temporary file ", strconv.Quote(v.object(st[len(st)-1])), " was staged")
		}
		add(SuccessWithoutArtifact, detail, v.ids(v.proven[model.Produced], v.of(model.ArtifactStaged)))
	}
	for i, bs := range d.Boundaries {
		b := model.Boundary(i + 1)
		if !bs.Overdue {
			continue
		}
		if bs.Proven {
			add(Late, v.sc.join(b.String(), " proven at ", v.sc.time(bs.At), ", ", v.sc.duration(bs.At.Sub(bs.Due)), " after its deadline ", v.sc.time(bs.Due)), bs.Evidence)
		} else if b == first {
			add(Late, v.sc.join(b.String(), " missing ", v.sc.duration(v.asOf.Sub(bs.Due)), " after its deadline ", v.sc.time(bs.Due), deadlineText(v, b, v.dueBy[b])), nil)
		}
	}
}

func deadlineText(v *view, b, by model.Boundary) string {
	if by != b && by.Valid() {
		if t := v.c.Deadlines[by].Text; t != "" {
			return v.sc.join(" (", by.String(), " is due ", t, ", so ", b.String(), " is too)")
		}
	}
	if t := v.c.Deadlines[b].Text; t != "" {
		return v.sc.join(" (", t, ")")
	}
	return " (default: 24h after the latest boundary event)"
}

type addFunc func(k AnomalyKind, detail string, ev []string)

// hasBase reports whether name is the last element of s, a slash-separated
// object path: the name is what derives from identity, the directory is
// where it lives. It does not look for the last slash of s: a name nearly
// always matches, and then s ends in it.
func hasBase(s, name string) bool {
	return strings.IndexByte(name, '/') < 0 && endsIn(s, name)
}

// endsIn is hasBase for a name known to hold no slash.
func endsIn(s, name string) bool {
	if len(s) < len(name) || s[len(s)-len(name):] != name {
		return false
	}
	return len(s) == len(name) || s[len(s)-len(name)-1] == '/'
}

// identity reports names and dates that do not derive from the batch's
// identity under its contract.
func (v *view) identity(add addFunc) {
	if want, ok := v.wantBatchID, v.hasBatchID; ok && want != v.key.BatchID && v.rerun == 0 {
		add(IdentityMismatch, "batch_id "+strconv.Quote(v.key.BatchID)+" does not derive from business_date "+v.key.BusinessDate.String()+" (want "+strconv.Quote(want)+")", v.ids(v.recs))
	}
	// alt, when not "", is a second accepted name: a declared re-run may
	// name its files after its own id as well as after its date's.
	check := func(what string, want string, ok bool, alt string, signal bool) {
		if !ok {
			return
		}
		// Most batches name everything right: look at the events of the
		// checked kinds first, and walk the timeline only for a wrong name.
		// A name with a slash is no base name: nothing ends in it (see
		// hasBase), asked once rather than for every event.
		wantOK := strings.IndexByte(want, '/') < 0
		altOK := alt != "" && strings.IndexByte(alt, '/') < 0
		wrong := false
		for _, ti := range checkedTypes[boolIndex(signal)] {
			for _, r := range v.byType[ti] {
				if r.strs[sObject] != 0 && !(wantOK && endsIn(v.object(r), want)) && !(altOK && endsIn(v.object(r), alt)) {
					wrong = true
				}
			}
		}
		if !wrong {
			return
		}
		// Group by the wrong name so one mistake reads as one anomaly.
		var order []string
		var bad map[string][]string
		for _, r := range v.recs {
			// Only the kinds checked, and only a named object: most events
			// have none, and a name nearly always derives, so the loop
			// rarely gets past this test.
			if !checkedName[r.ti][boolIndex(signal)] || r.strs[sObject] == 0 {
				continue
			}
			if obj := v.object(r); hasBase(obj, want) || (alt != "" && hasBase(obj, alt)) {
				continue
			}
			if bad == nil {
				bad = map[string][]string{}
			}
			if _, seen := bad[v.object(r)]; !seen {
				order = append(order, v.object(r))
			}
			bad[v.object(r)] = append(bad[v.object(r)], v.id(r))
		}
		for _, obj := range order {
			wants := strconv.Quote(want)
			if alt != "" {
				wants += " or " + strconv.Quote(alt)
			}
			add(IdentityMismatch, what+" "+strconv.Quote(obj)+" does not derive from "+v.key.BusinessDate.String()+"/"+v.key.BatchID+" (want "+wants+")", bad[obj])
		}
	}
	an, aok := v.wantArtifact, v.hasArtifact
	// A staged file carries a temporary name by design (.tmp, .part,
	// _COPYING_), so only final and transferred names must derive.
	altA, altS := "", ""
	if v.hasAltArtifact && v.altArtifact != an {
		altA = v.altArtifact
	}
	if v.hasAltS && v.altSignal != v.wantSignal {
		altS = v.altSignal
	}
	check("artifact", an, aok, altA, false)
	sn, sok := v.wantSignal, v.hasSignal
	check("signal", sn, sok, altS, true)
}

// checkedName says, by event type index, whether identity checks the
// object's name as an artifact's (0) or a signal's (1). A staged file
// carries a temporary name by design, so only final and transferred
// artifact names are checked.
var checkedName = func() (t [len(model.EventTypes)][2]bool) {
	for i, et := range model.EventTypes {
		t[i] = [2]bool{typeInfos[i].artifact && et != model.ArtifactStaged, typeInfos[i].signal}
	}
	return t
}()

// checkedTypes lists the type indexes checkedName marks, by the same
// index.
var checkedTypes = func() (t [2][]int) {
	for i := range model.EventTypes {
		for k := range t {
			if checkedName[i][k] {
				t[k] = append(t[k], i)
			}
		}
	}
	return t
}()

func boolIndex(b bool) int {
	if b {
		return 1
	}
	return 0
}

// rowChecks compares the finalized, declared and consumed row counts, and
// the contract's minimum.
func (v *view) rowChecks(add addFunc) {
	type count struct {
		what string
		r    *record
	}
	var countBuf [16]count
	counts := countBuf[:0]
	collect := func(what string, t model.EventType) {
		for _, r := range v.of(t) {
			if r.hasRows() {
				counts = append(counts, count{what, r})
			}
		}
	}
	collect("finalized", model.ArtifactFinalized)
	collect("declared by "+string(model.SignalPublished), model.SignalPublished)
	collect("transferred", model.ArtifactTransferred)
	collect("declared by "+string(model.SignalTransferred), model.SignalTransferred)
	collect("declared by "+string(model.SignalRestored), model.SignalRestored)
	collect("identified", model.BatchIdentified)
	collect("consumed", model.ConsumeSucceeded)
	if rr := v.c.Rows; rr.HasMin {
		for _, r := range v.of(model.ArtifactFinalized) {
			if r.hasRows() && r.rows < rr.Min {
				add(RowMismatch, "finalized "+strconv.FormatInt(r.rows, 10)+" rows, below the contract minimum of "+strconv.FormatInt(rr.Min, 10), []string{v.id(r)})
			}
		}
	}
	if !v.c.Rows.Equal || len(counts) < 2 {
		return
	}
	ref := counts[0]
	var diff []string
	var ev []string
	for _, c := range counts[1:] {
		if c.r.rows != ref.r.rows {
			if ev == nil {
				ev = append(ev, v.id(ref.r))
			}
			diff = append(diff, c.what+" "+strconv.FormatInt(c.r.rows, 10))
			ev = append(ev, v.id(c.r))
		}
	}
	if len(diff) > 0 {
		add(RowMismatch, ref.what+" "+strconv.FormatInt(ref.r.rows, 10)+" rows, but "+strings.Join(diff, ", "), ev)
	}
}

// checksums compares the checksum and size of the final artifact with what
// arrived at the receiver.
func (v *view) checksums(add addFunc) {
	fin := v.of(model.ArtifactFinalized)
	tr := v.of(model.ArtifactTransferred)
	var allBuf [16]*record
	all := append(append(allBuf[:0], fin...), tr...)
	var ref *record
	var diff []string
	var ev []string
	for _, r := range all {
		if v.checksum(r) == "" {
			continue
		}
		if ref == nil {
			ref = r
			continue
		}
		if v.checksum(r) != v.checksum(ref) {
			diff = append(diff, string(r.typ())+" checksum "+v.checksum(r))
			ev = append(ev, v.id(r))
		}
	}
	var bref *record
	for _, r := range all {
		if !r.hasBytes() {
			continue
		}
		if bref == nil {
			bref = r
			continue
		}
		if r.bytes != bref.bytes {
			diff = append(diff, string(r.typ())+" "+strconv.FormatInt(r.bytes, 10)+" bytes")
			ev = append(ev, v.id(r))
		}
	}
	if len(diff) == 0 {
		return
	}
	var first []string
	if ref != nil {
		first = append(first, string(ref.typ())+" checksum "+v.checksum(ref))
		ev = append(ev, v.id(ref))
	}
	if bref != nil {
		first = append(first, string(bref.typ())+" "+strconv.FormatInt(bref.bytes, 10)+" bytes")
		ev = append(ev, v.id(bref))
	}
	// Evidence in time order, each event once: one event can carry both a
	// changed checksum and a changed size.
	var out []string
	for _, r := range v.recs {
		if slices.Contains(ev, v.id(r)) {
			out = append(out, v.id(r))
		}
	}
	add(ChecksumMismatch, "the artifact changed across the transfer: first "+strings.Join(first, ", ")+"; then "+strings.Join(diff, ", "), out)
}

// signalBeforeFinal reports a completion declared before the artifact was
// final, or with no final artifact at all.
func (v *view) signalBeforeFinal(add addFunc) {
	fin := v.proven[model.Finalized]
	for _, t := range []model.EventType{model.SignalPublished, model.SignalRestored} {
		for _, r := range v.of(t) {
			if !v.settled(r.ms) {
				continue
			}
			switch {
			case len(fin) == 0:
				add(SignalBeforeFinal, v.sc.join(string(t), " ", strconv.Quote(v.object(r)), " at ", v.sc.time(r.at()), " but no final artifact is recorded: completion declared for data that is not final"), []string{v.id(r)})
			case r.ms < fin[0].ms:
				add(SignalBeforeFinal, v.sc.join(string(t), " ", strconv.Quote(v.object(r)), " at ", v.sc.time(r.at()), ", ", v.sc.duration(fin[0].at().Sub(r.at())), " before the artifact was final at ", v.sc.time(fin[0].at())), []string{v.id(r), v.id(fin[0])})
			}
		}
	}
}

// orphan reports consumption with no upstream evidence at all.
func (v *view) orphan() bool {
	if len(v.of(model.ConsumeSucceeded)) == 0 {
		return false
	}
	for _, r := range v.recs {
		if t := &typeInfos[r.ti]; t.artifact || t.signal || t.isJob {
			return false
		}
	}
	return true
}

// settled reports whether an anomaly raised by evidence at ms (an event's
// time, or the deadline it missed) still holding as of the evaluation is
// to be reported: the allowed lateness has passed since, so an event that
// would undo it (an earlier final artifact, upstream evidence, a file
// finalized in time) had that long to arrive. When it has not, the
// anomaly is withheld and the time it would be confirmed is kept in
// v.pending.
func (v *view) settled(ms int64) bool {
	at := ms + v.lateness
	if at <= v.asOf.UnixMilli() {
		return true
	}
	if v.pending == 0 || at < v.pending {
		v.pending = at
	}
	return false
}
